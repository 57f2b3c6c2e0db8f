"""How long a provider has gone unsynced, and how loudly memsync says so.

Some programs hold their store's one handle for as long as they run (``mnem-mcp``,
``mnem-langgraph``; a Mem0 app on a local Qdrant path): to memsync such a store is busy,
cycle after cycle, and a busy cycle is normal for a minute but not for days. Every cycle's
provider summary carries, from the one before:

- ``synced_at``: when the provider last took part in a cycle (ok or partial);
- ``unsynced_since``: since when it has not (its last sync, or its first failed cycle);
- ``busy_since``: since when its store has been busy, cycle after cycle;
- ``warned``: the loudest level logged so far, and when.

How long it has gone unsynced is a level: ``behind`` (under an hour: a store held for a
while), ``warning`` (an hour or more), ``alarm`` (a day or more). ``status`` and the status
page show it (``lag``); the cycle logs one WARNING when a provider reaches ``warning``, an
ERROR when it reaches ``alarm`` and again every day it stays there, and one INFO line when it
syncs again. Nothing stays unsynced silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from memsync.base.records import parse_instant

log = logging.getLogger(__name__)

WARN_AFTER = 3600.0  # seconds unsynced before a WARNING
ALARM_AFTER = 86400.0  # ...before an ERROR, repeated every REPEAT_ALARM while it lasts
REPEAT_ALARM = 86400.0
SYNCED = frozenset({"ok", "partial"})  # the states in which a provider is planned and written
HOW_TO = "see docs/daemon.md, 'A store another program holds'"

Level = Literal["behind", "warning", "alarm"]


def clock() -> datetime:
    """Now (one place, so a test can let days pass)."""
    return datetime.now(UTC)


_LOUDNESS: dict[str, int] = {"behind": 0, "warning": 1, "alarm": 2}


@dataclass(frozen=True)
class Lag:
    """How far behind a provider is, as of ``now``."""

    level: Level
    since: str  # ISO instant: its last sync, or its first cycle that failed
    seconds: float
    busy_since: str | None  # its store busy, cycle after cycle, since then

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "since": self.since,
            "seconds": round(self.seconds),
            "for": duration(self.seconds),
            "busy_since": self.busy_since,
        }


def lag_of(cycle: dict[str, Any] | None, now: datetime | None = None) -> Lag | None:
    """How far behind a provider whose last cycle is CYCLE is; None when it synced."""
    if not cycle or cycle.get("state") in SYNCED or not cycle.get("unsynced_since"):
        return None
    since = parse_instant(cycle["unsynced_since"])
    if since is None:
        return None
    seconds = max(0.0, ((now or clock()) - since).total_seconds())
    level: Level = "behind"
    if seconds >= ALARM_AFTER:
        level = "alarm"
    elif seconds >= WARN_AFTER:
        level = "warning"
    return Lag(level, cycle["unsynced_since"], seconds, cycle.get("busy_since"))


def carry(
    name: str,
    previous: dict[str, Any] | None,
    summary: dict[str, Any],
    now: datetime | None = None,
) -> dict[str, Any]:
    """SUMMARY (a provider's cycle, about to be saved) with the clock carried over from
    PREVIOUS, and the line this cycle deserves logged."""
    now = now or clock()
    at = summary.get("finished_at") or now.isoformat()
    before = previous or {}
    if summary.get("state") in SYNCED:
        summary["synced_at"] = at
        if _loudness(before.get("warned")) >= _LOUDNESS["warning"]:
            gone = lag_of(before, now)
            log.info("%s: synced again%s", name, f" after {gone.as_dict()['for']}" if gone else "")
        return summary
    summary["synced_at"] = before.get("synced_at")
    summary["unsynced_since"] = (
        (before.get("unsynced_since") if before.get("state") not in SYNCED else None)
        or before.get("synced_at")
        or at
    )
    if summary.get("state") == "busy":
        summary["busy_since"] = (before.get("state") == "busy" and before.get("busy_since")) or at
    lag = lag_of(summary, now)
    warned = before.get("warned") if before.get("state") not in SYNCED else None
    summary["warned"] = warned
    if lag is None or lag.level == "behind":
        return summary
    last = parse_instant((warned or {}).get("at"))
    again = last is None or (now - last).total_seconds() >= REPEAT_ALARM
    if _LOUDNESS[lag.level] > _loudness(warned) or (lag.level == "alarm" and again):
        log.log(
            logging.ERROR if lag.level == "alarm" else logging.WARNING,
            "%s",
            describe(name, summary, lag),
        )
        summary["warned"] = {"level": lag.level, "at": now.isoformat()}
    return summary


def describe(name: str, cycle: dict[str, Any], lag: Lag) -> str:
    """The line status and the log print for a provider this far behind."""
    what = lag.as_dict()
    if cycle.get("state") == "busy":
        why = f"its store has been busy since {_short(lag.busy_since)}"
        reason = cycle.get("error") or "held by another process"
    else:
        why = f"its last cycle: {cycle.get('state')}"
        reason = cycle.get("refused") or cycle.get("error") or ""
    synced = cycle.get("synced_at")
    last = f"last synced {_short(synced)}" if synced else "never synced"
    text = f"{name}: NOT SYNCED for {what['for']} ({last}); {why}"
    if reason:
        text += f": {reason}"
    return f"{text}; {HOW_TO}" if cycle.get("state") == "busy" else text


def duration(seconds: float) -> str:
    """'40 s', '12 min', '3 h 5 min', '2 days 4 h'."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    unit = "day" if days == 1 else "days"
    return f"{days} {unit} {hours} h" if hours else f"{days} {unit}"


def _loudness(warned: Any) -> int:
    level = warned.get("level") if isinstance(warned, dict) else None
    return _LOUDNESS.get(str(level), -1)


def _short(instant: str | None) -> str:
    moment = parse_instant(instant)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ") if moment else "?"
