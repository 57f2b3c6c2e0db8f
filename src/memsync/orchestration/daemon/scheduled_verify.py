"""Scheduled verify: every ``[verify] interval`` the daemon proves each linked pair holds the
same memories, so a drift shows without anyone running `memsync verify`.

A linked pair is the active backend and one other provider (an edge of the star). Each pair
is verified as `memsync verify A B` does it (every scope of a wildcard config, differences
memsync's own handling makes explained apart) and recorded in ``verify_results``, which
`memsync status` and the status page read: a pair that does not hold shows there in red. A
run in which some pair does not hold logs one warning naming them; one in which all hold, one
info line. The run takes the cycle lock, so it never lists a store while a cycle writes it.

The daemon's hook is ``install`` at start and ``reconfigure`` on a reload
(``daemon/service.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.lock import cycle_lock
from memsync.base.paths import Paths
from memsync.base.records import parse_instant
from memsync.config import Config
from memsync.engine.verify import record_verify_failure
from memsync.orchestration.verify import verify_pair
from memsync.providers import build_provider
from memsync.providers.mnem.held import HeldStores
from memsync.staging import StagingStore

log = logging.getLogger("memsync.daemon")

JOB_ID = "verify"
LOCK_WAIT = 300.0  # seconds a run waits for a cycle in progress before it gives up this time


@dataclass(frozen=True, slots=True)
class PairVerified:
    a: str
    b: str
    reconciled: bool
    differences: int = 0
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"{self.a} ↔ {self.b}: could not verify ({self.error})"
        return f"{self.a} ↔ {self.b}: {self.differences} difference(s)"


def linked_pairs(config: Config) -> list[tuple[str, str]]:
    """The active backend with each other provider, in config order."""
    active = config.sync.active
    return [(active, other) for other in config.providers if other != active]


def run_scheduled_verify(
    paths: Paths,
    config: Config,
    *,
    stop: threading.Event | None = None,
    lock_wait: float = LOCK_WAIT,
    held: HeldStores | None = None,
) -> list[PairVerified]:
    """Verify every linked pair under the cycle lock; each result is recorded. ``held``: the
    daemon's held stores, which its mnem providers borrow their store from."""
    lock = cycle_lock(paths)
    lock.acquire(timeout=lock_wait)
    try:
        paths.ensure()
        results = []
        for a, b in linked_pairs(config):
            if stop is not None and stop.is_set():
                break
            results.append(_verify_one(paths, config, a, b, stop, held))
        return results
    finally:
        lock.release()


def _verify_one(
    paths: Paths,
    config: Config,
    a: str,
    b: str,
    stop: threading.Event | None,
    held: HeldStores | None,
) -> PairVerified:
    try:
        bases = {name: build_provider(name, config, held=held) for name in (a, b)}
        report = verify_pair(config, paths.database, a, b, bases=bases, stop=stop)
    except MemsyncError as exc:
        record_verify_failure(paths.database, a, b, str(exc))  # red on the page too
        return PairVerified(a, b, False, error=str(exc))
    differences = (
        report.totals()["differences"] if hasattr(report, "totals") else report.difference_count
    )
    return PairVerified(a, b, report.reconciled, differences)


def verify_job(
    paths: Paths,
    current: Callable[[], Config],
    stop: threading.Event,
    *,
    held: HeldStores | None = None,
) -> None:
    """One scheduled run, as the daemon's scheduler calls it: its outcome in one log line."""
    config = current()
    try:
        results = run_scheduled_verify(paths, config, stop=stop, held=held)
    except LockHeld as exc:
        log.info("scheduled verify skipped: %s; it runs again next interval", exc)
        return
    failing = [r for r in results if not r.reconciled]
    if failing:
        log.warning(
            "scheduled verify: %d of %d linked pairs do not hold the same memories: %s; "
            "`memsync verify A B` lists the differences",
            len(failing),
            len(results),
            "; ".join(r.describe() for r in failing),
        )
    elif results:
        log.info("scheduled verify: all %d linked pairs hold the same memories", len(results))


def install(
    scheduler: BaseScheduler,
    job: Callable[[], None],
    paths: Paths,
    config: Config,
    now: datetime,
) -> None:
    """Schedule the verify job when ``[verify] interval`` is set."""
    interval = config.verify.interval
    if interval is None:
        return
    first = first_run(paths, config, now)
    scheduler.add_job(
        job, IntervalTrigger(seconds=interval, timezone=UTC), id=JOB_ID, next_run_time=first
    )
    log.info(
        "scheduled verify every %gs over %d linked pair(s), next at %s",
        interval,
        len(linked_pairs(config)),
        first.isoformat(timespec="seconds"),
    )


def reconfigure(
    scheduler: BaseScheduler,
    job: Callable[[], None],
    paths: Paths,
    old: Config,
    new: Config,
) -> None:
    """A reloaded config: the job added, rescheduled or removed as ``[verify]`` now says."""
    if old.verify.interval == new.verify.interval:
        return
    if scheduler.get_job(JOB_ID) is not None:
        scheduler.remove_job(JOB_ID)
    install(scheduler, job, paths, new, datetime.now(UTC))


def first_run(paths: Paths, config: Config, now: datetime) -> datetime:
    """One interval after the newest recorded verify of a linked pair; now if none."""
    interval = config.verify.interval or 0.0
    if not paths.database.exists():
        return now
    try:
        with StagingStore.open(paths.database, create=False) as store:
            times = [
                parse_instant(found.at)
                for a, b in linked_pairs(config)
                if (found := store.verify_results.latest(a, b)) is not None
            ]
    except MemsyncError:
        return now
    known = [t for t in times if t is not None]
    if not known:
        return now
    return max(now, max(known) + timedelta(seconds=interval))
