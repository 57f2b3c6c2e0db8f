"""A provider's webhooks as `status`, the page and /metrics say them: registered where, and
whether the events arrive (``staging/webhooks.py``, noted by the daemon)."""

from __future__ import annotations

from typing import Any

from memsync.orchestration.status.times import short_duration, short_time
from memsync.staging.webhooks import Registration


def webhook_entry(registration: Registration, *, daemon_running: bool) -> dict[str, Any]:
    """The report's ``providers.NAME.webhooks``: the registration, its health and its line."""
    entry = registration._asdict()
    del entry["provider"]
    entry["state"] = registration.state or "waiting"
    entry["received"] = sum(registration.events.values())
    entry["line"] = webhook_line(registration, daemon_running=daemon_running)
    return entry


def webhook_line(registration: Registration, *, daemon_running: bool) -> str:
    """One sentence: e.g. ``webhooks arriving (last event 09:12:04Z, 312 received, 0 missed);
    probe every 60s``."""
    name = registration.provider
    probe = (
        f"; probe every {short_duration(registration.probe_every)}"
        if registration.probe_every
        else ""
    )
    received = sum(registration.events.values())
    if not daemon_running:
        return (
            f"{name}: webhook {registration.subscription_id} registered on "
            f"{registration.place or 'the store'} -> {registration.url}; the daemon is not "
            "running, so no event is received"
        )
    state = registration.state or "waiting"
    if state == "waiting" or registration.last_event_at is None:
        return (
            f"{name}: webhook {registration.subscription_id} registered "
            f"{short_time(registration.registered_at)}, no event yet{probe}"
        )
    counts = (
        f"last event {short_time(registration.last_event_at)}, {received} received, "
        f"{registration.missed} missed"
    )
    if state == "silent":
        return (
            f"{name}: webhooks SILENT ({counts}): changes arrived without an event; is "
            f"{registration.url} reachable?{probe}"
        )
    return f"{name}: webhooks arriving ({counts}){probe}"


__all__ = ["webhook_entry", "webhook_line"]
