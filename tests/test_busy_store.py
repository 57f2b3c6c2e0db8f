"""A mnem store another program holds for as long as it runs, as ``mnem-mcp`` and
``mnem-langgraph`` do: busy cycle after cycle, never silently.

The holder is a second process with the real mnem SDK that opens the store, writes a memory
(as an agent would, while memsync cannot get in) and keeps its one handle until told to stop.
``status``, the status page and the log say since when the store is busy and which process
holds it; an hour unsynced is a warning, a day an alarm (logged once, then daily). Days pass
through ``memsync.engine.unsynced.clock``: everything else (the store, the lock, the cycles) is
real.
"""

from __future__ import annotations

import gc
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner
from playwright.sync_api import Browser, expect

from memsync.base.paths import resolve_paths
from memsync.cli import main
from memsync.engine import unsynced
from memsync.orchestration.status import collect_status
from memsync.orchestration.ui.server import UiServer
from memsync.staging import StagingStore
from tests.conftest import subprocess_env, write_config
from tests.mnem_sdk import real_sdk
from tests.test_daemon import DaemonProcess
from tests.test_ui_browser import CHROMIUM_ARGS, Watched

HOLDER = """
import sys
import mnem

store = mnem.open(sys.argv[1])  # one handle, kept for the life of the process
mnem.agents.remember(store, "while-held", "written while the store was held", source="mcp")
print("holding", flush=True)
sys.stdin.readline()  # until told to let go
"""
WRITTEN = "written while the store was held"


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


class HeldStore:
    """A second process holding the store's one handle, as mnem-mcp does while it runs."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> HeldStore:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until it holds the store, or dies
        assert line.strip() == "holding", f"the holder did not start (exit {self.proc.poll()})"
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


@pytest.fixture
def agent(home: Path, mnem: ModuleType) -> Path:
    """A real mnem store (active) with one memory, and a PMM backup, synced once."""
    store = home / "agent"
    mnem.init(store)
    gc.collect()
    handle = mnem.open(store)
    mnem.agents.remember(handle, "plan", "on the Enterprise plan", source="ticket")
    del handle
    gc.collect()
    write_config(
        home,
        f'[sync]\nactive = "agent"\n[providers.agent]\ntype = "mnem"\npath = "{store}"\n'
        'busy_timeout = "1s"\n'
        f'[providers.backup]\ntype = "pmm-dir"\npath = "{home / "pmm"}"\ndirection = "push"\n',
    )
    assert memsync(home, "sync")[0] == 0
    return store


def memsync(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def agent_status(home: Path) -> dict[str, Any]:
    code, out = memsync(home, "status", "--json")
    assert code == 0, out
    entry: dict[str, Any] = json.loads(out)["providers"]["agent"]
    return entry


def backup_texts(home: Path) -> set[str]:
    return {
        json.loads(line)["content"]
        for path in (home / "pmm").glob("*.pmm.jsonl")
        for line in path.read_text().splitlines()[1:]
    }


def test_a_held_store_is_busy_since_its_first_busy_cycle_and_names_the_process_holding_it(
    home: Path, agent: Path
) -> None:
    with HeldStore(agent) as holder:
        assert memsync(home, "sync")[0] == 1
        first = agent_status(home)["state"]
        assert first["kind"] == "busy" and first["since"]
        assert memsync(home, "sync")[0] == 1  # and again: still busy since the first time
        state = agent_status(home)["state"]
        assert state["kind"] == "busy" and state["since"] == first["since"]
        assert f"held by another process (pid {holder.pid} (python -c" in state["reason"]
        assert state["unsynced"]["level"] == "behind"
        code, out = memsync(home, "status")
        assert code == 0, out
        assert "store busy since" in out and f"pid {holder.pid}" in out, out
    # let go: the next cycle syncs what the agent wrote meanwhile, and the clock resets
    assert memsync(home, "sync")[0] == 0
    assert WRITTEN in backup_texts(home)
    state = agent_status(home)["state"]
    assert state["kind"] == "ok" and "unsynced" not in state and "since" not in state


def test_a_store_held_for_days_warns_then_alarms_in_status_the_page_and_the_log(
    home: Path,
    agent: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    browser: Browser,
) -> None:
    start = unsynced.clock()

    def after(delta: timedelta) -> None:
        monkeypatch.setattr(unsynced, "clock", lambda: start + delta)

    def loud() -> list[tuple[int, str]]:
        found = [
            (r.levelno, r.getMessage())
            for r in caplog.records
            if r.name == "memsync.engine.unsynced" and r.levelno >= logging.WARNING
        ]
        caplog.clear()
        return found

    caplog.set_level(logging.INFO, logger="memsync")
    with HeldStore(agent):
        after(timedelta(minutes=5))
        assert memsync(home, "sync")[0] == 1
        assert loud() == []  # busy for a while is normal: info, not a warning
        after(timedelta(hours=2))
        assert memsync(home, "sync")[0] == 1
        ((level, line),) = loud()
        assert level == logging.WARNING and "agent: NOT SYNCED for 2 h" in line, line
        assert "its store has been busy since" in line and "held by another process" in line
        after(timedelta(hours=2, minutes=10))
        assert memsync(home, "sync")[0] == 1
        assert loud() == []  # said once
        code, out = memsync(home, "status")
        assert code == 0 and "agent: NOT SYNCED for 2 h 10 min" in out, out

        after(timedelta(hours=30))
        assert memsync(home, "sync")[0] == 1
        ((level, line),) = loud()
        assert level == logging.ERROR and "agent: NOT SYNCED for 1 day 6 h" in line, line
        after(timedelta(hours=31))
        assert memsync(home, "sync")[0] == 1
        assert loud() == []
        after(timedelta(hours=55))
        assert memsync(home, "sync")[0] == 1
        ((level, line),) = loud()
        assert level == logging.ERROR and "NOT SYNCED for 2 days 7 h" in line  # again, daily

        report = collect_status(resolve_paths())  # what the page's /api/status serves
        lag = report["providers"]["agent"]["state"]["unsynced"]
        assert lag["level"] == "alarm" and lag["for"] == "2 days 7 h"
        shown_on_the_page(browser, "agent: NOT SYNCED for 2 days 7 h")
    assert memsync(home, "sync")[0] == 0
    assert [m for lvl, m in caplog_messages(caplog)] == ["agent: synced again after 2 days 7 h"]


def caplog_messages(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [
        (r.levelno, r.getMessage()) for r in caplog.records if r.name == "memsync.engine.unsynced"
    ]


def shown_on_the_page(browser: Browser, text: str) -> None:
    """The overview's banner says TEXT, and the provider's state badge is red."""
    ui = UiServer(resolve_paths(), "127.0.0.1", 0)
    ui.start_in_thread()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        watched = Watched(context.new_page())
        watched.page.goto(ui.url_with_token)
        expect(watched.page.locator(".banner.error").filter(has_text=text)).to_be_visible()
        badge = watched.page.locator('tr[data-provider="agent"] [data-testid="state"]')
        expect(badge).to_have_text("busy 2 days 7 h")
        expect(badge).to_have_class("badge bad")
        assert watched.errors == []
    finally:
        context.close()
        ui.stop()


def test_the_daemon_logs_a_store_that_has_been_held_for_days(home: Path, agent: Path) -> None:
    with HeldStore(agent):
        assert memsync(home, "sync")[0] == 1
        with StagingStore.open(home / "state" / "staging.db") as store:  # two days ago, that was
            cycle = json.loads(store.providers.last_cycle("agent") or "{}")
            earlier = (datetime.fromisoformat(cycle["busy_since"]) - timedelta(days=2)).isoformat()
            cycle["busy_since"] = cycle["unsynced_since"] = earlier
            with store.transaction():
                store.providers.save_last_cycle("agent", json.dumps(cycle))
        config = home / "config" / "config.toml"
        config.write_text(  # the daemon's first cycle runs at once; no other within the test
            config.read_text().replace("[sync]\n", '[sync]\ninterval = "1h"\n')
            + '[backup]\ninterval = "1d"\n'
        )
        daemon = DaemonProcess(home)
        try:
            line = daemon.wait_for_line("NOT SYNCED for 2 days", timeout=120)
            assert " ERROR " in line, daemon.lines
            assert "its store has been busy since" in line, line
            assert daemon.stop()[0] == 0
        finally:
            daemon.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    from tests.test_ui_browser import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium chromium-driver")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
