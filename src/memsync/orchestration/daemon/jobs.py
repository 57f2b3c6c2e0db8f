"""The daemon's scheduled jobs: a sync cycle and the lines it logs, the backups, the scheduled
verify; each counted while it runs, so a stop waits for the job in flight.

Every job builds its providers with the daemon's held stores (``providers/held``), so a
mnem store the daemon serves to agents is synced, verified and read through the one handle the
daemon holds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.lock import is_locked
from memsync.base.memory import give_back
from memsync.base.paths import Paths
from memsync.config import Config
from memsync.engine.report import CycleReport, SyncOptions
from memsync.orchestration.backups import take_backups
from memsync.orchestration.daemon import scheduled_verify
from memsync.orchestration.daemon.notify import Notifier
from memsync.orchestration.live.triggers import Live
from memsync.orchestration.runner import run_sync
from memsync.orchestration.scopes.report import incomplete_discoveries
from memsync.orchestration.ui.metrics import Metrics
from memsync.providers.held import HeldStores

log = logging.getLogger("memsync.daemon")

_VERDICT = {0: "ok", 1: "needs attention", 6: "deletes refused"}


def summarize(report: CycleReport, seconds: float) -> str:
    """One line for the log and systemd's STATUS: verdict, time, per-provider states, writes."""
    verdict = "interrupted" if report.interrupted else _VERDICT.get(report.exit_code, "failed")
    taking_part = {n: o for n, o in report.providers.items() if o.state != "skipped"}
    ok = sum(1 for o in taking_part.values() if o.state == "ok")
    others = [f"{n} {o.state}" for n, o in taking_part.items() if o.state != "ok"]
    written = sum(o.written for o in taking_part.values())
    parts = [", ".join([f"{ok} provider{'' if ok == 1 else 's'} ok", *others])]
    if written:
        parts.append(f"wrote {written}")
    if report.failures:
        parts.append(f"{len(report.failures)} failed")
    open_conflicts = sum(1 for c in report.conflicts if c.state == "open")
    if open_conflicts:
        parts.append(f"{open_conflicts} open conflict(s)")
    if report.waiting:
        parts.append(f"{report.waiting} waiting")
    parts += incomplete_discoveries(getattr(report, "discovery", {})).values()
    return f"sync #{report.run_id} {verdict} in {seconds:.1f}s: " + "; ".join(parts)


class Jobs:
    """What the daemon's jobs do, and how many run now.

    ``current()`` is the running config (a reload swaps it between jobs); ``run_soon(job_id)``
    asks the scheduler for a job now (the first backup, right after the first sync); ``live``
    is the daemon's live side once started, every cycle's observer.
    """

    def __init__(
        self,
        paths: Paths,
        current: Callable[[], Config],
        stop: threading.Event,
        *,
        held: HeldStores,
        metrics: Metrics,
        notifier: Notifier,
        run_soon: Callable[[str], None],
    ) -> None:
        self.paths = paths
        self.current = current
        self.stop = stop
        self.held = held
        self.metrics = metrics
        self.notifier = notifier
        self.run_soon = run_soon
        self.live: Live | None = None
        self.backup_after_first_sync = False
        self._count = threading.Condition()
        self._running = 0

    # counting ----------------------------------------------------------------------------------

    def guarded(self, name: str, job: Callable[[], None]) -> Callable[[], None]:
        """The job, counted while it runs (a stop waits for it), never raising into APScheduler."""

        def run() -> None:
            with self._count:
                self._running += 1
            try:
                if not self.stop.is_set():
                    job()
            except Exception:
                log.exception("%s job failed unexpectedly; it runs again next interval", name)
            finally:
                give_back()  # what the job freed (its page cache, its report) leaves RSS
                with self._count:
                    self._running -= 1
                    self._count.notify_all()

        return run

    def wait_idle(self, timeout: float) -> bool:
        """Whether every job ended within TIMEOUT seconds."""
        with self._count:
            return self._count.wait_for(lambda: self._running == 0, timeout=max(0.0, timeout))

    # the jobs ----------------------------------------------------------------------------------

    def sync(self) -> None:
        """The scheduled sync: one cycle over everything, its outcome logged and reported."""
        config = self.current()
        started = time.monotonic()
        try:
            report = self.cycle(config)
        except LockHeld as exc:
            self.metrics.cycle_not_run("busy")
            log.warning("sync skipped: %s; trying again next interval", exc)
            return
        except MemsyncError as exc:
            self.metrics.cycle_not_run("failed")
            log.error("sync failed: %s", exc)
            self.notifier.status(f"last sync failed: {exc}")
            return
        self.metrics.cycle_ended(report.run_id, per_scope=config.metrics.per_scope)
        line = summarize(report, time.monotonic() - started)
        log.log(logging.INFO if report.exit_code == 0 else logging.WARNING, "%s", line)
        for name, outcome in report.providers.items():
            if outcome.mirror and outcome.mirror.refused:
                gate = "rollbacks" if outcome.mirror.refused_by == "rollbacks" else "deletes"
                log.warning(  # the reason says how to confirm or settle it
                    "sync #%d: %s: %s REFUSED: %s",
                    report.run_id,
                    name,
                    gate,
                    outcome.mirror.refused,
                )
        for failure in report.provider_failures():  # one line each (engine/failures.py)
            # busy is normal for a while: engine/unsynced.py raises its voice once it has lasted
            level = logging.INFO if failure.busy else logging.WARNING
            log.log(level, "sync #%d: %s", report.run_id, failure.line())
        self.notifier.status(line)
        if self.backup_after_first_sync and not self.stop.is_set():
            self.backup_after_first_sync = False
            self.run_soon("backup")

    def cycle(self, config: Config) -> CycleReport:
        """run_sync, after waiting (stoppably, within reason) for a manual `memsync sync`."""
        patience = time.monotonic() + max(5.0, min(config.sync.interval, 300.0))
        while is_locked(self.paths.lock_file) and time.monotonic() < patience:
            if self.stop.wait(0.2):
                break
        options = SyncOptions(stop=self.stop)
        return run_sync(
            self.paths, config, options, lock_wait=1.0, observer=self.live, held=self.held
        )

    def backup(self) -> None:
        """The scheduled backups: one line per provider backed up, skipped or failed."""
        for outcome in take_backups(self.paths, self.current()):
            if outcome.error:
                log.error("backup of %s failed: %s", outcome.provider, outcome.error)
            elif outcome.skipped:
                log.info("backup of %s skipped: %s", outcome.provider, outcome.skipped)
            else:
                removed = f", removed {len(outcome.removed)} older" if outcome.removed else ""
                log.info(
                    "backup of %s: %d memories to %s%s",
                    outcome.provider,
                    outcome.count,
                    outcome.path,
                    removed,
                )

    def verify(self) -> None:
        """The scheduled verify (``daemon/scheduled_verify.py``)."""
        scheduled_verify.verify_job(self.paths, self.current, self.stop, held=self.held)
