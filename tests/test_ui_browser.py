"""The status page in a real headless Chromium (Debian's chromium, driven by playwright).

A missing browser is an error, not a skip: CI installs `chromium` (see .ci/run). Every page
is saved as a screenshot under MEMSYNC_UI_ARTIFACTS (or pytest's temporary directory) so a
person can look at what the tests saw.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from memsync.base.lock import cycle_lock
from memsync.base.paths import resolve_paths
from memsync.orchestration.ui.server import UiServer
from tests.ui_world import CutoverWorld, build_cutover

CHROMIUM = os.environ.get("MEMSYNC_CHROMIUM", "/usr/bin/chromium")
expect.set_options(timeout=30_000)  # generous: the suite runs on busy 2-core machines
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = {
    "overview": "/",
    "history": "/history",
    "conflicts": "/conflicts",
    "memory": "/memory?id=app:alice-0",
    "memory-search": "/memory?q=morning",
    "cutover": "/cutover",
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install Debian's `chromium` and `chromium-driver` "
            "(apt-get install chromium chromium-driver) or set MEMSYNC_CHROMIUM"
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("MEMSYNC_UI_ARTIFACTS")
    directory = Path(chosen) if chosen else tmp_path_factory.mktemp("ui-screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def world(home: Path) -> CutoverWorld:
    return build_cutover(home)


@pytest.fixture
def server(home: Path) -> Iterator[UiServer]:
    ui = UiServer(resolve_paths(), "127.0.0.1", 0)
    ui.start_in_thread()
    yield ui
    ui.stop()


class Watched:
    """A page, and every console error or uncaught exception it had."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on(
            "console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None
        )
        page.on(
            "request",
            lambda request: (
                None
                if request.url.startswith(("http://127.0.0.1:", "data:"))
                else self.errors.append(f"outside request: {request.url}")
            ),
        )


@pytest.fixture
def page(browser: Browser, server: UiServer) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page())
    watched.page.goto(server.url_with_token)  # trades the token for the cookie
    yield watched
    context.close()
    assert watched.errors == []


def rows(home: Path, sql: str, *params: Any) -> list[Any]:
    with sqlite3.connect(home / "state" / "staging.db") as conn:
        return conn.execute(sql, params).fetchall()


def test_the_overview_shows_the_staging_database_numbers(
    world: CutoverWorld, server: UiServer, page: Watched, artifacts: Path
) -> None:
    p = page.page
    expect(p.locator("#providers")).to_be_visible()
    expect(p).to_have_url(f"{server.base_url}/")  # the token left the address bar
    with sqlite3.connect(world.home / "state" / "staging.db") as conn:
        for state in ("failed", "dead"):  # writes into new that kept failing
            conn.execute(
                "INSERT INTO outbox (run_id, link_id, provider, kind, state, attempts, "
                "last_error, created_at, updated_at) VALUES (3, 'app:bob-2', 'new', 'update', "
                "?, 5, '503 Service Unavailable', 'now', 'now')",
                (state,),
            )
    p.reload()
    counts = rows(
        world.home, "SELECT provider, scope_key, COUNT(*) FROM records GROUP BY 1, 2 ORDER BY 1, 2"
    )
    assert len(counts) == 6
    for provider, scope, n in counts:
        cell = p.locator(f'tr[data-provider="{provider}"][data-scope="{scope}"] td.num').first
        expect(cell).to_have_text(str(n))
    total = sum(n for _, _, n in counts)
    expect(p.get_by_test_id("total-mirrored").locator(".value")).to_have_text(str(total))
    (open_conflicts,) = rows(world.home, "SELECT COUNT(*) FROM conflicts WHERE state = 'open'")[0]
    expect(p.get_by_test_id("conflicts-open").locator(".value")).to_have_text(str(open_conflicts))
    for state, testid in (("pending", "outbox-pending"), ("failed", "outbox-failed")):
        (n,) = rows(world.home, "SELECT COUNT(*) FROM outbox WHERE state = ?", state)[0]
        expect(p.get_by_test_id(testid).locator(".value")).to_have_text(str(n))
    (dead,) = rows(world.home, "SELECT COUNT(*) FROM outbox WHERE state = 'dead'")[0]
    expect(p.get_by_test_id("outbox-dead").locator(".value")).to_have_text(str(dead))
    expect(p.locator('tr[data-provider="new"]').first).to_contain_text("1 failing")
    expect(p.locator('tr[data-provider="new"]').first).to_contain_text("1 dead")
    expect(p.locator("#dead-letters")).to_contain_text("503 Service Unavailable")
    expect(p.locator('tr[data-provider="old"] .tag').first).to_have_text("active")
    expect(p.locator('tr[data-provider="old"]').first).to_contain_text("ok, complete")
    p.screenshot(path=artifacts / "overview.png", full_page=True)


def test_the_overview_refreshes_by_itself(
    world: CutoverWorld, server: UiServer, page: Watched
) -> None:
    p = page.page
    cell = p.locator('tr[data-provider="old"][data-scope="bob"] td.num').first
    expect(cell).to_have_text("4")
    world.add("old", "bob", "bob memory added while the page was open")
    code, out = world.memsync("sync")
    assert code == 1, out  # the conflict is still open
    expect(cell).to_have_text("5")  # within the next polls


def test_every_page_renders_and_is_saved(
    world: CutoverWorld, server: UiServer, page: Watched, artifacts: Path
) -> None:
    p = page.page
    for name, path in PAGES.items():
        p.goto(server.base_url + path)
        expect(p.locator("#updated")).to_contain_text("updated")
        p.screenshot(path=artifacts / f"{name}.png", full_page=True)
        assert "Traceback" not in p.content()
    p.goto(server.base_url + "/history")
    (runs,) = rows(world.home, "SELECT COUNT(*) FROM runs WHERE finished_at IS NOT NULL")[0]
    expect(p.get_by_test_id("duration-chart").locator("rect")).to_have_count(runs)
    p.goto(server.base_url + "/memory?q=coffee")
    p.get_by_role("link", name="Alice prefers coffee in the morning, no sugar").click()
    expect(p.get_by_test_id("timeline").locator("li")).to_have_count(5)
    expect(p.get_by_test_id("timeline")).to_contain_text("memsync, copying old's version")


def test_resolving_a_conflict_by_clicking_is_what_memsync_resolve_does(
    world: CutoverWorld, server: UiServer, page: Watched, artifacts: Path
) -> None:
    p = page.page
    p.goto(server.base_url + "/conflicts")
    card = p.locator(f'[data-conflict="{world.conflict_id}"]')
    expect(card.locator('[data-side="old"] .text')).to_have_text(
        "Alice prefers green tea in the morning"
    )
    expect(card.locator('[data-side="new"] mark')).to_have_text(["coffee", ", no sugar"])
    card.get_by_role("button", name="Keep new's version").click()
    expect(card.locator(".result")).to_contain_text("kept new's version", timeout=60_000)
    expect(card.locator(".result")).to_contain_text("finished cleanly")
    p.screenshot(path=artifacts / "conflicts-resolved.png", full_page=True)
    expect(p.get_by_test_id("no-conflicts")).to_be_visible()

    code, out = world.memsync("conflicts")
    assert (code, out.strip()) == (0, "no conflicts")
    code, out = world.memsync("conflicts", "--all", "--json")
    (settled,) = json.loads(out)
    assert (settled["state"], settled["winner"]) == ("resolved", "new")
    assert settled["resolution"] == "kept new by hand"
    code, out = world.memsync("history", world.conflicted_link, "--json")
    # replay order puts backups last: find what was written into old, wherever it stands
    written = [e for e in json.loads(out) if (e["provider"], e["kind"]) == ("old", "written")]
    assert written and written[-1]["content"] == "Alice prefers coffee in the morning, no sugar"

    # Then the cutover page: verify by clicking, and old -> new is safe to switch.
    p.goto(server.base_url + "/cutover")
    pair = p.locator('[data-pair="old:new"]')
    expect(pair.get_by_test_id("verdict")).to_have_text("not yet")
    pair.get_by_role("button", name="Run verify old new now").click()
    expect(pair.get_by_test_id("verdict")).to_have_text("✓ safe to switch", timeout=60_000)
    expect(pair).to_contain_text("memsync switch new")
    p.screenshot(path=artifacts / "cutover-safe.png", full_page=True)
    (verified,) = rows(world.home, "SELECT a, b, reconciled FROM verify_results")
    assert verified == ("old", "new", 1)


def test_without_the_token_the_browser_gets_403(browser: Browser, server: UiServer) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        response = page.goto(server.base_url + "/")
        assert response is not None and response.status == 403
        assert "open the URL `memsync ui` prints" in page.content()
    finally:
        context.close()


def test_a_post_without_csrf_from_the_logged_in_browser_is_refused(
    world: CutoverWorld, server: UiServer, page: Watched
) -> None:
    response = page.page.request.post(
        server.base_url + "/api/resolve", data={"id": world.conflict_id, "keep": "old"}
    )
    assert response.status == 403 and "CSRF" in response.json()["error"]
    code, out = world.memsync("conflicts", "--json")
    assert code == 0, out
    assert [c["state"] for c in json.loads(out)] == ["open"]


def test_errors_show_as_plain_messages(
    world: CutoverWorld, server: UiServer, page: Watched, artifacts: Path
) -> None:
    p = page.page
    lock = cycle_lock(resolve_paths())
    lock.acquire()
    try:
        p.goto(server.base_url + "/")
        expect(p.locator(".banner.info")).to_contain_text("A sync cycle is running now")
        p.screenshot(path=artifacts / "error-busy.png", full_page=True)
    finally:
        lock.release()
    config = world.home / "config" / "config.toml"
    config.write_text(config.read_text().replace('active = "old"', 'active = "nowhere"'))
    p.goto(server.base_url + "/")
    banner = p.locator(".banner.error")
    expect(banner).to_contain_text("Config error")
    expect(banner).to_contain_text("sync.active = 'nowhere' names no configured provider")
    p.screenshot(path=artifacts / "error-config.png", full_page=True)
    (world.home / "state" / "staging.db").rename(world.home / "state" / "moved.db")
    p.goto(server.base_url + "/conflicts")
    expect(p.locator(".banner.error")).to_contain_text("no staging database yet")
    p.screenshot(path=artifacts / "error-no-database.png", full_page=True)
    assert "Traceback" not in p.content()
    # The browser logs the API's 409 answer for the missing database; that one was expected.
    assert any("409" in e for e in page.errors)
    page.errors = [e for e in page.errors if "409" not in e]


def test_a_team_is_drawn_fifty_scopes_at_a_time_and_paged(
    home: Path, server: UiServer, browser: Browser, artifacts: Path
) -> None:
    from tests.ui_world import build_team

    build_team(home, 120)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page())
    p = watched.page
    try:
        p.goto(server.url_with_token)
        team = p.locator('#providers tbody tr[data-provider="server"]:not(.pager)')
        pager = p.get_by_test_id("scopes-server")
        expect(pager.get_by_test_id("scopes-shown")).to_have_text("scopes 1–50 of 120")
        expect(team).to_have_count(50)
        expect(team.first).to_contain_text("user_id=u0000")
        pager.get_by_role("button", name="next ›").click()
        expect(pager.get_by_test_id("scopes-shown")).to_have_text("scopes 51–100 of 120")
        expect(team.first).to_contain_text("user_id=u0050")
        updated = p.locator("#updated").inner_text()
        expect(p.locator("#updated")).not_to_have_text(updated)  # a refresh came and went:
        expect(pager.get_by_test_id("scopes-shown")).to_have_text("scopes 51–100 of 120")
        pager.get_by_role("checkbox").check()
        expect(team).to_have_count(1)
        expect(team.first).to_contain_text("none needs attention")
        p.screenshot(path=artifacts / "overview-team.png", full_page=True)
    finally:
        context.close()
    assert watched.errors == []
