"""The daemon that opens a store to serve an agent first settles what a killed memsync left there.

memsync notes each batch before it stages it (``providers/mnem/in_flight``); killed between its
first ``add`` and its commit, it leaves its batch staged. Whoever opens the store next unstages
it, so that no other commit sweeps it in. When the daemon's first opener is an agent attaching
(before any cycle borrowed the store), the agent's own commit must not carry memsync's batch.

Real parts: the real mnem SDK, the daemon's store server in this process on its private socket,
and memsync's client as an agent uses it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from memsync.base.paths import resolve_paths
from memsync.config import parse_config
from memsync.orchestration.serve.client import StoreClient
from memsync.orchestration.serve.server import StoreServer
from memsync.providers.held import HeldStores
from memsync.providers.mnem.in_flight import InFlight, store_identity
from memsync.providers.watched import Hint
from tests.mnem_sdk import real_sdk
from tests.test_live_watch import init_store

CONFIG = """
[sync]
active = "agent"

[providers.agent]
type = "mnem"
path = "{store}"
"""


def killed_batch(store: Path) -> InFlight:
    """What a memsync killed inside a batch leaves: the batch noted, one node staged."""
    note = InFlight(store_identity(store.resolve()))
    note.note(["mem0:half"])
    handle = real_sdk().open(str(store))
    handle.add("mem0:half", "a memory memsync never finished writing")
    del handle
    gc.collect()
    return note


@pytest.fixture
def served(home: Path) -> Iterator[tuple[Path, StoreServer]]:
    store = init_store(home / "agents" / "memory")
    paths = resolve_paths()
    paths.ensure()
    written: list[Hint] = []
    server = StoreServer(
        paths, parse_config(CONFIG.format(store=store)), held=HeldStores(), on_write=written.append
    )
    try:
        yield store, server
    finally:
        server.close(grace=5.0)
        server.held.let_go_of_idle()
        gc.collect()


def test_an_agent_attaching_first_never_commits_the_batch_a_killed_memsync_left_staged(
    served: tuple[Path, StoreServer],
) -> None:
    store, server = served
    note = killed_batch(store)
    server.start()
    agent = StoreClient(store, client="agent", paths=resolve_paths())
    try:
        assert agent.via_daemon
        written = agent.call("remember", id="commute", content="alice cycles to work")
        held = agent.call("recall") or {}
    finally:
        agent.close()
    server.close(grace=5.0)
    server.held.let_go_of_idle()
    gc.collect()

    assert set(held) == {"commute"}  # the agent's commit holds its own write alone
    reopened = real_sdk().open(str(store))
    try:
        assert set(reopened.working_memory()) == {"commute"}
        assert list(reopened.staged()) == [] and list(reopened.staged_deletions()) == []
        changed = {change.id for change in reopened.diff(None, written["commit"])}
        assert "mem0:half" not in changed
    finally:
        del reopened
        gc.collect()
    assert note.noted() is None  # settled: the outbox writes the batch again, once
