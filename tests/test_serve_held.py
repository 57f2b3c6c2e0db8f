"""One mnem handle shared by the daemon's cycles and the agents it serves: an agent's write never
lands inside memsync's batch, never waits for a whole batch, and is never overwritten blind.

On the real SDK, in this process: the daemon's side is its held stores (``HELD``), memsync's side
a ``MnemProvider`` borrowing the store from them, the agent's side an operation run in the store's lane as the
daemon runs a served request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsync.base.records import Outgoing
from memsync.providers.base import WriteOp
from memsync.providers.held import HeldStore, HeldStores, Lane
from memsync.providers.mnem.batch import BatchWrite
from memsync.providers.mnem.meanwhile import ChangedMeanwhile
from memsync.providers.mnem.provider import MnemProvider
from tests.mnem_sdk import real_sdk
from tests.test_live_watch import DEADLINE, init_store, wait_until

HELD = HeldStores()  # the daemon's held stores, as this process plays the daemon


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Path]:
    """Sharing on, as in the daemon, and a store to share."""
    real_sdk()
    store = init_store(tmp_path / "memory")
    try:
        yield store
    finally:
        HELD.let_go_of_idle()


def borrowed(path: Path) -> MnemProvider:
    provider = MnemProvider("mnem", path, sdk=real_sdk(), held=HELD)
    provider.open()
    assert isinstance(provider.store, HeldStore)
    provider.listing()  # what a cycle reads first: the head others' commits are counted from
    return provider


def creates(count: int, prefix: str = "m") -> list[WriteOp]:
    return [
        WriteOp(
            "create", f"{prefix}{n}", item=Outgoing(origin=f"mem0:{prefix}{n}", content=f"t{n}")
        )
        for n in range(count)
    ]


def agent(store: HeldStore, op: str, **args: Any) -> Any:
    """A served request, as the daemon runs it: in the lane, ahead of memsync."""
    from memsync.orchestration.serve import ops  # the mnem SDK's agents module: after real_sdk()

    with store.lane.held(agent=True):
        return ops.run(store, op, args)


def test_the_lane_lets_a_waiting_agent_in_before_memsync_when_a_batch_steps_aside() -> None:
    lane = Lane()
    order: list[str] = []
    lane.acquire()  # memsync holds it
    agent_in = threading.Thread(
        target=lambda: (lane.acquire(agent=True), order.append("agent"), lane.release())
    )
    agent_in.start()
    wait_until(lane.agents_waiting, "the agent waiting")
    lane.yield_to_agents()
    order.append("batch goes on")
    lane.release()
    agent_in.join(DEADLINE)
    assert order == ["agent", "batch goes on"]


def test_an_agent_waiting_when_memsyncs_call_ends_goes_before_memsyncs_next_call() -> None:
    """The race forced every run: memsync's call ends while an agent waits, and memsync asks
    again before the agent, woken, has taken the lane. The lane's own lock is held from the end
    of memsync's call to its next request, so the woken agent cannot move in between; what
    decides is the lane's rule alone (agents first), never the scheduler."""
    lane = Lane()
    order: list[str] = []
    lane.acquire()  # memsync's call
    agent_in = threading.Thread(
        target=lambda: (lane.acquire(agent=True), order.append("agent"), lane.release())
    )
    agent_in.start()
    wait_until(lane.agents_waiting, "the agent waiting")
    with lane._turn:  # the lane stands still: the agent is woken, cannot take it yet
        lane.release()  # memsync's call ends
        lane.acquire()  # memsync's next call, asked before the agent moved
        order.append("memsync")
    lane.release()
    agent_in.join(DEADLINE)
    assert order == ["agent", "memsync"]


def agent_arrives_mid_batch(
    monkeypatch: pytest.MonkeyPatch, store: HeldStore, after_staging: int, write: Callable[[], Any]
) -> threading.Thread:
    """WRITE, an agent's request that arrives once a sync batch has staged AFTER_STAGING nodes:
    the batch sees it waiting before it stages the next one."""
    staged = 0
    arrived = threading.Event()
    original = BatchWrite._stage

    def stage(self: BatchWrite, step: Any) -> None:
        nonlocal staged
        original(self, step)
        staged += 1
        if staged == after_staging:
            arrived.set()
            wait_until(store.lane.agents_waiting, "the agent's request waiting")

    monkeypatch.setattr(BatchWrite, "_stage", stage)
    thread = threading.Thread(target=lambda: (arrived.wait(DEADLINE), write()))
    thread.start()
    return thread


@pytest.mark.parametrize("arrives_at", [20, 50])
def test_an_agents_write_during_a_sync_batch_goes_first_as_its_own_commit(
    shared: Path, monkeypatch: pytest.MonkeyPatch, arrives_at: int
) -> None:
    """What the batch staged before the agent came is committed first, on its own; the rest
    after the agent's commit. No commit mixes the two."""
    provider = borrowed(shared)
    store = provider.store
    answers: list[Any] = []
    thread = agent_arrives_mid_batch(
        monkeypatch,
        store,
        arrives_at,
        lambda: answers.append(
            agent(store, "remember", id="agent-note", content="alice moved", author="agent-x")
        ),
    )
    results = list(provider.write_many(creates(300)))
    thread.join(DEADLINE)

    assert [r.error for r in results] == [None] * 300
    commits = store.log()
    ours = next(c for c in commits if c.id == answers[0]["commit"])
    assert (ours.author, ours.message) == ("agent-x", "remember agent-note")
    assert store.changed_by(ours.id) == {"agent-note": "added"}  # none of memsync's swept in
    batch = [c for c in commits if c.author == "memsync"]
    parts = [len(store.changed_by(c.id)) for c in reversed(batch)]  # oldest first
    assert parts == [arrives_at, 300 - arrives_at]
    after = next(c for c in batch if c.parents == (ours.id,))  # the batch went on after it
    assert all(node.startswith("mem0:") for node in store.changed_by(after.id))
    provider.close()


def test_a_node_the_batch_has_yet_to_write_that_the_agent_writes_meanwhile_keeps_its_value(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = borrowed(shared)
    store = provider.store
    thread = agent_arrives_mid_batch(  # m60 is planned, not staged yet: the agent writes it
        monkeypatch,
        store,
        20,
        lambda: agent(
            store, "remember", id="mem0:m60", content="the agent's own", author="agent-x"
        ),
    )
    results = {r.op.key: r for r in provider.write_many(creates(100))}
    thread.join(DEADLINE)

    assert isinstance(results["m60"].error, ChangedMeanwhile)  # planned again next cycle
    assert [k for k, r in results.items() if r.error is not None] == ["m60"]
    assert store.working_node("mem0:m60").content == "the agent's own"
    assert store.working_node("mem0:m61") is not None
    provider.close()


def test_a_node_an_agent_changed_since_the_listing_is_never_overwritten_blind(
    shared: Path,
) -> None:
    provider = borrowed(shared)
    (written,) = provider.write_many(creates(1, "n"))
    node_id = written.record.id
    provider.listing()  # the cycle's listing: memsync has seen n0 as it wrote it
    store = provider.store

    agent(store, "remember", id=node_id, content="the agent's own words", author="agent-x")

    changed = provider.versions_changed_since(time.time())  # what replay's freshness asks
    assert set(changed or {}) == {node_id}
    update = WriteOp(
        "update", "u", item=Outgoing(origin="mem0:n0", content="memsync's"), provider_id=node_id
    )
    (result,) = provider.write_many([update])  # the moment between freshness and the write
    assert isinstance(result.error, ChangedMeanwhile)
    assert store.working_node(node_id).content == "the agent's own words"
    provider.close()


def test_a_store_opened_for_memsync_alone_asks_no_freshness(tmp_path: Path) -> None:
    real_sdk()
    store = init_store(tmp_path / "memory")
    provider = MnemProvider("mnem", store, sdk=real_sdk())
    provider.open()
    provider.listing()
    assert not isinstance(provider.store, HeldStore)
    assert provider.versions_changed_since(time.time()) is None  # nobody else can write it
    provider.close()


TEAM = """
[sync]
active = "mem0"

[providers.mem0]
type = "mem0-oss"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{store}"
layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"] }}
"""


def test_in_a_held_team_store_the_run_keeps_one_account_memsyncs_commits_not_counted(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store holding every user, held by the daemon: the scopes of a run share one account
    of what others committed since the run read it. memsync's own commits into alice's
    namespace are not others' (bob's scope makes no diff over them); an agent's commit into
    bob's namespace is, and bob's write to that node waits for the next cycle."""
    from memsync.base.scopes import Scope
    from memsync.config import parse_config
    from memsync.providers.mnem.configured import build as build_mnem
    from memsync.providers.mnem.shared import ScopeInStore, SharedStore

    config = parse_config(TEAM.format(store=shared))
    base = build_mnem("agents", config.providers["agents"], config, held=HELD)  # type: ignore[arg-type]
    team = SharedStore(base)
    alice, bob = (
        ScopeInStore("agents", team, Scope.of({"user_id": user}), scope_key=user)
        for user in ("alice", "bob")
    )
    for scope in (alice, bob):
        scope.open()
    store = alice.store
    assert isinstance(store, HeldStore)
    agent(store, "remember", id="memories:carol:k0", content={"content": "carol's"})
    for scope in (alice, bob):
        scope.listing()  # the run's one read: both at the same head
    diffs: list[str] = []
    real_call = ScopeInStore.sdk_call

    def sdk_call(self: ScopeInStore, what: str, call: Any, **how: Any) -> Any:
        if (what.startswith("diff ") and ".." in what) or what == "read the head state":
            diffs.append(what)
        return real_call(self, what, call, **how)

    monkeypatch.setattr(ScopeInStore, "sdk_call", sdk_call)

    assert [r.error for r in alice.write_many(creates(3, "a"))] == [None] * 3
    assert bob.versions_changed_since(time.time()) == {}
    assert diffs == []  # memsync's own commits: nothing to catch up with

    (made,) = bob.write_many(creates(1, "b"))
    node_id = made.record.id
    agent(store, "remember", id=node_id, content={"content": "bob's own words"}, author="agent-x")
    assert set(bob.versions_changed_since(time.time()) or {}) == {node_id}
    assert alice.versions_changed_since(time.time()) == {}  # not alice's to wait for
    update = WriteOp(
        "update",
        "u",
        item=Outgoing(origin="mem0:b0", content="memsync's"),
        provider_id=node_id,
    )
    (result,) = bob.write_many([update])
    assert isinstance(result.error, ChangedMeanwhile)
    assert store.working_node(node_id).content == {"content": "bob's own words"}
    for scope in (alice, bob):
        scope.close()
    base.close()
