"""The Platform's scopes read ahead of their cycles (issue 39 §3), one first page each.

A first sync over a thousand users listed them one after another (1.74x the rate limit's
floor). Now the configured provider reads each scope's first page a few scopes ahead, four at a
time, through the key's limiter, and each scope's listing takes its read; a scope whose
memories fit that page is listed in full by it, for the cost of an incremental listing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.test_scopes_remote import backup_texts, config_for, platform_provider

USERS = 24


def sync(double: Mem0PlatformDouble, tmp_path: Path) -> Any:
    config = config_for("mem0-platform", '{ user_id = "*" }', tmp_path / "backup")
    cloud = platform_provider(double, {"user_id": "*"})
    backup = PmmDirProvider("backup", config.providers["backup"].path)
    with StagingStore.open(tmp_path / "staging.db") as store:
        return run_scoped_cycle(config, store, {"cloud": cloud, "backup": backup}, SyncOptions())


class InFlight:
    """The most list requests the double served at once (each waits a little, as a round
    trip does, so that overlapping reads show)."""

    def __init__(self, double: Mem0PlatformDouble) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()
        app = double.app

        async def counting(scope: Any, receive: Any, send: Any) -> None:
            listing = scope.get("path") == "/v3/memories/"
            if listing:
                with self.lock:
                    self.now += 1
                    self.most = max(self.most, self.now)
            try:
                await app(scope, receive, send)
            finally:
                if listing:
                    with self.lock:
                        self.now -= 1

        double.app = counting


def test_a_first_sync_reads_the_scopes_ahead_one_page_each_and_several_at_once(
    tmp_path: Path,
) -> None:
    double = Mem0PlatformDouble(api_key="m0-platform-secret-0123456789")
    for user in range(USERS):
        for i in range(3):
            double.insert(f"u{user:02d} memory {i}", user_id=f"u{user:02d}")
    double.faults.latency = 0.05
    seen = InFlight(double)
    report = sync(double, tmp_path)
    assert report.exit_code == 0, report.as_dict()
    assert len(backup_texts(tmp_path / "backup")) == USERS
    listed = [s for s in double.faults.seen if s.path == "/v3/memories/"]
    assert len(listed) == USERS  # each scope's one page, read once: ahead, not again
    assert seen.most > 1  # reads overlapped


def test_a_scope_that_fits_a_page_is_listed_in_full_by_the_pass_and_its_deletes_seen(
    tmp_path: Path,
) -> None:
    double = Mem0PlatformDouble(api_key="m0-platform-secret-0123456789")
    for user in range(USERS):
        double.insert(f"u{user:02d} likes tea", user_id=f"u{user:02d}")
    doomed = double.insert("u03 has a cat", user_id="u03")
    assert sync(double, tmp_path).exit_code == 0
    del double.memories[doomed]  # deleted on the Platform; the next pass is not forced full
    before = len(double.faults.seen)
    again = sync(double, tmp_path)
    assert again.exit_code == 0, again.as_dict()
    listed = [s for s in double.faults.seen[before:] if s.path == "/v3/memories/"]
    assert len(listed) == USERS  # what incremental listings would have cost
    assert backup_texts(tmp_path / "backup")["u03.pmm.jsonl"] == {"u03 likes tea"}
