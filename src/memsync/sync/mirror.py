"""Mirror: read one provider page by page into the staging store and journal what changed.

Each page is fetched with no transaction open, then staged in one short transaction. A record
changed only when its fingerprint *and* its version token changed (a flaky token alone is no
edit). Removals are inferred only from a complete full listing (or named by an incremental
one) and only past the safety gates: a provider that had memories and now lists none, or that
would lose more than ``max_delete``, is refused, not emptied.

Hidden is not deleted: when a listing may hide expired memories (``hides_expired``: a server
that cannot be asked to show them), a missing one is read by id before any delete is inferred;
when memsync itself takes expired memories out of a store without expiry
(``tombstones_expired``: mnem), a missing one whose staged date has passed is kept.

A record read ``detached`` (an agent rewrote it through a store's own API and the fields memsync
keeps beside the text there are gone, see ``Record.detached``) whose staged version still had
them is the agent's text change only: metadata, dates, origin and non-native provenance are
carried over from the staged row. It stays staged under that older version token until the
queued write back into its store (an update, replayed in this run) lands, so a dry run, a crash
or a second rewrite in between loses nothing: the next listing that returns it carries over
again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from memsync.faults import fault_point
from memsync.providers.base import Listing, Provider
from memsync.records import Record, Skipped, is_expired, utc_now_iso
from memsync.staging.store import StagingStore, dumps, record_row

_CHUNK = 500  # sqlite's bound-parameter limit is 999 on old builds: stay well under


@dataclass
class DeleteLimits:
    percent: float
    count: int
    force: bool = False

    def exceeded(self, deletes: int, total: int) -> bool:
        """Over the count, or (from two deletes up) over the share of the provider's records."""
        if self.force or deletes == 0:
            return False
        if deletes > self.count:
            return True
        return deletes >= 2 and deletes > total * self.percent / 100.0


@dataclass
class MirrorResult:
    provider: str
    mode: str = "full"
    added: int = 0
    changed: int = 0
    removed: int = 0
    listed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    complete: bool = False
    partial_reason: str | None = None
    refused: str | None = None
    reset: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "listed": self.listed,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "skipped": [s.as_dict() for s in self.skipped],
            "complete": self.complete,
            "partial_reason": self.partial_reason,
            "refused": self.refused,
            "reset": self.reset,
        }


def journal_row(
    run_id: int, provider: str, link_id: str, kind: str, record: Record | None, provider_id: str
) -> tuple[Any, ...]:
    """A row of the change journal; a removal carries no content."""
    if record is None:
        return (run_id, utc_now_iso(), provider, provider_id, link_id, kind) + (None,) * 11
    return (
        run_id,
        utc_now_iso(),
        provider,
        provider_id,
        link_id,
        kind,
        record.content,
        dumps(record.metadata),
        record.scope_key,
        record.created_at,
        record.updated_at,
        record.version,
        dumps(record.provenance),
        record.fingerprint,
        record.content_hash,
        record.origin,
        record.expiration_date,
    )


INSERT_JOURNAL = (
    "INSERT INTO changes (run_id, at, provider, provider_id, link_id, kind, content, metadata, "
    "scope_key, created_at, updated_at, version, provenance, fingerprint, content_hash, origin, "
    "expiration_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def check_identity(store: StagingStore, provider: Provider) -> bool:
    """Register the provider; if its identity moved, reset its mirror. True when reset."""
    identity = provider.identity()
    row = store.conn.execute(
        "SELECT identity FROM providers WHERE name = ?", (provider.name,)
    ).fetchone()
    if row is not None and row["identity"] == identity:
        return False
    with store.transaction() as conn:
        reset = row is not None
        if reset:
            # A moved store must not look like mass deletion: forget what we knew of it.
            conn.execute("DELETE FROM records WHERE provider = ?", (provider.name,))
            conn.execute("DELETE FROM links WHERE provider = ?", (provider.name,))
            conn.execute("DELETE FROM cursors WHERE provider = ?", (provider.name,))
        conn.execute(
            "INSERT INTO providers (name, type, identity, first_seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET type = excluded.type, identity = excluded.identity",
            (provider.name, provider.type, identity, utc_now_iso()),
        )
    return reset


class Mirror:
    """Stages one provider's listing for one run."""

    def __init__(
        self,
        store: StagingStore,
        provider: Provider,
        run_id: int,
        limits: DeleteLimits,
        stop: threading.Event | None = None,
        write_back: bool = True,
    ) -> None:
        self.stop = stop
        # May a carried-over record be written back into this provider (see _queue_repairs)?
        # Not when memsync only reads it (direction "pull") or in a dry run.
        self.write_back = write_back
        self.store = store
        self.provider = provider
        self.run_id = run_id
        self.limits = limits
        self.result = MirrorResult(provider.name)
        self.conn = store.conn
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS seen (provider_id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM temp.seen")

    def run(self, listing: Listing) -> MirrorResult:
        result = self.result
        result.mode = listing.mode
        before = self.store.count_records(self.provider.name)
        try:
            for page in listing.pages():
                self._stage_page(page.records, page.skipped)
                fault_point("mirror:page")
                if self.stop is not None and self.stop.is_set():
                    listing.mark_partial("stopped by a signal before the listing ended")
                    break
        finally:
            result.complete = listing.complete
            result.partial_reason = listing.partial_reason
            if not listing.complete and result.partial_reason is None:
                result.partial_reason = "the listing did not finish"
        self._confirm_missing(listing)  # point reads: before the removals transaction
        with self.store.transaction():
            self._removals(listing, before)
            if listing.complete:
                self._commit_cursor(listing)
        fault_point("mirror:committed")
        return result

    # pages --------------------------------------------------------------------------------

    def _stage_page(self, records: list[Record], skipped: list[Skipped]) -> None:
        name = self.provider.name
        empty = [r for r in records if r.is_blank]
        if empty:  # never carried, whatever the provider did: memsync writes no empty memory
            skipped = [*skipped, *(Skipped(r.id, "empty content") for r in empty)]
            records = [r for r in records if not r.is_blank]
        with self.store.transaction() as conn:
            fresh = self._first_sightings(conn, records)
            existing = self._existing(conn, [r.id for r in fresh])
            upserts: list[tuple[Any, ...]] = []
            tokens: list[tuple[Any, ...]] = []
            journal: list[tuple[Any, ...]] = []
            repairs: list[str] = []  # links whose record lost memsync's fields in the store
            for record in fresh:
                old = existing.get(record.id)
                if old is None:
                    link_id = self.provider.origin_of(record)
                    upserts.append(record_row(name, link_id, record, self.run_id))
                    journal.append(
                        journal_row(self.run_id, name, link_id, "added", record, record.id)
                    )
                    self.result.added += 1
                    continue
                link_id, fingerprint, version = old
                carried = (
                    record.detached
                    and bool(version)
                    and not self.provider.version_detached(version)
                )
                if carried:
                    # Staged with the version that had memsync's fields until the write back
                    # lands: a later listing (or rewrite) still finds them to carry over.
                    record = self._carry_over(conn, record, version)
                    if self.write_back:
                        repairs.append(link_id)
                elif version is not None and record.version == version:
                    # The provider's own token says unchanged: no need to fingerprint (the
                    # common case of a quiet cycle), and no churn on a fingerprint quirk.
                    continue
                if record.fingerprint == fingerprint:
                    # No edit (a new token, or a spelling variant of the same text): keep the
                    # provider's exact bytes and token, journal nothing, write nowhere.
                    if not carried:
                        tokens.append(
                            (record.version, record.updated_at, record.content, name, record.id)
                        )
                    continue
                upserts.append(record_row(name, link_id, record, self.run_id))
                journal.append(
                    journal_row(self.run_id, name, link_id, "changed", record, record.id)
                )
                self.result.changed += 1
            self.store.upsert_records(upserts)
            if tokens:
                conn.executemany(
                    "UPDATE records SET version = ?, updated_at = ?, content = ? "
                    "WHERE provider = ? AND provider_id = ?",
                    tokens,
                )
            conn.executemany(INSERT_JOURNAL, journal)
            self._queue_repairs(conn, repairs)
            if skipped:
                conn.executemany(
                    "INSERT OR REPLACE INTO skipped VALUES (?, ?, ?, ?, ?)",
                    [(self.run_id, name, s.id, s.reason, utc_now_iso()) for s in skipped],
                )
        self.result.skipped.extend(skipped)
        self.result.listed += len(fresh)

    def _carry_over(self, conn: sqlite3.Connection, record: Record, version: str | None) -> Record:
        """A detached record (see Record.detached) with what its store could not keep taken
        from the version staged for it: the text and the store's own provenance are the
        agent's change; metadata, dates, origin and the rest of the provenance are not."""
        row = conn.execute(
            "SELECT metadata, created_at, expiration_date, origin, provenance FROM records "
            "WHERE provider = ? AND provider_id = ?",
            (self.provider.name, record.id),
        ).fetchone()
        native = self.provider.native_provenance
        kept = {k: v for k, v in json.loads(row[4] or "{}").items() if k not in native}
        return replace(
            record,
            metadata=json.loads(row[0] or "{}"),
            created_at=row[1],
            expiration_date=row[2],
            origin=row[3] or record.origin,
            provenance={**kept, **record.provenance},
            version=version,
            detached=False,
        )

    def _queue_repairs(self, conn: sqlite3.Connection, links: list[str]) -> None:
        """Write carried-over records back into their own store, so it holds memsync's fields
        again (a plain update from the staged record, replayed in this run)."""
        name, now = self.provider.name, utc_now_iso()
        conn.executemany(
            "INSERT INTO outbox (run_id, link_id, provider, kind, provider_id, payload, state, "
            "attempts, created_at, updated_at) "
            "SELECT ?, ?, ?, 'update', provider_id, ?, 'pending', 0, ?, ? FROM records "
            "WHERE provider = ? AND link_id = ?",
            [
                (
                    self.run_id,
                    link,
                    name,
                    json.dumps({"source": name, "source_link": link}),
                    now,
                    now,
                    name,
                    link,
                )
                for link in links
            ],
        )

    def _first_sightings(self, conn: sqlite3.Connection, records: list[Record]) -> list[Record]:
        """Drop records this listing already returned (offset paging can repeat items)."""
        ids = [r.id for r in records]
        repeated: set[str] = set()
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            repeated.update(
                row[0]
                for row in conn.execute(
                    f"SELECT provider_id FROM temp.seen WHERE provider_id IN ({marks})", chunk
                )
            )
        fresh: list[Record] = []
        for record in records:
            if record.id not in repeated:
                repeated.add(record.id)  # also drops repeats within the page
                fresh.append(record)
        conn.executemany("INSERT INTO temp.seen VALUES (?)", [(r.id,) for r in fresh])
        return fresh

    def _existing(
        self, conn: sqlite3.Connection, ids: list[str]
    ) -> dict[str, tuple[str, str, str | None]]:
        found: dict[str, tuple[str, str, str | None]] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                "SELECT provider_id, link_id, fingerprint, version FROM records "
                f"WHERE provider = ? AND provider_id IN ({marks})",
                (self.provider.name, *chunk),
            ):
                found[row[0]] = (row[1], row[2], row[3])
        return found

    # removals -----------------------------------------------------------------------------

    def _missing(self) -> list[Any]:
        """Staged records this full listing did not return."""
        return self.conn.execute(
            "SELECT provider_id, link_id, expiration_date FROM records WHERE provider = ? "
            "AND provider_id NOT IN (SELECT provider_id FROM temp.seen)",
            (self.provider.name,),
        ).fetchall()

    def _confirm_missing(self, listing: Listing) -> None:
        """Read each missing memory by id when the listing may hide expired ones: what is
        found is staged as listed (with its date), so only a memory really gone is removed."""
        if not listing.hides_expired or listing.mode != "full" or not listing.complete:
            return
        found = [
            record for row in self._missing() if (record := self.provider.get(row[0])) is not None
        ]
        if found:
            self._stage_page(found, [])

    def _removals(self, listing: Listing, before: int) -> None:
        name = self.provider.name
        conn = self.conn
        if listing.mode == "incremental":
            if not listing.removed:
                return
            gone = self._rows_for(listing.removed)
        else:
            if not listing.complete:
                return
            gone = self._missing()
        if listing.tombstones_expired:  # out of the store by memsync's own tombstone, not gone
            gone = [row for row in gone if not is_expired(row[2])]
        if listing.mode == "full" and gone and self.result.listed == 0 and not self.limits.force:
            self.result.refused = (
                f"listed no memories but held {before} before; nothing deleted "
                "(if this is right, run `memsync sync --force-delete`)"
            )
            return
        if self.limits.exceeded(len(gone), before):
            self.result.refused = (
                f"would delete {len(gone)} of {before} memories, over max_delete "
                f"({self.limits.percent:g}% / {self.limits.count}); nothing deleted "
                "(if this is right, run `memsync sync --force-delete`)"
            )
            return
        conn.executemany(
            INSERT_JOURNAL,
            [journal_row(self.run_id, name, row[1], "removed", None, row[0]) for row in gone],
        )
        conn.executemany(
            "DELETE FROM records WHERE provider = ? AND provider_id = ?",
            [(name, row[0]) for row in gone],
        )
        self.result.removed += len(gone)

    def _rows_for(self, ids: Iterable[str]) -> list[Any]:
        rows: list[Any] = []
        id_list = list(ids)
        for start in range(0, len(id_list), _CHUNK):
            chunk = id_list[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows.extend(
                self.conn.execute(
                    "SELECT provider_id, link_id, expiration_date FROM records "
                    f"WHERE provider = ? AND provider_id IN ({marks})",
                    (self.provider.name, *chunk),
                ).fetchall()
            )
        return rows

    def _commit_cursor(self, listing: Listing) -> None:
        now = utc_now_iso()
        full_scan_at = now if listing.mode == "full" else None
        self.conn.execute(
            "INSERT INTO cursors (provider, cursor, full_scan_at, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (provider) DO UPDATE SET cursor = excluded.cursor, "
            "full_scan_at = COALESCE(excluded.full_scan_at, cursors.full_scan_at), "
            "updated_at = excluded.updated_at",
            (self.provider.name, listing.cursor, full_scan_at, now),
        )


def load_cursor(store: StagingStore, provider: str) -> tuple[str | None, str | None]:
    row = store.conn.execute(
        "SELECT cursor, full_scan_at FROM cursors WHERE provider = ?", (provider,)
    ).fetchone()
    return (row["cursor"], row["full_scan_at"]) if row else (None, None)


def save_cycle_summary(store: StagingStore, provider: str, summary: dict[str, Any]) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE providers SET last_cycle = ? WHERE name = ?",
            (json.dumps(summary, default=str), provider),
        )
