"""Where memsync registered for a store's pushed changes, and how the events are arriving
(``webhooks``): written by `memsync webhook register` and by the daemon, read by `status`,
the status page and /metrics. The URL is kept with its secret masked; the secret itself lives
in a private file of the state directory, never here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import NamedTuple


class Registration(NamedTuple):
    provider: str
    subscription_id: str
    place: str | None  # where it is registered ("project proj_abc")
    url: str  # the public URL, its secret masked
    registered_at: str
    state: str | None  # the daemon's view: waiting, arriving, silent (None: never ran)
    last_event_at: str | None
    events: dict[str, int]  # events received since registered, by kind (add, update, delete)
    missed: int  # changes the probe found that no event announced
    rejected: int  # requests refused (a wrong secret, a body not an event)
    probe_every: float | None  # seconds between the store's probes, as the daemon set them
    noted_at: str | None  # when the daemon last wrote these


_COLUMNS = (
    "provider, subscription_id, place, url, registered_at, state, last_event_at, events, "
    "missed, rejected, probe_every, noted_at"
)


class Webhooks:
    """The ``webhooks`` table (``store.webhooks``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def register(
        self, provider: str, subscription_id: str, place: str | None, url: str, now: str
    ) -> None:
        """PROVIDER's events go to URL (masked) through SUBSCRIPTION_ID, from NOW."""
        self.conn.execute(
            "INSERT INTO webhooks (provider, subscription_id, place, url, registered_at, events) "
            "VALUES (?, ?, ?, ?, ?, '{}') ON CONFLICT (provider) DO UPDATE SET "
            "subscription_id = excluded.subscription_id, place = excluded.place, "
            "url = excluded.url, registered_at = excluded.registered_at",
            (provider, subscription_id, place, url, now),
        )

    def forget(self, provider: str) -> None:
        self.conn.execute("DELETE FROM webhooks WHERE provider = ?", (provider,))

    def of(self, provider: str) -> Registration | None:
        row = self.conn.execute(
            "SELECT provider, subscription_id, place, url, registered_at, state, last_event_at, "
            "events, missed, rejected, probe_every, noted_at FROM webhooks WHERE provider = ?",
            (provider,),
        ).fetchone()
        return None if row is None else _registration(row)

    def all(self) -> list[Registration]:
        rows = self.conn.execute(
            "SELECT provider, subscription_id, place, url, registered_at, state, last_event_at, "
            "events, missed, rejected, probe_every, noted_at FROM webhooks ORDER BY provider"
        )
        return [_registration(row) for row in rows]

    def note(
        self,
        provider: str,
        *,
        state: str,
        last_event_at: str | None,
        events: Mapping[str, int],
        missed: int,
        rejected: int,
        probe_every: float,
        now: str,
    ) -> None:
        """The daemon's view of PROVIDER's events: its state now, and what arrived, was missed
        or refused since it last noted (added to the totals)."""
        row = self.conn.execute(
            "SELECT events FROM webhooks WHERE provider = ?", (provider,)
        ).fetchone()
        if row is None:
            return  # not registered (removed meanwhile)
        totals = json.loads(row[0] or "{}")
        for kind, count in events.items():
            totals[kind] = int(totals.get(kind, 0)) + count
        self.conn.execute(
            "UPDATE webhooks SET state = ?, last_event_at = COALESCE(?, last_event_at), "
            "events = ?, missed = missed + ?, rejected = rejected + ?, probe_every = ?, "
            "noted_at = ? WHERE provider = ?",
            (
                state,
                last_event_at,
                json.dumps(totals, sort_keys=True),
                missed,
                rejected,
                probe_every,
                now,
                provider,
            ),
        )


def _registration(row: sqlite3.Row | tuple[object, ...]) -> Registration:
    values = list(row)
    values[7] = json.loads(str(values[7] or "{}"))
    return Registration(*values)


__all__ = ["Registration", "Webhooks"]
