"""Scheduled verify: `[verify] interval` has the daemon verify every linked pair and scope.

Results go to ``verify_results`` (what `status` and the status page read); a run in which a
pair does not hold logs one warning and shows red in `status` and on the page's data. The
real daemon runs it on its schedule; the job alone is driven here too, to count its warnings.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memsync.base.paths import Paths, resolve_paths
from memsync.config import load_config
from memsync.orchestration.daemon.scheduled_verify import first_run, linked_pairs, verify_job
from memsync.staging import StagingStore
from tests.conftest import write_config
from tests.test_daemon import CONFIG, THIRD, DaemonProcess, add_memories

VERIFY_DAILY = '\n[verify]\ninterval = "1d"\n'


@pytest.fixture
def synced(home: Path, cli: Any) -> Path:
    write_config(
        home, CONFIG.format(home=home, interval="1h") + THIRD.format(home=home) + VERIFY_DAILY
    )
    add_memories(home, ("m1", "likes green tea"), ("m2", "works at Acme"))
    assert cli("sync").exit_code == 0
    return home


def _paths() -> Paths:
    return resolve_paths()


def test_a_scheduled_run_verifies_every_linked_pair_and_keeps_the_results(
    synced: Path, cli: Any, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_config(synced / "config" / "config.toml")
    assert linked_pairs(config) == [("notes", "copy"), ("notes", "third")]
    with caplog.at_level(logging.INFO, logger="memsync.daemon"):
        verify_job(_paths(), lambda: config, stop=_never())
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert "all 2 linked pairs hold the same memories" in caplog.text

    status = json.loads(cli("status", "--json").output)["verify"]
    assert status["interval"] == 86400.0 and status["failing"] == 0
    assert [(p["a"], p["b"], p["reconciled"]) for p in status["pairs"]] == [
        ("notes", "copy", True),
        ("notes", "third", True),
    ]


def test_a_pair_that_does_not_hold_logs_one_warning_and_shows_red(
    synced: Path, cli: Any, caplog: pytest.LogCaptureFixture
) -> None:
    third = synced / "third" / "alice.pmm.jsonl"  # a memory lost from the push-only copy
    lines = third.read_text().splitlines()
    third.write_text("\n".join(lines[:-1]) + "\n")
    config = load_config(synced / "config" / "config.toml")
    with caplog.at_level(logging.INFO, logger="memsync.daemon"):
        verify_job(_paths(), lambda: config, stop=_never())

    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, caplog.text
    assert "1 of 2 linked pairs do not hold the same memories: notes ↔ third" in (
        warnings[0].getMessage()
    )
    status = json.loads(cli("status", "--json").output)
    assert status["verify"]["failing"] == 1
    failing = [p for p in status["verify"]["pairs"] if p["failing"]]
    assert [(p["b"], p["differences"]) for p in failing] == [("third", 1)]
    text = cli("status").output
    assert "FAILED notes ↔ third: 1 difference(s)" in text, text
    assert "notes ↔ copy: reconciled" in text
    readiness = {p["b"]: p for p in status["cutover"]}
    assert not readiness["third"]["safe"]  # the page's readiness view goes red with it


def test_the_next_run_is_due_one_interval_after_the_newest_verify(synced: Path) -> None:
    config = load_config(synced / "config" / "config.toml")
    now = datetime.now(UTC)
    assert first_run(_paths(), config, now) == now  # never verified: right away
    verify_job(_paths(), lambda: config, stop=_never())
    with StagingStore.open(synced / "state" / "staging.db") as store:
        found = store.verify_results.latest("notes", "copy")
    assert found is not None
    due = first_run(_paths(), config, now)
    assert now + timedelta(hours=23) < due <= datetime.now(UTC) + timedelta(days=1)


def test_the_daemon_runs_it_on_its_schedule(synced: Path) -> None:
    daemon = DaemonProcess(synced)
    try:
        line = daemon.wait_for_line("scheduled verify: ", timeout=120)
        assert "all 2 linked pairs hold the same memories" in line, daemon.lines
        assert daemon.stop()[0] == 0
    finally:
        daemon.kill()
    assert any("scheduled verify every 86400s over 2 linked pair(s)" in x for x in daemon.lines)
    with StagingStore.open(synced / "state" / "staging.db") as store:
        assert store.verify_results.latest("notes", "third") is not None


def _never() -> Any:
    import threading

    return threading.Event()


def test_a_reload_adds_moves_or_removes_the_job(synced: Path) -> None:
    from apscheduler.schedulers.background import BackgroundScheduler

    from memsync.config import VerifyConfig
    from memsync.orchestration.daemon.scheduled_verify import JOB_ID, install, reconfigure

    scheduler = BackgroundScheduler(timezone=UTC)
    daily = load_config(synced / "config" / "config.toml")
    hourly = daily.model_copy(update={"verify": VerifyConfig(interval="1h")})
    off = daily.model_copy(update={"verify": VerifyConfig()})

    install(scheduler, _nothing, _paths(), off, datetime.now(UTC))
    assert scheduler.get_job(JOB_ID) is None  # off unless [verify] interval is set
    reconfigure(scheduler, _nothing, _paths(), off, daily)
    assert scheduler.get_job(JOB_ID).trigger.interval == timedelta(days=1)
    reconfigure(scheduler, _nothing, _paths(), daily, hourly)
    assert scheduler.get_job(JOB_ID).trigger.interval == timedelta(hours=1)
    reconfigure(scheduler, _nothing, _paths(), hourly, off)
    assert scheduler.get_job(JOB_ID) is None


def _nothing() -> None:
    return None
