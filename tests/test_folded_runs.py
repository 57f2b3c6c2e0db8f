"""A cycle longer than the interval is normal work: one info line, not a warning per run.

Runs on the daemon's own scheduler (built by ``Daemon``, with its settings and logger), a
real APScheduler ticking every second, with a job that outlasts several intervals.
"""

from __future__ import annotations

import logging
import re
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobEvent
from apscheduler.triggers.interval import IntervalTrigger

from memsync.base.paths import resolve_paths
from memsync.config import load_config
from memsync.orchestration.daemon.folded_runs import _duration
from memsync.orchestration.daemon.service import Daemon
from tests.conftest import write_config
from tests.test_daemon import CONFIG, wait_until

FOLDED = re.compile(
    r"^sync took [\dhms. ]+, longer than its 1s interval: (\d+) scheduled runs? folded into "
    r"the next$"
)


@pytest.fixture
def daemon(home: Path) -> Daemon:
    write_config(home, CONFIG.format(home=home, interval="1s"))
    return Daemon(resolve_paths(), load_config(home / "config" / "config.toml"))


def test_a_job_longer_than_its_interval_logs_one_info_line_and_no_warning_per_skipped_run(
    daemon: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    scheduler = daemon.scheduler
    skipped: list[JobEvent] = []  # counted apart from the daemon's own listener
    scheduler.add_listener(skipped.append, EVENT_JOB_MAX_INSTANCES)
    release = threading.Event()
    scheduler.add_job(
        lambda: release.wait(120),
        IntervalTrigger(seconds=1, timezone=UTC),
        id="sync",
        next_run_time=datetime.now(UTC),
    )
    # Another of APScheduler's complaints, through the same logger: it must still show.
    scheduler.add_job(lambda: None, "date", id="lost", executor="nowhere")
    scheduler.start()
    try:
        wait_until(lambda: len(skipped) >= 3, 60, "three runs skipped while the job ran")
        release.set()
        wait_until(lambda: any(FOLDED.match(r.getMessage()) for r in caplog.records), 60, "it")
    finally:
        scheduler.shutdown(wait=True)
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "maximum number of running instances" in m], messages
    folded = [r for r in caplog.records if FOLDED.match(r.getMessage())]
    assert len(folded) == 1 and folded[0].levelno == logging.INFO
    match = FOLDED.match(folded[0].getMessage())
    assert match is not None and int(match.group(1)) == len(skipped)
    assert daemon.folded_runs.total == {"sync": len(skipped)}
    lookup = [r for r in caplog.records if 'Executor lookup ("nowhere") failed' in r.getMessage()]
    assert lookup and lookup[0].levelno == logging.ERROR


def test_job_lengths_read_as_a_person_reads_them() -> None:
    assert [_duration(s) for s in (1, 2.5, 30, 59.6, 422, 3900)] == [
        "1s",
        "2.5s",
        "30s",
        "1m",
        "7m 2s",
        "1h 5m",
    ]
