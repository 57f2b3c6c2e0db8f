"""A real ``memsync sync`` SIGKILLed while eight writes to the Mem0 Platform are in flight,
then run again: the Platform and the local copy converge with no memory lost or doubled.

The Platform double is served over a real loopback socket by uvicorn in this process; memsync
runs as its own process with ``concurrency = 8`` and a little latency on every request, so
when the kill lands (after the Nth recorded outcome) other writes are on the wire and some
outcomes were never recorded. The next run must find those writes by their origin markers
instead of writing them again.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from memsync.base.records import Outgoing
from memsync.providers.pmm_dir import PmmDirProvider
from tests.conftest import run_memsync, write_config
from tests.doubles.mem0_platform_app import Mem0PlatformDouble

KEY = "m0-crash-key-0123456789"
N = 120


@pytest.fixture
def platform() -> Iterator[tuple[Mem0PlatformDouble, str]]:
    double = Mem0PlatformDouble(api_key=KEY, metadata_mode="merge")
    double.faults.latency = 0.02  # writes overlap: several are in flight at any moment
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
        yield double, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def configure(home: Path, url: str) -> None:
    (home / "config").mkdir(parents=True)
    write_config(
        home,
        '[sync]\nactive = "local"\n'
        f'[providers.local]\ntype = "pmm-dir"\npath = "{home / "local"}"\nscope_key = "alice"\n'
        f'[providers.platform]\ntype = "mem0-platform"\nbase_url = "{url}"\n'
        'api_key_env = "CRASH_MEM0_KEY"\nscope = { user_id = "alice" }\nconcurrency = 8\n',
    )
    local = PmmDirProvider("local", home / "local", scope_key="alice")
    local.open()
    for i in range(N):
        local.create(Outgoing(origin=f"pmm:{i}", content=f"memory {i}", scope_key="alice"))
    local.close()


@pytest.mark.parametrize("after", [1, 37, 95])
def test_a_kill_among_concurrent_writes_converges_with_nothing_lost_or_doubled(
    platform: tuple[Mem0PlatformDouble, str], tmp_path: Path, after: int
) -> None:
    double, url = platform
    home = tmp_path / "home"
    configure(home, url)
    env = {"CRASH_MEM0_KEY": KEY}
    killed = run_memsync(
        home, "sync", env_extra={**env, "MEMSYNC_KILL_AT": f"replay:result:{after}"}
    )
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-500:])
    landed = len(double.memories)
    assert after <= landed < N  # killed mid-batch: some writes landed, not all
    again = run_memsync(home, "sync", "--json", env_extra=env)
    assert again.returncode == 0, (again.stdout[-2000:], again.stderr[-2000:])
    quiet = run_memsync(home, "sync", "--json", env_extra=env)
    assert json.loads(quiet.stdout)["actions_total"] == 0  # nothing left to do
    held = Counter(m["memory"] for m in double.memories.values())
    assert held == Counter(f"memory {i}" for i in range(N))  # each exactly once
    local = PmmDirProvider("local", home / "local", scope_key="alice")
    local.open()
    contents = Counter(r.content for page in local.listing().pages() for r in page.records)
    assert contents == Counter(f"memory {i}" for i in range(N))
