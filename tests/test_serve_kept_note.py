"""An agent's edit of a synced memory through memsync's clients is one commit: memsync's note
(metadata, created_at, origin) stays in the agent's own commit, where an edit through mnem's
own client drops it and memsync writes it back in a commit of its own.

Real parts: Mem0's library offline, the real mnem SDK, LangMem's tool on
``memsync.langgraph.MnemosyneStore`` (and on ``mnem_langgraph.MnemosyneStore`` for the
contrast), ``memsync mcp``'s operations through memsync's store client.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import mnem
import mnem_langgraph

from memsync.langgraph import MnemosyneStore
from memsync.orchestration.serve.client import StoreClient
from tests.conftest import write_config
from tests.mem0_fixtures import Mem0App
from tests.test_e2e_mem0 import mem0_table
from tests.test_layouts_agents import ALICE, Agent, add, mem0_memories, sync
from tests.test_layouts_sharded import configure_sharded

SHARD = "memories%3Aalice"


def commits(store: Path) -> list[tuple[str, str]]:
    """(author, message) of every commit of the store at STORE, newest first."""
    handle = mnem.open(str(store))
    try:
        return [(c.author, c.message) for c in handle.log(first_parent=True)]
    finally:
        del handle
        gc.collect()


def edit_and_sync(home: Path, cli: Any, key: str, *, through_memsync: bool) -> list[Any]:
    """LangMem revises alice's memory KEY; the commits that edit and the sync after it made."""
    shard = home / "agents" / SHARD
    before = len(commits(shard))
    if through_memsync:
        store: Any = MnemosyneStore(str(home / "agents"))
        Agent(store, "alice").revise(key, "prefers jasmine tea")
        store.close()
    else:
        store = mnem_langgraph.MnemosyneStore(str(shard))
        Agent(store, "alice").revise(key, "prefers jasmine tea")
        del store
        gc.collect()
    sync(cli)
    return commits(shard)[: len(commits(shard)) - before]


def test_langmem_editing_a_synced_memory_through_memsync_is_one_commit_with_the_note_kept(
    home: Path, cli: Any
) -> None:
    configure_sharded(home)
    with Mem0App(home) as memory:
        ids = add(memory, "alice", ALICE)
    sync(cli)
    tea = ids["prefers green tea"]
    made = edit_and_sync(home, cli, tea, through_memsync=True)
    assert [author for author, _ in made] == ["agent"]  # the agent's commit, nothing after it
    store = mnem.open(str(home / "agents" / SHARD))
    node = store.working_memory()[f"memories:alice:{tea}"]
    del store
    gc.collect()
    assert node.content["content"] == "prefers jasmine tea"
    assert node.content["topic"] == "drinks"  # the metadata, where LangGraph's filter finds it
    note = json.loads(node.content["_meta"]["note"])
    assert note["origin"] == f"mem0:{tea}" and note["memsync"] == 1
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert alice["prefers jasmine tea"]["metadata"]["topic"] == "drinks"  # Mem0 keeps it too
    assert alice["prefers jasmine tea"]["id"] == tea


def test_the_same_edit_through_mnem_langgraph_costs_memsync_a_second_commit(
    home: Path, cli: Any
) -> None:
    configure_sharded(home)
    with Mem0App(home) as memory:
        ids = add(memory, "alice", ALICE)
    sync(cli)
    made = edit_and_sync(home, cli, ids["prefers green tea"], through_memsync=False)
    assert [author for author, _ in made] == ["memsync", "agent"]  # the note written back
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert alice["prefers jasmine tea"]["metadata"]["topic"] == "drinks"


def test_an_mcp_agents_remember_over_a_synced_memory_keeps_its_date_and_metadata(
    home: Path, cli: Any
) -> None:
    write_config(
        home,
        '[sync]\nactive = "mem0"\n'
        + mem0_table("mem0", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\ncreate = true\n',
    )
    with Mem0App(home) as memory:
        ids = add(memory, "alice", {"prefers green tea": {"topic": "drinks"}})
    sync(cli)
    node_id = f"mem0:{ids['prefers green tea']}"
    client = StoreClient(home / "agent", client="test agent")
    try:
        before = client.call("recall", id=node_id)
        client.call("remember", id=node_id, content="prefers oolong", source="chat-9")
        after = client.call("recall", id=node_id)
        log = client.call("history")
    finally:
        client.close()
    assert after["content"] == "prefers oolong"
    assert after["provenance"]["source"] == "chat-9"  # the agent's own provenance
    assert after["event_time"] == before["event_time"]  # created_at kept
    note = json.loads(after["provenance"]["note"])
    assert note["metadata"] == {"topic": "drinks"} and note["origin"] == node_id
    assert log[0]["author"] == "agent"
    sync(cli)
    assert [author for author, _ in commits(home / "agent")][:1] == ["agent"]  # no write-back
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert alice["prefers oolong"]["metadata"]["topic"] == "drinks"
