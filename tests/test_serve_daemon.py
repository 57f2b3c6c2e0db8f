"""The daemon serves the mnem store it syncs to an agent: the agent is never locked out, its
writes are its own commits and reach Mem0 at once, the store is handed over as the daemon starts
and stops, and a daemon killed mid-write never loses one silently.

Real processes throughout: ``memsync daemon`` is its own process, the Mem0 server double (a real
mem0 Memory) is served on a loopback socket from this one, the store is a real mnem store (the
SDK built from ../shared/mnem-sdk), and the agent is memsync's client in this process, exactly
as an application uses it.
"""

from __future__ import annotations

import gc
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_memsync, write_config
from tests.live_world import ServedServer, served_mem0_server
from tests.mnem_sdk import real_sdk
from tests.test_daemon import DaemonProcess
from tests.test_live_watch import DEADLINE, init_store, wait_until

CONFIG = """
[sync]
active = "server"
interval = "1h"
probe = "1s"
watch = false  # an agent's write through the daemon needs no watching: it is a change itself

[backup]
interval = "1h"

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "alice" }}

[providers.agent]
type = "mnem"
path = "{store}"
"""


@pytest.fixture
def world(home: Path) -> Iterator[tuple[ServedServer, Path]]:
    real_sdk()
    store = init_store(home / "agents" / "memory")
    with served_mem0_server() as server:
        write_config(home, CONFIG.format(url=server.url, store=store))
        yield server, store


@pytest.fixture
def daemons() -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(home: Path, **env: str) -> DaemonProcess:
        process = DaemonProcess(home, **env)
        started.append(process)
        process.wait_for_line("serving mnem stores to agents", timeout=DEADLINE)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture
def clients() -> Iterator[Callable[..., Any]]:
    from memsync.orchestration.serve.client import StoreClient

    made: list[StoreClient] = []

    def make(store: Path) -> StoreClient:
        made.append(StoreClient(store, client="test agent"))
        return made[-1]

    yield make
    for client in made:
        client.close()
    gc.collect()


def texts(server: ServedServer) -> set[str]:
    return server.texts("alice")


def held_here(store: Path) -> bool:
    """Whether this process holds the store (another program's open fails)."""
    mnem = real_sdk()
    from memsync.providers.mnem.holder import store_holder

    try:
        handle = mnem.open(str(store))
    except mnem.StoreIoError:
        return store_holder(store) is None  # the lock is taken, and not by another process
    del handle
    gc.collect()
    return False


def test_an_agents_write_through_the_daemon_is_its_own_commit_and_reaches_mem0_at_once(
    home: Path, world: tuple[ServedServer, Path], daemons: Callable[..., DaemonProcess], clients
) -> None:
    server, store = world
    server.add("alice likes tea", user_id="alice")
    daemon = daemons(home)
    daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
    agent = clients(store)
    assert agent.via_daemon

    written = agent.call(
        "remember",
        id="commute",
        content="alice walks to work",
        source="chat-7",
        step="triage",
        summary="learned from chat 7",
        author="support-agent",
    )
    wait_until(lambda: "alice walks to work" in texts(server), "the agent's write in Mem0")

    why = agent.call("why", id="commute")
    assert why["commit"] == written["commit"]
    assert why["node"]["content"] == "alice walks to work"
    assert why["node"]["provenance"]["source"] == "chat-7"
    assert why["node"]["provenance"]["agent_step"] == "triage"
    commit = next(c for c in agent.call("history") if c["id"] == written["commit"])
    assert (commit["author"], commit["message"]) == ("support-agent", "learned from chat 7")
    assert agent.call("whats_new", commit=written["commit"]) == {"commute": "added"}

    server.add("alice reads at night", user_id="alice")  # Mem0 -> the store the agent uses
    wait_until(
        lambda: (
            "alice reads at night" in {n["content"] for n in (agent.call("recall") or {}).values()}
        ),
        "Mem0's write through the agent's client",
    )
    assert "alice likes tea" in {n["content"] for n in agent.call("recall").values()}
    hinted = [line for line in daemon.lines if "for changes in agent" in line]
    assert hinted and "wrote 1" in hinted[0], daemon.lines
    assert not [line for line in daemon.lines if "busy" in line], daemon.lines
    code, _ = daemon.stop()
    assert code == 0
    assert not [line for line in daemon.lines if " ERROR " in line or "Traceback" in line]


def test_the_store_is_handed_to_the_daemon_when_it_starts_and_taken_back_when_it_stops(
    home: Path, world: tuple[ServedServer, Path], daemons: Callable[..., DaemonProcess], clients
) -> None:
    server, store = world
    agent = clients(store)  # no daemon: the store is opened here, as mnem's clients do
    assert not agent.via_daemon and held_here(store)
    agent.call("remember", id="n1", content="written before the daemon")

    daemon = daemons(home)
    wait_until(lambda: agent.via_daemon, "the client handing the store to the daemon")
    wait_until(lambda: "written before the daemon" in texts(server), "n1 in Mem0")
    agent.call("remember", id="n2", content="written through the daemon")
    wait_until(lambda: "written through the daemon" in texts(server), "n2 in Mem0")
    assert not [line for line in daemon.lines if "busy" in line], daemon.lines

    code, _ = daemon.stop()
    assert code == 0
    agent.call("remember", id="n3", content="written after the daemon stopped")  # no error
    assert not agent.via_daemon and held_here(store)

    daemons(home)  # started again: n3 is handed over and synced
    wait_until(lambda: agent.via_daemon, "the second handover")
    wait_until(lambda: "written after the daemon stopped" in texts(server), "n3 in Mem0")
    assert set(agent.call("recall")) >= {"n1", "n2", "n3"}


@pytest.mark.parametrize("point", ["serve:received", "serve:staged", "serve:committed"])
def test_a_daemon_killed_between_receiving_a_write_and_answering_it_never_loses_it_silently(
    home: Path,
    world: tuple[ServedServer, Path],
    daemons: Callable[..., DaemonProcess],
    clients,
    point: str,
) -> None:
    from memsync.orchestration.serve.client import WriteUnconfirmed

    server, store = world
    daemon = daemons(home, MEMSYNC_KILL_AT=f"{point}:1")
    daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
    agent = clients(store)
    assert agent.via_daemon

    with pytest.raises(WriteUnconfirmed, match="may or may not be in the store"):
        agent.call("remember", id="fact", content="alice moved to Lyon", author="support-agent")
    assert daemon.proc.wait(timeout=DEADLINE) == -signal.SIGKILL

    node = agent.call("recall", id="fact")  # the client took the store back to read it
    assert not agent.via_daemon
    committed = point == "serve:committed"
    assert (node is not None) == committed
    assert agent._store.staged() == [], "a staged leftover would ride on the next commit"

    restarted = daemons(home)
    wait_until(lambda: agent.via_daemon, "the handover to the restarted daemon")
    restarted.wait_for_line("sync #", timeout=DEADLINE)
    if committed:
        wait_until(lambda: "alice moved to Lyon" in texts(server), "the committed write in Mem0")
    else:
        agent.call("remember", id="after", content="a later write")
        wait_until(lambda: "a later write" in texts(server), "the later write in Mem0")
        assert "alice moved to Lyon" not in texts(server)
        assert agent.call("recall", id="fact") is None
    assert not [line for line in restarted.lines if "staged" in line], restarted.lines


def test_a_write_cut_short_whose_agent_gave_up_is_unstaged_by_the_restarted_daemon(
    home: Path, world: tuple[ServedServer, Path], daemons: Callable[..., DaemonProcess], clients
) -> None:
    """The agent was told WriteUnconfirmed and closed its client (its process ended): nobody
    took the store back, so the restarted daemon is the first to open it. Its recovery (the
    note of the write in flight) unstages the write before its first cycle or an agent's next
    commit could sweep it in."""
    from memsync.orchestration.serve.client import WriteUnconfirmed

    server, store = world
    daemon = daemons(home, MEMSYNC_KILL_AT="serve:staged:1")
    daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
    agent = clients(store)
    assert agent.via_daemon
    with pytest.raises(WriteUnconfirmed):
        agent.call("remember", id="fact", content="alice moved to Lyon", author="support-agent")
    assert daemon.proc.wait(timeout=DEADLINE) == -signal.SIGKILL
    agent.close()  # gives up: the client never takes the store back, so never recovers it

    mnem = real_sdk()  # what the killed daemon left: the write staged, and its note
    left = mnem.open(str(store))
    assert [node_id for node_id, _ in left.staged()] == ["fact"]
    del left
    gc.collect()
    notes = home / "state" / "serving"
    assert len(list(notes.glob("*.json"))) == 1

    restarted = daemons(home)
    restarted.wait_for_line("sync #", timeout=DEADLINE)  # its first cycle opened the store
    recovered = [line for line in restarted.lines if "cut short" in line]
    assert recovered, "the restarted daemon unstaged nothing:\n" + "\n".join(restarted.lines)
    assert "unstaged fact" in recovered[0]
    assert not list(notes.glob("*.json"))
    newcomer = clients(store)
    assert newcomer.via_daemon  # the daemon holds the store: this client recovers nothing
    newcomer.call("remember", id="after", content="a later write")
    wait_until(lambda: "a later write" in texts(server), "the later write in Mem0")
    assert "alice moved to Lyon" not in texts(server)
    assert newcomer.call("recall", id="fact") is None


def test_a_store_memsync_does_not_sync_is_opened_by_the_client_itself(
    home: Path, world: tuple[ServedServer, Path], daemons: Callable[..., DaemonProcess], clients
) -> None:
    daemons(home)
    other = init_store(home / "elsewhere" / "memory")
    agent = clients(other)
    assert not agent.via_daemon and held_here(other)
    assert agent.call("remember", id="x", content="kept here")["commit"]


def test_the_socket_is_private_to_its_user(
    home: Path, world: tuple[ServedServer, Path], daemons: Callable[..., DaemonProcess]
) -> None:
    daemons(home)
    sock = home / "run" / "serve.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700


def test_memsync_sync_beside_a_served_store_says_the_daemon_holds_it_and_syncs_it(
    home: Path, world: tuple[ServedServer, Path], daemons: Callable[..., DaemonProcess], clients
) -> None:
    _, store = world
    daemon = daemons(home)
    daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
    agent = clients(store)
    assert agent.via_daemon
    config = home / "config" / "config.toml"
    config.write_text(config.read_text() + 'busy_timeout = "1s"\n')  # under [providers.agent]
    done = run_memsync(home, "sync")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "is held by the memsync daemon" in done.stdout
    assert "serves it to agents and syncs it itself" in done.stdout


def test_memsync_mcp_on_a_missing_store_is_one_clear_line(home: Path) -> None:
    real_sdk()
    done = run_memsync(home, "mcp", "--store", str(home / "no-store-here"))
    assert done.returncode == 5
    assert done.stderr.startswith("memsync: error: cannot open the mnem store at ")
    assert "--store" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


TEAM_CONFIG = """
[sync]
active = "server"
interval = "1h"
probe = "1s"
watch = false

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{store}"   # one store: every user in a namespace of their own
layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"] }}
"""


def test_a_put_into_a_team_store_the_daemon_serves_reaches_mem0_as_text_for_that_user_alone(
    home: Path, daemons: Callable[..., DaemonProcess]
) -> None:
    real_sdk()
    from memsync.langgraph import MnemosyneStore

    store = init_store(home / "agents" / "memory")
    with served_mem0_server() as server:
        write_config(home, TEAM_CONFIG.format(url=server.url, store=store))
        server.add("alice likes tea", user_id="alice")
        server.add("bob likes coffee", user_id="bob")
        daemon = daemons(home)
        daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
        app = MnemosyneStore(str(store))
        try:
            assert app._client.via_daemon
            app.put(("memories", "bob"), "k1", {"content": "bob walks to work", "topic": "commute"})
            wait_until(lambda: "bob walks to work" in server.texts("bob"), "bob's put in Mem0")
            assert server.texts("alice") == {"alice likes tea"}
            found = app.search(("memories", "bob"), filter={"topic": "commute"})
            assert [item.value["content"] for item in found] == ["bob walks to work"]
        finally:
            app.close()
        daemon.wait_for_line("for changes in agents", timeout=DEADLINE)  # logged as it ends
        hinted = [line for line in daemon.lines if "for changes in agents" in line]
        assert hinted and "agents[user_id=bob]" in hinted[0], "\n".join(daemon.lines)
        assert "user_id=alice" not in hinted[0], hinted[0]
        code, _ = daemon.stop()
    assert code == 0
    assert not [line for line in daemon.lines if " ERROR " in line or "Traceback" in line]
