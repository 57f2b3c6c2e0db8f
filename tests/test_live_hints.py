"""A hint is never lost: any mix of hints makes one cycle, and a cycle that fails keeps them.

The issue's setup, in this process with real parts: one team store (a mnem store in the
LangGraph layout, a user per namespace) served to an application through the daemon's
``StoreServer`` and held in the daemon's ``HeldStores``, the daemon's ``Live`` with its
watcher on that store, its jobs (``daemon/jobs``) wrapping each hinted cycle as the daemon
does, and a Mem0 server double (a real mem0 ``Memory``) on a loopback socket. An application's
``put`` into bob's namespace arrives as a served write (bob's scope) and, as its commit moves
the store's files, as the watcher's hint (the whole store): two hints of one provider, one with
a scope and one without, in one round. The interval is a day, so only the hints can carry
bob's write to Mem0.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memsync.base.lock import cycle_lock
from memsync.base.paths import Paths, resolve_paths
from memsync.base.scopes import Scope
from memsync.config import Config, parse_config
from memsync.orchestration.daemon.jobs import Jobs
from memsync.orchestration.daemon.notify import Notifier
from memsync.orchestration.live import hints as hint_queue
from memsync.orchestration.live import triggers
from memsync.orchestration.live.triggers import Live
from memsync.orchestration.ui.metrics import Metrics
from memsync.providers.held import HeldStores
from memsync.providers.watched import Hint
from tests.conftest import write_config
from tests.live_world import ServedServer, served_mem0_server
from tests.mnem_sdk import real_sdk
from tests.test_live_watch import init_store, wait_until

TEAM = """
[sync]
active = "server"
interval = "1d"

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

BOB = Scope.of({"user_id": "bob"})


def test_hints_with_and_without_a_scope_sort_together() -> None:
    mixed = [Hint("agents", BOB), Hint("server"), Hint("agents"), Hint("agents", None)]
    assert sorted(mixed) == [Hint("agents"), Hint("agents"), Hint("agents", BOB), Hint("server")]
    assert max(mixed) == Hint("server") and Hint("agents") <= Hint("agents", BOB)


@dataclass
class Team:
    """The daemon's side of a served team store, in this process."""

    paths: Paths
    config: Config
    server: ServedServer
    store: Path
    live: Live
    jobs: Jobs
    stop: threading.Event


@pytest.fixture
def team(home: Path) -> Iterator[Team]:
    real_sdk()
    from memsync.orchestration.serve.server import StoreServer  # the mnem SDK's: after real_sdk

    store = init_store(home / "agents" / "memory")
    with served_mem0_server() as server:
        server.add("alice likes tea", user_id="alice")
        server.add("bob likes coffee", user_id="bob")
        config = parse_config(TEAM.format(url=server.url, store=store))
        write_config(home, TEAM.format(url=server.url, store=store))
        paths = resolve_paths()
        paths.ensure()
        stop = threading.Event()
        held = HeldStores()
        jobs = Jobs(
            paths,
            lambda: config,
            stop,
            held=held,
            metrics=Metrics(paths),
            notifier=Notifier(),
            run_soon=lambda _job: None,
        )
        live = Live(paths, config, stop, guard=jobs.guarded, held=held)
        jobs.live = live
        serving = StoreServer(paths, config, held=held, on_write=lambda h: live.changed({h}))
        live.start()
        serving.start()
        try:
            jobs.sync()  # the daemon's first sync
            assert server.texts("bob") == {"bob likes coffee"}
            assert live.watcher is not None
            wait_until(lambda: live.watcher.watching, "the watcher to start")  # type: ignore[union-attr]
            yield Team(paths, config, server, store, live, jobs, stop)
        finally:
            stop.set()
            live.close()
            serving.close(grace=5)
            live.join(30)
            held.let_go_of_idle()
            gc.collect()


def put_in_one_round(team: Team, text: str) -> None:
    """An application's put into bob's namespace, served by the daemon, while the cycle lock is
    held (a manual `memsync sync`, say): the served write's hint and the watcher's both wait,
    and the next round takes them together."""
    from memsync.langgraph import MnemosyneStore

    lock = cycle_lock(team.paths)
    lock.acquire()
    try:
        app = MnemosyneStore(str(team.store))
        try:
            assert app._client.via_daemon
            app.put(("memories", "bob"), "k1", {"content": text})
        finally:
            app.close()
        wait_until(lambda: team.live.queue.written, "the served write's hint")
        wait_until(lambda: team.live.queue.pending, "the watcher's hint")
        assert {h.scope for h in team.live.queue.written | team.live.queue.pending} == {None, BOB}
    finally:
        lock.release()


def test_a_served_write_and_the_watchers_hint_in_one_round_make_one_cycle(
    team: Team, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    put_in_one_round(team, "bob walks to work")
    wait_until(lambda: "bob walks to work" in team.server.texts("bob"), "bob's put in Mem0")
    wait_until(lambda: team.live.cycles == 1, "the hinted cycle to be counted")
    assert team.server.texts("alice") == {"alice likes tea"}
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failed, [r.getMessage() for r in failed]
    hinted = [r.getMessage() for r in caplog.records if "for changes in agents" in r.getMessage()]
    assert hinted and "changes in agents, agents[user_id=bob]" in hinted[0], hinted


def test_a_hinted_cycle_that_fails_keeps_its_hints_and_says_so_once(
    team: Team, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hinted cycle's ``run_sync`` raises what no one expected, three times: the hints
    wait and are tried again (backing off, from 0.1 s here), and the log says it once.

    Each failed attempt lets go of the held store, which moves its files: the watcher hints the
    whole store again, so the write would reach Mem0 even if the hints were dropped. The served
    write's own hint (bob's scope) comes back only from the queue: a later cycle names it."""
    monkeypatch.setattr(hint_queue, "RETRY_FIRST", 0.1)
    real_run_sync = triggers.run_sync
    calls = 0

    def flaky(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls <= 3:
            raise RuntimeError("staging went sideways")
        return real_run_sync(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(triggers, "run_sync", flaky)
    caplog.set_level(logging.DEBUG)
    put_in_one_round(team, "bob reads at night")
    wait_until(lambda: "bob reads at night" in team.server.texts("bob"), "bob's put in Mem0")
    assert calls >= 4
    said = [r for r in caplog.records if "staging went sideways" in r.getMessage()]
    loud = [r for r in said if r.levelno >= logging.WARNING]
    assert len(loud) == 1, [r.getMessage() for r in said]

    def bobs_hint_tried_again() -> bool:
        after = caplog.records[caplog.records.index(loud[0]) + 1 :]
        return any(
            "for changes in" in r.getMessage() and "agents[user_id=bob]" in r.getMessage()
            for r in after
        )

    wait_until(bobs_hint_tried_again, "the served write's own hint to be tried again")
    assert "tried again" in loud[0].getMessage() and "agents[user_id=bob]" in loud[0].getMessage()
    assert not [r for r in caplog.records if "job failed unexpectedly" in r.getMessage()]
    wait_until(
        lambda: any("live sync works again" in r.getMessage() for r in caplog.records),
        "the recovery to be said",
    )
