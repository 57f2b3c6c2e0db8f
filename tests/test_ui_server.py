"""The status page's server over real HTTP: the token, CSRF, loopback, and plain errors."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memsync.base.errors import MemsyncError
from memsync.base.lock import cycle_lock
from memsync.base.paths import resolve_paths
from memsync.orchestration.ui.auth import csrf_token, load_or_create_token, token_path
from memsync.orchestration.ui.server import UiServer
from tests.test_daemon import DaemonProcess
from tests.ui_world import CutoverWorld, build_cutover, write_cutover_config


@pytest.fixture
def server(home: Path) -> Iterator[UiServer]:
    ui = UiServer(resolve_paths(), "127.0.0.1", 0)
    ui.start_in_thread()
    yield ui
    ui.stop()


@pytest.fixture
def world(home: Path) -> CutoverWorld:
    return build_cutover(home)


def authorised(server: UiServer) -> httpx.Client:
    return httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"token {server.token}"}, timeout=60
    )


def test_the_token_is_random_private_and_kept(home: Path) -> None:
    paths = resolve_paths()
    first = load_or_create_token(paths)
    assert stat.S_IMODE(token_path(paths).stat().st_mode) == 0o600
    assert load_or_create_token(paths) == first and len(first) >= 40
    token_path(paths).write_text("")  # a crash while writing it
    assert load_or_create_token(paths) != first


def test_every_path_needs_the_token(server: UiServer) -> None:
    for path in ("/", "/conflicts", "/static/app.js", "/api/status", "/api/conflicts"):
        response = httpx.get(server.base_url + path)
        assert response.status_code == 403, path
        assert server.token not in response.text
    assert httpx.get(f"{server.base_url}/?token=wrong").status_code == 403
    assert httpx.post(f"{server.base_url}/api/resolve", json={"id": 1}).status_code == 403


def test_the_link_trades_its_token_for_a_cookie(server: UiServer) -> None:
    with httpx.Client(base_url=server.base_url) as client:
        response = client.get(f"/?token={server.token}")
        assert response.status_code == 303 and response.headers["location"] == "/"
        assert "HttpOnly" in response.headers["set-cookie"]
        assert "SameSite=Strict" in response.headers["set-cookie"]
        page = client.get("/")
        assert page.status_code == 200 and csrf_token(server.token) in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert client.get("/api/status").status_code == 200
        deep = client.get(f"/memory?id=app%3Aalice-0&token={server.token}")
        assert deep.headers["location"] == "/memory?id=app%3Aalice-0"  # the rest of the link stays


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(
    world: CutoverWorld, server: UiServer
) -> None:
    with authorised(server) as client:
        body = {"id": world.conflict_id, "keep": "new"}
        missing = client.post("/api/resolve", json=body)
        wrong = client.post("/api/resolve", json=body, headers={"X-CSRF-Token": "0" * 64})
        foreign = client.post(
            "/api/resolve",
            json=body,
            headers={"X-CSRF-Token": server.csrf, "Origin": "http://evil.example"},
        )
    for response in (missing, wrong, foreign):
        assert response.status_code == 403
        assert response.json()["error"].startswith("refused")
    code, out = world.memsync("conflicts", "--json")
    assert code == 0, out
    assert [c["state"] for c in json.loads(out)] == ["open"]


def test_refused_posts_leave_their_connection_usable(world: CutoverWorld, server: UiServer) -> None:
    """Each refused POST is answered on a connection the client may reuse, a body too long
    to keep among them; one too long even to read is refused and its connection closed."""
    with authorised(server) as client:
        for _ in range(20):
            assert client.post("/api/resolve", json={"id": world.conflict_id}).status_code == 403
        assert client.get("/api/status").status_code == 200
        huge = client.post(
            "/api/resolve",
            content=b"{" + b" " * 70000 + b"}",
            headers={"Content-Type": "application/json", "X-CSRF-Token": server.csrf},
        )
        assert huge.status_code == 413 and "connection" not in huge.headers
        assert client.get("/api/status").status_code == 200
    with socket.create_connection(server.server_address[:2]) as raw:
        raw.sendall(
            b"POST /api/resolve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999\r\n"
            + f"Authorization: token {server.token}\r\nX-CSRF-Token: {server.csrf}\r\n".encode()
            + b"Content-Type: application/json\r\n\r\n"  # no byte of it: nothing to reset
        )
        answer = raw.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 413") and b"Connection: close" in answer


def test_a_rebound_host_name_is_refused(server: UiServer) -> None:
    with authorised(server) as client:
        response = client.get("/api/status", headers={"Host": "attacker.example"})
    assert response.status_code == 403


def test_a_non_loopback_address_needs_allow_remote(home: Path) -> None:
    with pytest.raises(MemsyncError, match="allow_remote"):
        UiServer(resolve_paths(), "0.0.0.0", 0)
    remote = UiServer(resolve_paths(), "0.0.0.0", 0, allow_remote=True)
    try:
        remote.start_in_thread()
        url = f"http://127.0.0.1:{remote.server_address[1]}/api/status"
        assert httpx.get(url).status_code == 403  # still only with the token
        assert httpx.get(url, headers={"Authorization": f"token {remote.token}"}).is_success
    finally:
        remote.stop()


def test_missing_database_and_config_errors_are_plain_sentences(
    home: Path, server: UiServer
) -> None:
    with authorised(server) as client:
        status = client.get("/api/status").json()
        conflicts = client.get("/api/conflicts")
    assert "no config file" in status["config"]["error"]
    assert status["database"]["exists"] is False
    assert conflicts.status_code == 409
    assert conflicts.json() == {
        "error": f"{home / 'state' / 'staging.db'}: no staging database yet; "
        "run `memsync sync` first"
    }
    write_cutover_config(home)
    (home / "config" / "config.toml").write_text("[sync\n")
    with authorised(server) as client:
        status = client.get("/api/status").json()
        verify = client.post(
            "/api/verify", json={"a": "old", "b": "new"}, headers={"X-CSRF-Token": server.csrf}
        )
    assert "invalid TOML" in status["config"]["error"]
    assert "invalid TOML" in verify.json()["error"] and "Traceback" not in verify.text


def test_resolving_while_a_cycle_runs_says_so_and_keeps_the_choice(
    world: CutoverWorld, server: UiServer
) -> None:
    server.lock_wait = 1.0
    lock = cycle_lock(resolve_paths())
    lock.acquire()
    try:
        with authorised(server) as client:
            status = client.get("/api/status").json()
            response = client.post(
                "/api/resolve",
                json={"id": world.conflict_id, "keep": "old"},
                headers={"X-CSRF-Token": server.csrf},
            )
    finally:
        lock.release()
    assert status["cycle"]["running"] is True
    assert response.status_code == 200 and response.json()["busy"] is True
    assert "next cycle applies it" in response.json()["message"]
    code, out = world.memsync("conflicts", "--json")
    assert code == 0, out
    assert [(c["state"], c["winner"]) for c in json.loads(out)] == [("resolving", "old")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_daemon_serves_the_page_when_the_config_asks(world: CutoverWorld) -> None:
    port = free_port()
    config = world.home / "config" / "config.toml"
    config.write_text(config.read_text() + f'\n[ui]\nlisten = "127.0.0.1:{port}"\n')
    daemon = DaemonProcess(world.home)
    try:
        daemon.wait_for_line(f"status page on http://127.0.0.1:{port}", timeout=60)
        code, link = world.memsync("ui", "--url")
        assert code == 0 and link.strip().startswith(f"http://127.0.0.1:{port}/?token=")
        with httpx.Client(timeout=60, follow_redirects=True) as client:
            assert client.get(f"http://127.0.0.1:{port}/api/status").status_code == 403
            page = client.get(link.strip())  # follows the redirect with the cookie
            status = client.get(f"http://127.0.0.1:{port}/api/status").json()
        assert page.status_code == 200 and status["daemon"]["running"] is True
        code, _ = daemon.stop()
        assert code == 0
    finally:
        daemon.kill()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=10)


def test_memsync_ui_prints_the_link_and_serves_until_stopped(world: CutoverWorld) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "memsync", "ui", "--listen", "127.0.0.1:0"],
        env={**os.environ, "MEMSYNC_HOME": str(world.home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        link = lines[2].strip()
        assert link.startswith("http://127.0.0.1:") and "/?token=" in link
        assert link.endswith(token_path(resolve_paths()).read_text().strip())
        with httpx.Client(timeout=60, follow_redirects=True) as client:
            assert client.get(link).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "Traceback" not in err


def test_memsync_ui_refuses_a_public_address_in_one_line(world: CutoverWorld) -> None:
    code, out = world.memsync("ui", "--listen", "0.0.0.0:8767")
    assert code == 1
    assert "is not a loopback address" in out and "allow_remote" in out


def test_a_team_of_hundreds_is_summarised_and_paged_not_sent_whole(home: Path) -> None:
    """/api/status answered 1 MB for 500 scopes, every five seconds, and the page drew a row
    per scope and provider. Now a team's provider comes folded, with its first 50 scopes, and
    /api/scopes serves the rest a page at a time, or only the scopes needing attention."""
    from tests.ui_world import build_team

    build_team(home, 120)
    ui = UiServer(resolve_paths(), "127.0.0.1", 0)
    ui.start_in_thread()
    client = httpx.Client(base_url=ui.base_url, headers={"Authorization": f"token {ui.token}"})
    try:
        answer = client.get("/api/status")
        status = answer.json()
        server = status["providers"]["server"]
        assert server["scope_count"] == 120 and server["records"] == 120
        assert len(server["scopes"]) == 50 and "user_id=u0000" in server["scopes"]
        assert not any("[" in name for name in status["providers"])  # folded, not a row each
        assert server["state"]["kind"] == "ok"
        assert len(answer.content) < 40_000
        page = client.get("/api/scopes", params={"provider": "server", "offset": 100}).json()
        assert page["total"] == 120 and [r["scope"] for r in page["scopes"]] == [
            f"user_id=u{n:04d}" for n in range(100, 120)
        ]
        assert all(r["records"] == 1 and r["state"]["kind"] == "ok" for r in page["scopes"])
        calm = client.get("/api/scopes", params={"provider": "server", "attention": "1"})
        assert calm.json()["total"] == 0
        [run] = client.get("/api/history").json()  # a team's scopes summed into its provider
        assert set(run["providers"]) == {"server", "backup"}
        assert run["providers"]["backup"]["written"] == 120
        refused = client.get("/api/scopes")
        assert refused.status_code == 409 and "provider=NAME" in refused.json()["error"]
    finally:
        client.close()
        ui.stop()
