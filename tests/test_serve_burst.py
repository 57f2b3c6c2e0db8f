"""Every agent is served: a hundred clients made at the same moment are all served by the daemon.

Issue 40 saw twelve processes start together beside a running daemon: the daemon listened with
socketserver's backlog of 5, a client whose connect met the full backlog (EAGAIN) took it for
a dead daemon's socket, then waited on the store's lock, which the daemon held, and failed
after 10 s with mnem's ``Database already open``.

Real processes: ``memsync daemon`` serving one team store (the LangGraph layout), the Mem0
server double on a loopback socket in this process, and four agent processes of 25 threads
each, every thread making its own ``memsync.langgraph.MnemosyneStore`` when this process says
go, as an application's workers do when it starts.
"""

from __future__ import annotations

import errno
import gc
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memsync.base.lock import daemon_lock
from memsync.base.paths import resolve_paths
from memsync.config import parse_config
from memsync.providers.held import HeldStores
from tests.conftest import subprocess_env, write_config
from tests.live_world import served_mem0_server
from tests.mnem_sdk import real_sdk
from tests.test_daemon import DaemonProcess
from tests.test_live_watch import DEADLINE, init_store
from tests.test_serve_daemon import TEAM_CONFIG

PROCESSES = 4
THREADS = 25  # a hundred clients in all

AGENTS = """
import json, sys, threading, time, traceback
from memsync.langgraph import MnemosyneStore

store, threads = sys.argv[1], int(sys.argv[2])
go = threading.Event()
served, failed, took, paused = [], [], [], []
real_sleep = time.sleep

def pause(seconds):  # a connect that met a full backlog, or a client asking the daemon again
    if sys._getframe(1).f_code.co_name in ("connect", "_connect_or_open", "_open_here"):
        paused.append(seconds)
    real_sleep(seconds)

time.sleep = pause

def agent(number):
    go.wait()
    started = time.monotonic()
    try:
        app = MnemosyneStore(store)
        try:
            app.get(("memories", "alice"), "nothing-here")
            (served if app._client.via_daemon else failed).append(
                number if app._client.via_daemon else f"{number}: opened the store itself"
            )
        finally:
            app.close()
    except Exception as exc:
        failed.append(f"{number}: {type(exc).__name__}: {exc}")
    took.append(time.monotonic() - started)

workers = [threading.Thread(target=agent, args=(n,)) for n in range(threads)]
for worker in workers:
    worker.start()
print("ready", flush=True)
sys.stdin.readline()
go.set()
for worker in workers:
    worker.join()
print(json.dumps({"served": len(served), "failed": failed, "slowest": max(took),
                  "paused": len(paused)}), flush=True)
"""


def test_a_hundred_clients_made_at_once_are_all_served_by_the_daemon(home: Path) -> None:
    real_sdk()
    store = init_store(home / "agents" / "memory")
    with served_mem0_server() as server:
        server.add("alice likes tea", user_id="alice")
        write_config(home, TEAM_CONFIG.format(url=server.url, store=store))
        daemon = DaemonProcess(home)
        try:
            daemon.wait_for_line("serving mnem stores to agents", timeout=DEADLINE)
            daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
            agents = [
                subprocess.Popen(
                    [sys.executable, "-c", AGENTS, str(store), str(THREADS)],
                    env=subprocess_env(MEMSYNC_HOME=str(home)),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for _ in range(PROCESSES)
            ]
            for agent in agents:  # every process imported memsync and started its threads
                assert agent.stdout is not None and agent.stdout.readline() == "ready\n"
            started = time.monotonic()
            for agent in agents:
                assert agent.stdin is not None
                agent.stdin.write("go\n")
                agent.stdin.flush()
            results = [json.loads(agent.communicate(timeout=DEADLINE)[0]) for agent in agents]
            took = time.monotonic() - started
            code, _ = daemon.stop()
        finally:
            daemon.kill()
    failed = [line for result in results for line in result["failed"]]
    assert not failed, f"{len(failed)} failed: {sorted(set(f.split(': ', 1)[1] for f in failed))}"
    assert sum(result["served"] for result in results) == PROCESSES * THREADS
    # ...at once: the daemon's backlog holds the burst, so no client waited for room (EAGAIN)
    # nor asked again (a backlog of 5 still serves them all, after seconds of back-off)
    assert sum(result["paused"] for result in results) == 0
    assert code == 0
    assert not [line for line in daemon.lines if " ERROR " in line or "Traceback" in line]
    print(
        f"100 clients served in {took:.1f}s (slowest client {max(r['slowest'] for r in results):.1f}s)"
    )


def test_a_connect_that_meets_a_full_backlog_waits_for_room_instead_of_giving_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener whose backlog is full answers EAGAIN at once (what 95 of 100 agents met):
    ``wire.connect`` pauses and tries again, and gets in once the daemon takes the waiting
    connections; a socket no one listens on is still refused at once."""
    from memsync.orchestration.serve import wire

    path = tmp_path / "serve.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    fillers = []
    while True:  # fill the backlog as a burst of clients does
        filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        filler.setblocking(False)
        try:
            filler.connect(str(path))
        except BlockingIOError:
            filler.close()
            break
        fillers.append(filler)
    paused = threading.Event()
    real_sleep = time.sleep

    def pause(seconds: float) -> None:
        paused.set()  # the connect met the full backlog and is waiting for room
        real_sleep(seconds)

    monkeypatch.setattr(wire.time, "sleep", pause)
    got: list[socket.socket] = []
    gave_up: list[OSError] = []

    def connect() -> None:
        try:
            got.append(wire.connect(path, 30))
        except OSError as exc:
            gave_up.append(exc)
            paused.set()  # nothing to wait for

    connecting = threading.Thread(target=connect)
    connecting.start()
    assert paused.wait(DEADLINE), "the connect never met the full backlog"
    assert not gave_up, f"the connect gave up on a live listener at once: {gave_up[0]!r}"
    accepted = [listener.accept()[0] for _ in fillers]  # the daemon takes what waited
    connecting.join(DEADLINE)
    assert got, "the connect gave up on a live listener"
    listener.accept()[0].close()
    for sock in [*got, *fillers, *accepted, listener]:
        sock.close()
    with pytest.raises(ConnectionRefusedError):  # nobody listens on a dead daemon's socket
        wire.connect(path, 30)


ONE_STORE = """
[sync]
active = "agents"

[providers.agents]
type = "mnem"
path = "{store}"
"""


def test_a_live_daemon_a_client_could_not_reach_is_asked_again_not_bypassed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon is alive (it holds its lock) but the first connect fails as a backlog still
    full past its patience does: the client asks the daemon again, and is served, rather than
    open the store itself (and lock the daemon out of it, as issue 40's agents did)."""
    real_sdk()
    from memsync.langgraph import MnemosyneStore
    from memsync.orchestration.serve import client
    from memsync.orchestration.serve.server import StoreServer  # the mnem SDK's: after real_sdk

    store = init_store(home / "agents" / "memory")
    write_config(home, ONE_STORE.format(store=store))
    paths = resolve_paths()
    paths.ensure()
    alive = daemon_lock(paths)
    alive.acquire()
    held = HeldStores()
    config = parse_config(ONE_STORE.format(store=store))
    serving = StoreServer(paths, config, held=held, on_write=lambda _hint: None)
    serving.start()
    real_connect = client.connect
    refused: list[Path] = []

    def full_at_first(path: Path, timeout: float | None) -> socket.socket:
        if not refused:
            refused.append(path)
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_connect(path, timeout)

    monkeypatch.setattr(client, "connect", full_at_first)
    try:
        app = MnemosyneStore(str(store))
        try:
            assert refused, "the first connect was never made"
            assert app._client.via_daemon, "the client opened the store itself"
        finally:
            app.close()
    finally:
        serving.close(grace=5)
        alive.release()
        held.let_go_of_idle()
        gc.collect()
