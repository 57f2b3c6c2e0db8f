"""`memsync sync` against a Mem0 server, as a user runs it: a failure is one line per
provider and cycle, on stdout with the report (stderr stays empty), with the server's own
reason, and the exit code the README promises (5 for a provider error). A team of twenty
costs one schema read per cycle, not one per user.

The server double is served over a real loopback socket by uvicorn in this process, and
memsync runs as a process of its own.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from memsync.base.secrets import Secret
from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.conftest import run_memsync, write_config
from tests.doubles.mem0_server_app import Mem0ServerDouble

ADMIN = "admin-key-0123456789abcdef"
WRONG = "m0sk_a-key-this-server-never-issued-0123"


def serve(double: Mem0ServerDouble) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(double.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def team() -> Mem0ServerDouble:
    double = Mem0ServerDouble(api_key=ADMIN)
    for user in ("alice", "bob"):
        double.insert_many([f"{user} likes tea"], user_id=user)
    return double


@pytest.fixture
def url(team: Mem0ServerDouble) -> Iterator[str]:
    yield from serve(team)


def configure(home: Path, url: str) -> None:
    (home / "config").mkdir(parents=True)
    write_config(
        home,
        f'[sync]\nactive = "cloud"\n[providers.cloud]\ntype = "mem0-server"\n'
        f'base_url = "{url}"\napi_key_env = "MEM0_SERVER_KEY"\nscope = {{ user_id = "*" }}\n'
        f'[providers.backup]\ntype = "pmm-dir"\npath = "{home / "backup"}"\n'
        'direction = "push"\n',
    )


def test_a_wrong_key_is_one_line_once_on_stdout_with_exit_5(url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    configure(home, url)
    good = run_memsync(home, "sync", env_extra={"MEM0_SERVER_KEY": ADMIN})
    assert good.returncode == 0, good.stdout + good.stderr  # two scopes known from now on
    bad = run_memsync(home, "sync", env_extra={"MEM0_SERVER_KEY": WRONG})
    assert bad.returncode == 5, bad.stdout + bad.stderr
    assert bad.stderr == ""
    failing = [line for line in bad.stdout.splitlines() if "HTTP 401" in line]
    assert failing == [
        f"cloud: {url} refused the key from $MEM0_SERVER_KEY (HTTP 401: Invalid API key.): it "
        "is wrong, expired or revoked; give memsync the server's ADMIN_API_KEY or an API key "
        "from its dashboard (m0sk_...)"
    ]
    assert "only the admin" not in bad.stdout and "cloud: cloud" not in bad.stdout
    assert WRONG not in bad.stdout


def test_rows_memsync_cannot_read_are_an_error_not_zero_scopes(tmp_path: Path) -> None:
    double = Mem0ServerDouble(api_key=ADMIN, qdrant_list_bug=True)
    double.insert_many(["alice likes tea"], user_id="alice")
    home = tmp_path / "home"
    for url in serve(double):
        configure(home, url)
        result = run_memsync(home, "sync", env_extra={"MEM0_SERVER_KEY": ADMIN})
    assert result.returncode == 5 and result.stderr == ""
    assert "0 scope(s)" not in result.stdout
    (line,) = [line for line in result.stdout.splitlines() if "has no id" in line]
    assert line.startswith("cloud: GET /memories without ids, row 0, has no id")


def test_a_team_of_twenty_reads_the_schema_once_per_cycle(tmp_path: Path) -> None:
    """Twenty users: one /openapi.json, one /entities and one listing per user, per cycle
    (the schema was 37% of all requests when it was read once per scope)."""
    from tests.test_server_discovery import config

    double = Mem0ServerDouble(api_key=ADMIN)
    for n in range(20):
        double.insert_many([f"user {n} memory {i}" for i in range(5)], user_id=f"user{n}")
    cfg = config(tmp_path)
    for _ in range(2):
        before = len(double.faults.seen)
        cloud = Mem0ServerProvider(
            "cloud",
            "https://mem0.test",
            {"user_id": "*"},
            secret=Secret(ADMIN, "$MEM0_SERVER_KEY"),
            transport=double.transport(),
            retry=RetryPolicy(attempts=2),
        )
        backup = PmmDirProvider("backup", cfg.providers["backup"].path)
        with StagingStore.open(tmp_path / "staging.db") as store:
            report = run_scoped_cycle(cfg, store, {"cloud": cloud, "backup": backup}, SyncOptions())
        assert report.exit_code == 0, report.as_dict()
        asked = Counter((s.method, s.path) for s in double.faults.seen[before:])
        assert asked == {
            ("GET", "/openapi.json"): 1,
            ("GET", "/entities"): 1,
            ("GET", "/memories"): 20,
        }
