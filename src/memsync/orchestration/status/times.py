"""How status says a time and a span to a person, and how long a run took."""

from __future__ import annotations

from datetime import UTC, datetime

from memsync.base.records import parse_instant


def short_time(instant: str | None) -> str:
    """A UTC time, short: the time alone today, date and minute before."""
    moment = parse_instant(instant)
    if moment is None:
        return "never"
    moment = moment.astimezone(UTC)
    if moment.date() == datetime.now(UTC).date():
        return moment.strftime("%H:%M:%SZ")
    return moment.strftime("%Y-%m-%d %H:%MZ")


def short_duration(seconds: float | None) -> str:
    """Seconds as a person reads them: 42.0s, or 3.5min past two minutes."""
    if seconds is None:
        return ""
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


def seconds_between(started: str | None, finished: str | None) -> float | None:
    """How long a run took, from its recorded instants; None while one is missing."""
    start, end = parse_instant(started), parse_instant(finished)
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)
