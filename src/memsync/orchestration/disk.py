"""How much the stores memsync writes take on disk, and how fast they grow.

mnem keeps every commit's state, so a store's layout decides what memsync's commits cost
(docs/configuration.md "What a layout costs on disk"). Each provider type that keeps local
store files says what they take now (``providers.disk_use``, nothing opened). A cycle's end
samples it (``sample_disk``: at most once a minute per provider, kept two days); the growth
rate is the bytes added between the oldest sample of the last day and the newest, per day.
``status``, the page and ``/metrics`` show both (``disk_growth``: the newest sample when it is
fresh, else the files), and ``check`` warns when a provider grows past its ``growth_budget`` a
day at that rate.

A store held open while it is written (by the daemon, for the agents it serves) reads smaller
on disk than after it is let go (redb writes its file out in full on close): figures settle as
stores are let go, and a rate over hours is what to read, not a minute's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memsync.base.records import parse_instant
from memsync.config import Config
from memsync.providers import disk_advice, disk_use
from memsync.providers.disk import DiskUse
from memsync.staging import StagingStore
from memsync.staging.store_sizes import SizeSample

log = logging.getLogger("memsync.disk")

SAMPLE_EVERY = timedelta(minutes=1)
WINDOW = timedelta(days=1)  # the growth rate looks back this far at most
KEEP = timedelta(days=2)
MIN_SPAN = timedelta(minutes=1)  # a rate over less than this is not said
# A look (status, the page's poll, /metrics) takes a sample younger than this as the size now:
# a cycle's end samples it, and walking thousands of stores costs a poll a fifth of a second.
FRESH = timedelta(minutes=5)
DAY = 86_400.0


@dataclass(frozen=True)
class Growth:
    """One provider's stores on disk now, and their growth a day (None: not measured yet)."""

    provider: str
    bytes: int
    stores: int
    per_day: float | None
    over_s: float | None
    budget: int | None
    advice: str

    @property
    def over_budget(self) -> bool:
        return self.per_day is not None and self.budget is not None and self.per_day > self.budget

    def line(self) -> str:
        """``agents: 1.7 GB on disk in 1,000 stores, growing 812 MB a day (over 2 h)``."""
        stores = f" in {self.stores:,} store{'s' if self.stores != 1 else ''}"
        if self.per_day is None:
            rate = "growth not measured yet (a minute of cycles)"
        else:
            rate = f"growing {size(max(self.per_day, 0.0))} a day (over {_span(self.over_s)})"
        return f"{self.provider}: {size(self.bytes)} on disk{stores}, {rate}"

    def warning(self) -> str | None:
        """What ``check`` says when the rate would take it past its budget."""
        if not self.over_budget:
            return None
        assert self.per_day is not None and self.budget is not None
        return (
            f"{self.provider}: its stores grow {size(self.per_day)} a day at the current rate "
            f"(measured over {_span(self.over_s)}), past growth_budget = "
            f'"{size(self.budget)}"; {self.advice}'
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "stores": self.stores,
            "per_day": self.per_day,
            "over_s": self.over_s,
            "budget": self.budget,
            "over_budget": self.over_budget,
            "line": self.line(),
            "warning": self.warning(),
        }


def sample_disk(store: StagingStore, config: Config, now: datetime | None = None) -> None:
    """Note what each provider's stores take now, if its newest note is a minute old."""
    moment = now or datetime.now(UTC)
    at = _iso(moment)
    for name, entry in config.providers.items():
        newest = store.store_sizes.newest(name)
        last = parse_instant(newest.at) if newest is not None else None
        if last is not None and moment - last < SAMPLE_EVERY:
            continue
        try:
            found = disk_use(name, entry)
        except OSError as exc:  # never the reason a cycle fails
            log.warning("%s: could not measure its stores on disk: %s", name, exc)
            continue
        if found is not None:
            store.store_sizes.add(name, SizeSample(at, found.bytes, found.stores))
    store.store_sizes.prune(_iso(moment - KEEP))


def disk_growth(
    store: StagingStore | None, config: Config, now: datetime | None = None
) -> dict[str, Growth]:
    """Each provider with store files: their size now, and the growth rate its samples show."""
    moment = now or datetime.now(UTC)
    found: dict[str, Growth] = {}
    for name, entry in config.providers.items():
        newest = store.store_sizes.newest(name) if store is not None else None
        sampled = parse_instant(newest.at) if newest is not None else None
        use: DiskUse | None
        if newest is not None and sampled is not None and moment - sampled < FRESH:
            use = DiskUse(newest.bytes, newest.stores)  # the page polls: no walk of every store
        else:
            use = disk_use(name, entry)
        if use is None:
            continue
        per_day = over = None
        if store is not None:
            per_day, over = _rate(store, name, moment)
        budget = getattr(entry, "growth_budget", None)
        growth = Growth(name, use.bytes, use.stores, per_day, over, budget, use.advice)
        if growth.over_budget and not growth.advice:  # a sample's: the layout's own, unwalked
            growth = replace(growth, advice=disk_advice(name, entry))
        found[name] = growth
    return found


def _rate(store: StagingStore, name: str, now: datetime) -> tuple[float | None, float | None]:
    oldest = store.store_sizes.oldest_since(name, _iso(now - WINDOW))
    newest = store.store_sizes.newest(name)
    if oldest is None or newest is None:
        return None, None
    began, ended = parse_instant(oldest.at), parse_instant(newest.at)
    if began is None or ended is None or ended - began < MIN_SPAN:
        return None, None
    seconds = (ended - began).total_seconds()
    return (newest.bytes - oldest.bytes) / seconds * DAY, seconds


def size(count: float) -> str:
    """Bytes as a person reads them (decimal units, as ``growth_budget`` takes them)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def _span(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["Growth", "disk_growth", "sample_disk", "size"]
