"""A job that outlasts its interval is normal work: one info line when it ends, no warnings.

A run that comes due while the previous one still runs is folded into the next (the daemon
asks APScheduler for one instance at a time), yet APScheduler logs a WARNING for each: 13 of
them for one 7-minute cycle at a 30 s interval. The scheduler is given a logger of its own
(its ``logger`` option) whose filter drops exactly that record, so every other warning it
has still shows; its events count the runs folded and time the job, and when the job ends
one line says so: "sync took 7m 2s, longer than its 30s interval: 13 scheduled runs folded
into the next".
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_SUBMITTED,
    JobEvent,
)
from apscheduler.schedulers.base import BaseScheduler

log = logging.getLogger("memsync.daemon")

# APScheduler 3's message for a run skipped because the job still runs (schedulers/base.py).
_SKIPPED = 'Execution of job "%s" skipped: maximum number of running instances'
_EVENTS = EVENT_JOB_SUBMITTED | EVENT_JOB_MAX_INSTANCES | EVENT_JOB_EXECUTED | EVENT_JOB_ERROR


class _DropSkippedRuns(logging.Filter):
    """Drops APScheduler's warning for a run folded into the next; lets all else through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(_SKIPPED))


# A child of apscheduler.scheduler: the same level settings, one filter on top.
SCHEDULER_LOGGER = logging.getLogger("apscheduler.scheduler.memsync")
SCHEDULER_LOGGER.addFilter(_DropSkippedRuns())


class FoldedRuns:
    """Counts the runs folded while a job ran and says so in one line when it ends."""

    def __init__(self) -> None:
        self.logger = SCHEDULER_LOGGER  # give it to the scheduler as its ``logger``
        self._lock = threading.Lock()
        self._started: dict[str, float] = {}
        self._folded: dict[str, int] = {}
        self.total: dict[str, int] = {}  # runs folded since start, per job (for /metrics)
        self._scheduler: BaseScheduler | None = None

    def attach(self, scheduler: BaseScheduler) -> None:
        """Listen to SCHEDULER's job events (it must have been given ``self.logger``)."""
        self._scheduler = scheduler
        scheduler.add_listener(self._on_event, _EVENTS)

    def _on_event(self, event: JobEvent) -> None:
        job = event.job_id
        with self._lock:
            if event.code == EVENT_JOB_SUBMITTED:
                self._started[job] = time.monotonic()
                self._folded[job] = 0
                return
            if event.code == EVENT_JOB_MAX_INSTANCES:
                self._folded[job] = self._folded.get(job, 0) + 1
                self.total[job] = self.total.get(job, 0) + 1
                return
            folded = self._folded.pop(job, 0)
            took = time.monotonic() - self._started.pop(job, time.monotonic())
        if folded:
            log.info(
                "%s took %s, longer than its %s interval: %d scheduled run%s folded into the next",
                job,
                _duration(took),
                self._interval(job),
                folded,
                "" if folded == 1 else "s",
            )

    def _interval(self, job_id: str) -> str:
        found: Any = self._scheduler.get_job(job_id) if self._scheduler else None
        interval = getattr(getattr(found, "trigger", None), "interval", None)
        return _duration(interval.total_seconds()) if interval is not None else "scheduled"


def _duration(seconds: float) -> str:
    """7m 2s, 45s, 1h 5m: how a person reads a job's length."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s".replace(".0s", "s")
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if secs else f"{minutes}m"
