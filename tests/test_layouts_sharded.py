"""A team in a root with a mnem store per namespace (``layout.stores = "per-namespace"``),
synced from Mem0 and served to LangMem as one LangGraph store.

Everything real: Mem0's library offline, the real mnem SDK, LangMem 0.0.30's own tools called
as an agent's tool calls are, on ``memsync.langgraph.MnemosyneStore`` over the root (no daemon
here: the client holds the shards itself, as it does while the daemon is down), and
``mnem_langgraph.MnemosyneStore`` on one shard, to show each shard is a store of its own that
mnem's own client reads.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import mnem  # the real SDK: a missing build is an error, not a skip
import mnem_langgraph
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsync.base.mnem_shards import (
    MARKER,
    ShardNameError,
    is_sharded_root,
    namespace_of_shard,
    shard_name,
)
from memsync.langgraph import MnemosyneStore
from tests.mem0_fixtures import Mem0App
from tests.test_layouts_agents import ALICE, BOB, Agent, add, configure, mem0_memories, sync, texts

T = TypeVar("T")
SHARDED = (
    'layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"], value = "{value}" }}'
)


def configure_sharded(home: Path, *, value: str = "content") -> None:
    configure(home, value=value)
    config = home / "config" / "config.toml"
    text = config.read_text()
    one = f'value = "{value}" }}'
    assert one in text
    config.write_text(text.replace(one, f'value = "{value}", stores = "per-namespace" }}'))


def with_store(home: Path, work: Callable[[MnemosyneStore], T]) -> T:
    """WORK on memsync's LangGraph store over the root, then let go, as an agent's process ends."""
    store = MnemosyneStore(str(home / "agents"))
    try:
        return work(store)
    finally:
        store.close()


@pytest.fixture
def team(home: Path) -> dict[str, dict[str, str]]:
    configure_sharded(home)
    with Mem0App(home) as memory:
        return {"alice": add(memory, "alice", ALICE), "bob": add(memory, "bob", BOB)}


def shard(home: Path, user: str) -> Path:
    return home / "agents" / f"memories%3A{user}"


def test_a_wildcard_team_syncs_into_a_store_per_namespace(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    report = sync(cli)
    assert set(report["scopes"]) == {"user_id=alice", "user_id=bob"}
    root = home / "agents"
    assert is_sharded_root(root) and (root / MARKER).is_file()
    assert not (root / ".mnem").exists()  # the root holds no store of its own
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
        "memories%3Aalice",
        "memories%3Abob",
    ]
    # each shard is a mnem-langgraph store of its own: mnem's client lists alice's alone there
    store = mnem_langgraph.MnemosyneStore(str(shard(home, "alice")))
    try:
        assert store.list_namespaces() == [("memories", "alice")]
        found = {i.value["content"]: i.key for i in store.search(("memories", "alice"))}
    finally:
        del store
        gc.collect()
    assert set(found) == set(ALICE)
    assert found["prefers green tea"] == team["alice"]["prefers green tea"]
    verified = cli("verify", "mem0", "agents")
    assert verified.exit_code == 0, verified.output
    assert "2 scope(s): 2 reconciled" in verified.output
    checked = cli("check")
    assert "one store per namespace under" in checked.output
    assert "2 namespace store(s)" in checked.output


def test_langmem_on_the_root_sees_one_store_and_its_writes_reach_mem0(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)

    def look(store: MnemosyneStore) -> None:
        assert sorted(store.list_namespaces()) == [("memories", "alice"), ("memories", "bob")]
        alice, bob = Agent(store, "alice"), Agent(store, "bob")
        assert texts(alice.search()) == set(ALICE)
        assert texts(bob.search()) == set(BOB)
        assert texts(alice.search("tea")) == {"prefers green tea"}
        drinks = store.search(("memories",), filter={"topic": "drinks"})
        assert {(i.namespace[1], i.value["content"]) for i in drinks} == {
            ("alice", "prefers green tea"),
            ("bob", "prefers espresso"),
        }
        key = team["alice"]["prefers green tea"]
        blame = store.why(("memories", "alice"), key)
        assert json.loads(blame.node.provenance.note)["origin"] == f"mem0:{key}"

    with_store(home, look)
    created = with_store(home, lambda store: Agent(store, "alice").remember("likes hiking"))
    dave = with_store(home, lambda store: Agent(store, "dave").remember("dave keeps bees"))
    assert (shard(home, "dave") / ".mnem").is_dir()  # a new user's store, made by the put
    report = sync(cli)
    assert "user_id=dave" in report["scopes"]  # found in the root, synced to Mem0
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert alice["likes hiking"]["metadata"]["memsync_origin"] == f"mnem:memories:alice:{created}"
    assert [m["memory"] for m in mem0_memories(home, "dave")] == ["dave keeps bees"]
    assert dave
    # an edit in Mem0 comes back through LangMem in its shape
    with Mem0App(home) as memory:
        memory.update(team["bob"]["prefers espresso"], "prefers flat whites")
    sync(cli)
    assert with_store(home, lambda store: texts(Agent(store, "bob").search())) == {
        "prefers flat whites",
        "plays the cello",
    }


def test_a_namespace_the_layout_does_not_name_gets_a_store_memsync_leaves_alone(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)
    with_store(home, lambda store: store.put(("scratch",), "s1", {"content": "a scratch note"}))
    assert (home / "agents" / "scratch" / ".mnem").is_dir()
    report = sync(cli)
    assert set(report["scopes"]) == {"user_id=alice", "user_id=bob"}
    everyone = {m["memory"] for user in ("alice", "bob") for m in mem0_memories(home, user)}
    assert everyone == set(ALICE) | set(BOB)
    kept = with_store(home, lambda store: store.get(("scratch",), "s1"))
    assert kept is not None and kept.value == {"content": "a scratch note"}
    assert "1 outside the layout's namespaces" in cli("check").output


def test_a_sharded_root_cannot_be_a_store_nor_a_template(home: Path, cli: Any) -> None:
    configure_sharded(home)
    config = home / "config" / "config.toml"
    text = config.read_text()
    config.write_text(text.replace(f'path = "{home / "agents"}"', 'path = "/x/{user_id}/m"'))
    result = cli("check")
    assert result.exit_code != 0
    assert "per-namespace" in result.output and "layout.namespace" in result.output
    config.write_text(text)
    made = mnem.init(str(home / "agents"))
    del made
    gc.collect()
    with Mem0App(home) as memory:
        add(memory, "alice", {"likes tea": {}})
    result = cli("sync")
    assert result.exit_code != 0
    assert "needs a root of its own" in result.output


@given(st.text(min_size=0, max_size=80))
def test_every_namespace_is_one_directory_name_and_back(namespace: str) -> None:
    try:
        name = shard_name(namespace)
    except ShardNameError:  # 80 characters of 4-byte UTF-8 pass a directory name's 255 bytes
        assert len(quote(namespace, safe="").encode()) > 255
        return
    assert "/" not in name and name not in (".", "..") and not name.startswith(".")
    assert namespace_of_shard(name) == namespace


def test_a_namespace_too_long_for_a_directory_is_refused_and_hidden_names_are_no_shards() -> None:
    with pytest.raises(ShardNameError, match="too long"):
        shard_name("memories:" + "é" * 200)
    assert namespace_of_shard(MARKER) is None
    assert namespace_of_shard(".memsync-shards.123.tmp") is None
    assert namespace_of_shard("memories%3aalice") is None  # not how memsync spells it
