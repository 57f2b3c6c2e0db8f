"""`memsync daemon` as systemd runs it, live: with an hour-long interval, a change made in mnem or
on the Mem0 server reaches the other side within seconds, found by watching and probing.

The daemon is its own process; the server double (a real mem0 Memory) is served on a loopback
socket from this one; the agent writing mnem is a third process using the real SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import write_config
from tests.live_world import served_mem0_server
from tests.test_daemon import DaemonProcess
from tests.test_live_watch import DEADLINE, agent_writes, nodes_of, wait_until

CONFIG = """
[sync]
active = "server"
interval = "1h"
probe = "1s"

[backup]
interval = "1h"

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{home}/agents/{{user_id}}/memory"
create = true
"""


@pytest.fixture
def daemons() -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(home: Path) -> DaemonProcess:
        started.append(DaemonProcess(home))
        return started[-1]

    yield start
    for process in started:
        process.kill()


def test_the_daemon_carries_a_change_each_way_in_seconds_with_an_hour_long_interval(
    home: Path, daemons: Callable[..., DaemonProcess]
) -> None:
    with served_mem0_server() as server:
        server.add("alice likes tea", user_id="alice")
        write_config(home, CONFIG.format(url=server.url, home=home))
        daemon = daemons(home)
        daemon.wait_for_line("live: watching agents", timeout=DEADLINE)
        daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)  # the first full pass
        store = home / "agents" / "alice" / "memory"
        assert "alice likes tea" in nodes_of(store).values()

        server.add("alice walks to work", user_id="alice")  # found by the probe
        wait_until(lambda: "alice walks to work" in nodes_of(store).values(), "the server's add")

        agent_writes(store, "reads", "alice reads at night")  # found by the watcher
        wait_until(lambda: "alice reads at night" in server.texts("alice"), "the agent's node")

        code, took = daemon.stop()
    assert code == 0 and took < 10
    hinted = [line for line in daemon.lines if "for changes in agents[user_id=alice]" in line]
    assert hinted and "wrote 1" in hinted[0], daemon.lines
    assert not [line for line in daemon.lines if " ERROR " in line or "Traceback" in line]
