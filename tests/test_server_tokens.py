"""Bearer tokens that last as long as the daemon: memsync renews upstream's 30-minute JWTs
through ``POST /auth/refresh``, keeping the single-use refresh token in ``refresh_token_file``.

The double's tokens expire on a clock the test moves (``server.clock.advance``): no sleeps.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from memsync.base.errors import AuthError, ConfigError
from memsync.config import parse_config
from memsync.engine.report import SyncOptions
from memsync.providers import build_provider
from memsync.providers.base import WriteOp
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore
from tests.contract import item, list_all
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.engine_helpers import config_for

ADMIN = "admin-key-0123456789abcdef"
HALF_HOUR = 30 * 60
FAST = RetryPolicy(attempts=2, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)


@pytest.fixture
def server() -> Mem0ServerDouble:
    return Mem0ServerDouble(api_key=ADMIN)


def token_file(tmp_path: Path, server: Mem0ServerDouble) -> Path:
    path = tmp_path / "mem0.refresh"
    path.write_text(server.login_tokens()["refresh_token"] + "\n")
    path.chmod(0o600)
    return path


def make(
    server: Mem0ServerDouble, path: Path, name: str = "m0", **kwargs: Any
) -> Mem0ServerProvider:
    return Mem0ServerProvider(
        name,
        "https://mem0.test",
        {"user_id": "alice"},
        auth="bearer",
        refresh_token_file=path,
        transport=server.transport(),
        retry=FAST,
        sleep=lambda s: None,
        **kwargs,
    )


def test_an_expired_token_is_renewed_and_the_request_sent_again(
    server: Mem0ServerDouble, tmp_path: Path
) -> None:
    path = token_file(tmp_path, server)
    first_refresh = path.read_text().strip()
    provider = make(server, path)
    provider.create(item("before expiry", origin="mnem:1"))
    assert server.auth.refreshes == 1  # no access token yet: one renewal to start
    rotated = path.read_text().strip()
    assert rotated != first_refresh  # the spent token was replaced by the new one
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    server.clock.advance(HALF_HOUR + 1)  # every access token issued so far is dead
    provider.create(item("after expiry", origin="mnem:2"))  # a POST: a 401 acted on nothing
    assert server.auth.refreshes == 2
    assert path.read_text().strip() != rotated
    refused = [s for s in server.faults.requests("POST", "/memories")]
    assert len(refused) == 3  # the first POST after expiry was answered 401 and sent again
    assert sorted(r.content for r in list_all(provider)[0]) == ["after expiry", "before expiry"]


def test_a_daemon_lives_past_many_token_lifetimes(server: Mem0ServerDouble, tmp_path: Path) -> None:
    """Eight cycles 20 minutes apart, as a daemon runs them: each cycle works, and memsync
    renews only when the server says the token expired, not every cycle."""
    path = token_file(tmp_path, server)
    source = MemoryProvider("source", scope="alice")
    config = config_for({"source": "both", "remote": "both"}, "source")
    for hour in range(8):
        source.app_add(f"memory {hour}")
        remote = make(server, path, "remote")  # the daemon builds its providers each cycle
        with StagingStore.open(tmp_path / "staging.db") as store:
            report = config.engine(store, {"source": source, "remote": remote}).run_cycle(
                SyncOptions()
            )
        assert report.exit_code == 0, report.as_dict()
        server.clock.advance(20 * 60)
    # the first token, then at 40, 80 and 120 minutes: once per expiry, not once per cycle
    assert server.auth.refreshes == 4
    assert len(list_all(make(server, path))[0]) == 8


def test_concurrent_writers_renew_once(server: Mem0ServerDouble, tmp_path: Path) -> None:
    path = token_file(tmp_path, server)
    provider = make(server, path, concurrency=8)
    provider.features()  # the schema and a first token, before the clock moves
    list_all(provider)
    server.clock.advance(HALF_HOUR + 1)
    server.faults.latency = 0.05  # all eight are on the wire with the dead token at once
    ops = [WriteOp("create", f"c{i}", item=item(f"m{i}", origin=f"mnem:{i}")) for i in range(16)]
    results = list(provider.write_many(ops))
    assert all(r.error is None for r in results), [r.error for r in results]
    assert server.auth.refreshes == 2  # the first token, then one renewal for all 8 workers


def test_two_processes_sharing_the_file_never_spend_the_same_token(
    server: Mem0ServerDouble, tmp_path: Path
) -> None:
    """Each renewal reads the file under its lock: a second holder (the daemon beside a
    `memsync sync` run by hand) picks up the token the first one wrote."""
    path = token_file(tmp_path, server)
    one = make(server, path)
    list_all(one)
    from memsync.providers.mem0 import server_tokens

    server_tokens._HELD.clear()  # a fresh process: it holds no access token of its own
    two = make(server, path)
    list_all(two)
    server.clock.advance(HALF_HOUR + 1)
    errors: list[BaseException] = []

    def cycle(provider: Mem0ServerProvider) -> None:
        try:
            provider.close()
            list_all(provider)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=cycle, args=(p,)) for p in (one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


def test_a_spent_refresh_token_says_to_log_in_again(
    server: Mem0ServerDouble, tmp_path: Path
) -> None:
    path = token_file(tmp_path, server)
    spent = path.read_text().strip()
    server.auth.refresh("elsewhere", spent)  # someone else used it first
    with pytest.raises(AuthError) as caught:
        list_all(make(server, path))
    message = str(caught.value)
    assert "Refresh token is no longer valid." in message
    assert "POST /auth/login" in message and str(path) in message
    assert spent not in message and "\n" not in message


def test_the_refresh_token_is_never_taken_from_the_config(tmp_path: Path) -> None:
    base = """
[sync]
active = "m0"
[providers.m0]
type = "mem0-server"
base_url = "https://mem0.example.com"
scope = { user_id = "alice" }
auth = "bearer"
"""
    with pytest.raises(ConfigError, match="never read from the config"):
        parse_config(base + 'refresh_token = "eyJhbGciOiJIUzI1NiJ9.x.y"\n')
    with pytest.raises(ConfigError, match="refresh_token_file"):
        parse_config(
            base.replace('auth = "bearer"', 'auth = "api-key"') + 'refresh_token_file = "t"\n'
        )
    config = parse_config(base + f'refresh_token_file = "{tmp_path / "t"}"\n')
    provider = build_provider("m0", config)
    assert isinstance(provider, Mem0ServerProvider)


def test_a_static_bearer_token_that_expired_points_to_refresh_and_api_keys(
    server: Mem0ServerDouble,
) -> None:
    token = server.login_tokens()["access_token"]
    from memsync.base.secrets import Secret

    provider = Mem0ServerProvider(
        "m0",
        "https://mem0.test",
        {"user_id": "alice"},
        secret=Secret(token, "$MEM0_TOKEN"),
        auth="bearer",
        transport=server.transport(),
        retry=FAST,
    )
    server.clock.advance(HALF_HOUR + 1)
    with pytest.raises(AuthError) as caught:
        list_all(provider)
    message = str(caught.value)
    assert "Invalid or expired token." in message and "30 minutes" in message
    assert "refresh_token_file" in message and 'auth = "api-key"' in message
    assert token not in message


def test_a_daemon_refuses_a_static_token_that_dies_in_30_minutes(
    server: Mem0ServerDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsync.providers.mem0.server_tokens import require_lasting_credentials
    from tests.conftest import run_memsync, write_config

    text = """
[sync]
active = "m0"
[providers.m0]
type = "mem0-server"
base_url = "https://mem0.example.com"
scope = { user_id = "alice" }
auth = "bearer"
"""
    token = server.login_tokens()["access_token"]
    monkeypatch.setenv("MEM0_TOKEN", token)
    static = parse_config(text + 'api_key_env = "MEM0_TOKEN"\n')
    with pytest.raises(ConfigError, match="refresh_token_file") as caught:
        require_lasting_credentials(static)
    assert "$MEM0_TOKEN" in str(caught.value) and token not in str(caught.value)
    require_lasting_credentials(parse_config(text + f'refresh_token_file = "{tmp_path}/t"\n'))
    monkeypatch.setenv("MEM0_TOKEN", "an-opaque-token-of-another-server")
    require_lasting_credentials(static)  # no expiry to read: let through

    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    write_config(home, text + 'api_key_env = "MEM0_TOKEN"\n')
    started = run_memsync(home, "daemon", env_extra={"MEM0_TOKEN": token})
    assert started.returncode == 2
    assert "refresh_token_file" in started.stderr and token not in started.stderr
