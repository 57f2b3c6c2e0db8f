"""A provider's last cycle as status shows it: ok, partial, busy, refused or error, and why."""

from __future__ import annotations

from typing import Any

from memsync.engine.unsynced import describe, duration, lag_of
from memsync.orchestration.status.times import short_time


def cycle_state(cycle: dict[str, Any] | None, *, name: str = "") -> dict[str, Any] | None:
    """A provider's last cycle as one of ok, partial, busy, refused or error, with why, and
    how long it has gone unsynced (``unsynced``: level, since, for, and a line to show)."""
    if not cycle:
        return None
    found = _plain_state(cycle)
    lag = lag_of(cycle)
    if lag is not None:
        found["unsynced"] = {**lag.as_dict(), "text": describe(name or "provider", cycle, lag)}
    if found["kind"] == "busy":
        found["since"] = cycle.get("busy_since")
    return found


def _plain_state(cycle: dict[str, Any]) -> dict[str, Any]:
    state = cycle.get("state", "")
    if cycle.get("refused"):
        return {"kind": "refused", "gate": cycle["refused"], "text": cycle_state_text(cycle)}
    if state == "ok" and not cycle.get("partial_reason"):
        return {
            "kind": "ok",
            "complete": bool(cycle.get("complete")),
            "text": cycle_state_text(cycle),
        }
    if state == "partial" or cycle.get("partial_reason"):
        reason = cycle.get("partial_reason") or "listing incomplete"
        return {"kind": "partial", "reason": reason, "text": cycle_state_text(cycle)}
    if state == "busy" or cycle.get("busy"):
        return {"kind": "busy", "reason": cycle.get("error"), "text": cycle_state_text(cycle)}
    return {"kind": state or "error", "reason": cycle.get("error"), "text": cycle_state_text(cycle)}


def cycle_state_text(cycle: dict[str, Any]) -> str:
    """ok, complete | partial: why | deletes refused: why | store busy: why | error: why."""
    if not cycle:
        return ""
    state = cycle.get("state", "")
    if state == "ok":
        return "ok, complete" if cycle.get("complete") else "ok"
    if cycle.get("refused"):
        gate = "rollbacks" if cycle.get("refused_by") == "rollbacks" else "deletes"
        return f"{gate} refused: {cycle['refused']}"
    if state == "partial" or cycle.get("partial_reason"):
        return f"partial: {cycle.get('partial_reason') or 'listing incomplete'}"
    if state == "busy" or cycle.get("busy"):
        lag = lag_of(cycle)
        since = (
            f" since {short_time(cycle['busy_since'])} (not synced for {duration(lag.seconds)})"
            if cycle.get("busy_since") and lag
            else ""
        )
        return f"store busy{since}" + (f": {cycle['error']}" if cycle.get("error") else "")
    return f"{state}: {cycle['error']}" if cycle.get("error") else state
