"""The status page shows a store gone back in time, and a linked pair whose verify failed.

The rollback comes from a real cycle (``tests/test_rollback.py``'s world: the server double's
Memory restored to an older snapshot beside the real mnem SDK); the page runs in Debian's
headless Chromium, as the other page tests do.
"""

from __future__ import annotations

import threading
from pathlib import Path

from playwright.sync_api import expect

from memsync.engine.verify import record_verify
from memsync.orchestration.ui.server import UiServer
from memsync.staging import StagingStore
from tests import test_ui_browser
from tests.test_rollback import Snapshot, World
from tests.test_ui_browser import Watched

browser = test_ui_browser.browser  # the fixtures, shared
artifacts = test_ui_browser.artifacts
server = test_ui_browser.server
page = test_ui_browser.page


def test_a_rollback_and_a_failed_verify_show_on_the_page(
    home: Path, server: UiServer, page: Watched, artifacts: Path
) -> None:
    def rolled_back() -> None:
        world = World(home)
        assert world.sync().exit_code == 0
        snapshot = Snapshot(world.double)
        world.agent_rewrites("memory number 1", "memory number 1, the agent's newer version")
        assert world.sync().exit_code == 0
        snapshot.restore()
        assert [c.rolled_back for c in world.sync().conflicts] == ["server"]
        with StagingStore.open(world.database) as store:
            record_verify(store, "agent", "backup", None, "the listing of backup was partial")
        made.append(True)

    # Its own thread: the server double's transport runs an event loop, and this one is
    # playwright's.
    made: list[bool] = []
    builder = threading.Thread(target=rolled_back)
    builder.start()
    builder.join(timeout=300)
    assert made == [True]

    p = page.page
    p.reload()
    banners = p.locator("#banners")
    expect(banners).to_contain_text("Rolled back in server: 1 memory is an older version")
    expect(banners.locator(".banner.error")).to_contain_text(
        "Verify: 1 linked pair does not hold the same memories: agent ↔ backup"
    )
    p.screenshot(path=artifacts / "overview-rolled-back.png", full_page=True)

    p.goto(server.base_url + "/conflicts")
    card = p.locator("section.conflict")
    expect(card.get_by_test_id("rolled-back")).to_contain_text("Rolled back in server")
    expect(card.locator(".side")).to_have_count(2)  # the push-only backup is nobody's side
    expect(card.locator(".side").first).to_have_attribute("data-side", "server")
    expect(card.locator('[data-side="server"] .text')).to_have_text("memory number 1")
    expect(card.locator('[data-side="agent"] mark')).to_have_text(", the agent's newer version")
    expect(card.get_by_role("button", name="Keep agent's version")).to_be_visible()
    p.screenshot(path=artifacts / "conflicts-rolled-back.png", full_page=True)
