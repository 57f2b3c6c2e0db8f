"""The agents on mnem find what arrived: LangMem and mnem-langgraph on a store memsync fills
from Mem0 with the LangGraph layout, and mnem-mcp on the default layout.

Everything real: Mem0's library offline (local Qdrant, hash embedder), the real mnem SDK,
``mnem_langgraph.MnemosyneStore`` and ``mnem_mcp`` from the registry, LangMem 0.0.30's own
tools called as an agent's tool calls are (``tool.invoke(args, config=...)``; no LLM needed).
Every user lives in one mnem store, a namespace each (``("memories", user)``), as a LangGraph
application keeps them.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mnem  # the real SDK: a missing build is an error, not a skip
import pytest
from langmem import create_manage_memory_tool, create_search_memory_tool
from mnem_langgraph import MnemosyneStore

from tests.conftest import write_config
from tests.mem0_fixtures import DIMS, Mem0App

ALICE = {
    "prefers green tea": {"topic": "drinks"},
    "flies to Lisbon in May": {"topic": "travel", "legs": 2},
    "allergic to peanuts": {},
}
T = TypeVar("T")
BOB = {"prefers espresso": {"topic": "drinks"}, "plays the cello": {}}


def configure(home: Path, *, value: str = "content", extra: str = "") -> None:
    stores = home / "stores"
    write_config(
        home,
        f"""
[sync]
active = "mem0"

[providers.mem0]
type = "mem0-oss"
scope = {{ user_id = "*" }}
embedder = "hash"
mem0_config = {{ vector_store = {{ provider = "qdrant", config = {{ collection_name = "team", path = "{stores / "qdrant"}", embedding_model_dims = {DIMS} }} }}, history_db_path = "{stores / "history.db"}" }}

[providers.agents]
type = "mnem"
path = "{home / "agents"}"
create = true
layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"], value = "{value}" }}

[providers.backup]
type = "pmm-dir"
path = "{home / "backup"}"
direction = "push"
{extra}
""",
    )


def add(memory: Any, user: str, memories: dict[str, dict[str, Any]]) -> dict[str, str]:
    ids = {}
    for text, metadata in memories.items():
        result = memory.add(text, user_id=user, metadata=metadata or None, infer=False)
        ids[text] = result["results"][0]["id"]
    return ids


def mem0_memories(home: Path, user: str) -> list[dict[str, Any]]:
    with Mem0App(home) as memory:
        rows: list[dict[str, Any]] = memory.get_all(filters={"user_id": user}, top_k=100)["results"]
    return rows


class Agent:
    """A LangGraph agent with LangMem's memory tools on mnem-langgraph's store, for one user."""

    def __init__(self, store: MnemosyneStore, user: str) -> None:
        namespace = ("memories", "{langgraph_user_id}")
        self.search_tool = create_search_memory_tool(namespace=namespace, store=store)
        self.manage_tool = create_manage_memory_tool(namespace=namespace, store=store)
        self.config = {"configurable": {"langgraph_user_id": user}}

    def search(self, query: str = "") -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(
            self.search_tool.invoke({"query": query, "limit": 100}, config=self.config)
        )
        return found

    def remember(self, content: str) -> str:
        answer: str = self.manage_tool.invoke({"content": content}, config=self.config)
        return answer.rsplit(" ", 1)[-1]  # "created memory <uuid>"

    def revise(self, memory_id: str, content: str) -> None:
        self.manage_tool.invoke(
            {"content": content, "action": "update", "id": memory_id}, config=self.config
        )


def with_store(home: Path, work: Callable[[MnemosyneStore], T]) -> T:
    """Run WORK on ``mnem_langgraph.MnemosyneStore`` over the agents' store, then let it go, as
    an agent's process ends: the store holds mnem's one handle for as long as it lives."""
    store = MnemosyneStore(str(home / "agents"))
    try:
        return work(store)
    finally:
        del store
        gc.collect()


@pytest.fixture
def team(home: Path) -> dict[str, dict[str, str]]:
    configure(home)
    with Mem0App(home) as memory:
        return {"alice": add(memory, "alice", ALICE), "bob": add(memory, "bob", BOB)}


def sync(cli: Any) -> dict[str, Any]:
    result = cli("sync", "--json")
    report: dict[str, Any] = json.loads(result.output)
    assert result.exit_code == 0, result.output
    return report


def texts(items: list[dict[str, Any]]) -> set[str]:
    return {item["value"]["content"] for item in items}


def test_langmem_finds_every_migrated_memory_of_alice_and_none_of_bobs(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)

    def look(store: MnemosyneStore) -> None:
        assert sorted(store.list_namespaces()) == [("memories", "alice"), ("memories", "bob")]
        alice, bob = Agent(store, "alice"), Agent(store, "bob")
        assert texts(alice.search()) == set(ALICE)
        assert texts(bob.search()) == set(BOB)
        assert texts(alice.search("tea")) == {"prefers green tea"}
        # each item is the memory's Mem0 id in alice's namespace, a dict LangGraph can read
        found = {item["value"]["content"]: item for item in alice.search()}
        item = found["prefers green tea"]
        assert item["namespace"] == ["memories", "alice"]
        assert item["key"] == team["alice"]["prefers green tea"]
        # Mem0's metadata where LangGraph's search(filter=...) reaches it
        drinks = store.search(("memories",), filter={"topic": "drinks"})
        assert {(i.namespace[1], i.value["content"]) for i in drinks} == {
            ("alice", "prefers green tea"),
            ("bob", "prefers espresso"),
        }
        assert found["flies to Lisbon in May"]["value"]["legs"] == 2
        # provenance under _meta, lifted by mnem into the node's provenance (why works)
        blame = store.why(("memories", "alice"), item["key"])
        assert blame.provenance.note == item["value"]["_meta"]["note"]
        assert json.loads(blame.provenance.note)["origin"] == f"mem0:{item['key']}"

    with_store(home, look)
    verified = cli("verify", "mem0", "agents")  # every user's memories, in one store
    assert verified.exit_code == 0, verified.output
    assert "2 scope(s): 2 reconciled" in verified.output
    one = cli("verify", "mem0", "agents", "--scope", "user_id=bob")
    assert one.exit_code == 0, one.output
    assert "reconciled" in one.output
    checked = cli("check")
    assert "agents [mnem]: reachable, 5 memories in 2 namespace(s)" in checked.output


def test_a_memory_langmem_writes_reaches_mem0_as_plain_text_under_its_user(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)
    created = with_store(home, lambda store: Agent(store, "alice").remember("likes hiking"))
    sync(cli)
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert "likes hiking" in alice  # its text, not {"content": ...} as JSON
    assert alice["likes hiking"]["metadata"]["memsync_origin"] == (f"mnem:memories:alice:{created}")
    assert "likes hiking" not in {m["memory"] for m in mem0_memories(home, "bob")}
    # and a user only LangMem knows (no memory in Mem0 yet) is found in the store
    with_store(home, lambda store: Agent(store, "dave").remember("dave keeps bees"))
    report = sync(cli)
    assert "user_id=dave" in report["scopes"]
    assert [m["memory"] for m in mem0_memories(home, "dave")] == ["dave keeps bees"]


def test_an_edit_in_mem0_reads_back_through_langmem_in_its_shape(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)
    created = with_store(home, lambda store: Agent(store, "alice").remember("likes hiking"))
    sync(cli)
    edited = {m["memory"]: m["id"] for m in mem0_memories(home, "alice")}
    with Mem0App(home) as memory:
        memory.update(edited["likes hiking"], "likes hiking on Saturdays")
        memory.update(team["alice"]["prefers green tea"], "prefers jasmine tea")
    sync(cli)

    def read(store: MnemosyneStore) -> dict[str, Any]:
        return {item["key"]: item["value"] for item in Agent(store, "alice").search()}

    found = with_store(home, read)
    assert found[created]["content"] == "likes hiking on Saturdays"
    migrated = found[team["alice"]["prefers green tea"]]
    assert migrated["content"] == "prefers jasmine tea"
    assert migrated["topic"] == "drinks"  # its metadata kept beside it
    # and LangMem goes on editing it by the id it knows
    with_store(home, lambda store: Agent(store, "alice").revise(created, "likes hiking on Fridays"))
    sync(cli)
    assert "likes hiking on Fridays" in {m["memory"] for m in mem0_memories(home, "alice")}


def test_the_store_managers_shape_keeps_its_kind_both_ways(home: Path, cli: Any) -> None:
    configure(home, value="kind")
    with Mem0App(home) as memory:
        ids = add(memory, "alice", {"prefers green tea": {"topic": "drinks"}})
    sync(cli)

    def get(key: str) -> dict[str, Any]:
        def read(store: MnemosyneStore) -> dict[str, Any]:
            item = store.get(("memories", "alice"), key)
            assert item is not None
            value: dict[str, Any] = item.value
            return value

        return with_store(home, read)

    value = get(ids["prefers green tea"])
    assert value["kind"] == "Memory"  # what LangMem's store manager reads
    assert value["content"] == {"content": "prefers green tea"}
    assert value["topic"] == "drinks"
    # a memory the store manager wrote, with its own _meta
    with_store(
        home,
        lambda store: store.put(
            ("memories", "alice"),
            "profile-1",
            {"kind": "Memory", "content": {"content": "works nights"}, "_meta": {"source": "mgr"}},
        ),
    )
    sync(cli)
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert set(alice) == {"prefers green tea", "works nights"}
    with Mem0App(home) as memory:
        memory.update(alice["works nights"]["id"], "works days")
    sync(cli)
    value = get("profile-1")
    assert value["kind"] == "Memory"
    assert value["content"] == {"content": "works days"}
    assert value["_meta"]["source"] == "mgr"


def mcp_calls(store: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each tool call's structured answer from ``mnem-mcp --store STORE``, through the official
    MCP client over stdio, as an agent's editor talks to it."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session() -> list[Any]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mnem_mcp", "--store", str(store)]
        )
        answers = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result
                answer = result.structured_content or {}
                answers.append(answer["result"] if set(answer) == {"result"} else answer)
        return answers

    answers: list[Any] = anyio.run(session)
    return answers


def test_mnem_mcp_recall_still_shows_migrated_memories_as_plain_text(home: Path, cli: Any) -> None:
    configure(home)
    config = (home / "config" / "config.toml").read_text()
    config = config.replace(
        'layout = { type = "langgraph", namespace = ["memories", "{user_id}"], value = "content" }\n',
        "",
    )
    config = config.replace('scope = { user_id = "*" }', 'scope = { user_id = "alice" }')
    write_config(home, config)
    with Mem0App(home) as memory:
        ids = add(memory, "alice", ALICE)
    sync(cli)
    tea = f"mem0:{ids['prefers green tea']}"
    recalled, one, why = mcp_calls(
        home / "agents", [("recall", {}), ("recall", {"id": tea}), ("why", {"id": tea})]
    )
    assert {recalled[f"mem0:{i}"]["content"] for i in ids.values()} == set(ALICE)
    assert one["content"] == "prefers green tea"
    assert why["node"]["content"] == "prefers green tea"
    assert json.loads(why["node"]["provenance"]["note"])["metadata"] == {"topic": "drinks"}


def test_a_text_langmem_already_holds_beside_the_same_text_in_mem0_is_one_memory(
    home: Path, cli: Any
) -> None:
    configure(home)
    with Mem0App(home) as memory:
        add(memory, "alice", {"prefers green tea": {}})
    (home / "agents").mkdir()
    del_store = mnem.init(str(home / "agents"))
    del del_store
    gc.collect()
    with_store(home, lambda store: Agent(store, "alice").remember("prefers green tea"))
    report = sync(cli)
    assert report["providers"]["agents[user_id=alice]"]["adopted"] == 1
    assert [m["memory"] for m in mem0_memories(home, "alice")] == ["prefers green tea"]
    found = with_store(home, lambda store: texts(Agent(store, "alice").search()))
    assert found == {"prefers green tea"}


def test_values_that_are_not_memories_round_trip_and_json_looking_text_stays_text(
    home: Path, cli: Any
) -> None:
    configure(home)
    with Mem0App(home) as memory:
        ids = add(memory, "alice", {"42": {}})
    sync(cli)

    def value_of(key: str) -> Any:
        return with_store(home, lambda store: store.get(("memories", "alice"), key).value)

    assert value_of(ids["42"])["content"] == "42"
    with_store(
        home,
        lambda store: store.put(("memories", "alice"), "plan", {"tier": "enterprise", "seats": 40}),
    )
    sync(cli)
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    carried = '{"seats":40,"tier":"enterprise"}'
    assert carried in alice
    with Mem0App(home) as memory:
        memory.update(alice[carried]["id"], '{"seats":41,"tier":"enterprise"}')
    sync(cli)
    assert value_of("plan") == {"seats": 41, "tier": "enterprise"}


def test_nodes_outside_the_namespaces_are_left_alone_and_counted(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)

    def write_outside(store: MnemosyneStore) -> None:
        store.put(("memories", "alice", "profile"), "p1", {"content": "a sub-namespace"})
        store.put(("scratch",), "s1", {"content": "an agent's scratch note"})

    with_store(home, write_outside)
    sync(cli)
    everyone = {m["memory"] for user in ("alice", "bob") for m in mem0_memories(home, user)}
    assert everyone == set(ALICE) | set(BOB)
    status = cli("status")
    assert "agents: 2 nodes outside the layout's namespaces" in status.output
    with_store(home, lambda store: store.delete(("scratch",), "s1"))
    sync(cli)
    assert "agents: 1 node outside the layout's namespaces" in cli("status").output
    kept = with_store(home, lambda store: store.get(("memories", "alice", "profile"), "p1"))
    assert kept is not None  # never deleted


def test_one_store_for_every_user_is_opened_once_a_cycle(
    home: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """And read once: one diff from the run's cursor serves all 30 scopes (a diff per scope
    would cost 30 passes over the store's history)."""
    configure(home)
    users = [f"user{i:02d}" for i in range(30)]
    with Mem0App(home) as memory:
        for user in users:
            add(memory, user, {f"{user} likes tea": {}})
    sync(cli)
    opened: list[str] = []
    reads: list[str] = []
    diffs: list[tuple[str, ...]] = []  # diffs between two commits
    real_open = mnem.open
    real_working_memory = mnem.Store.working_memory
    real_diff = mnem.Store.diff

    def counting_open(path: str) -> Any:
        opened.append(path)
        return real_open(path)

    def counting_working_memory(self: Any) -> Any:
        reads.append("working_memory")
        return real_working_memory(self)

    def counting_diff(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:  # between two commits: a listing's read (without: the staged batch's check)
            diffs.append(args)
        return real_diff(self, *args, **kwargs)

    monkeypatch.setattr(mnem, "open", counting_open)
    monkeypatch.setattr(mnem.Store, "working_memory", counting_working_memory)
    monkeypatch.setattr(mnem.Store, "diff", counting_diff)
    with Mem0App(home) as memory:
        memory.add("user07 likes coffee now", user_id="user07", infer=False)
    report = sync(cli)
    assert len(report["scopes"]) == len(users)
    assert opened == [str(home / "agents")]
    assert len(reads) <= 1
    assert len(diffs) == 1, f"{len(diffs)} diffs of the store for {len(users)} scopes"
    found = with_store(home, lambda store: texts(Agent(store, "user07").search()))
    assert found == {"user07 likes tea", "user07 likes coffee now"}


def test_a_memory_an_agent_wrote_natively_is_dated_by_the_commit_that_added_it(
    home: Path, cli: Any
) -> None:
    configure(home)
    with Mem0App(home) as memory:
        add(memory, "alice", {"prefers green tea": {}})
    sync(cli)
    added = 1_622_539_800_000  # 2021-06-01T09:30:00Z: when the agent's commit says it wrote it
    store = mnem.open(str(home / "agents"))
    mnem.agents.remember(
        store, "memories:alice:k1", {"content": "keeps a diary"}, author="agent", time_ms=added
    )
    mnem.agents.remember(store, "memories:alice:k2", {"content": "reads at night"}, author="agent")
    del store
    gc.collect()
    sync(cli)
    alice = {m["memory"]: m for m in mem0_memories(home, "alice")}
    assert alice["keeps a diary"]["created_at"].startswith("2021-06-01T09:30:00")
    assert not alice["reads at night"]["created_at"].startswith("2021")


def test_deletes_cross_both_ways_and_a_user_id_that_cannot_be_a_namespace_is_refused(
    team: dict[str, dict[str, str]], home: Path, cli: Any
) -> None:
    sync(cli)
    created = with_store(home, lambda store: Agent(store, "alice").remember("likes hiking"))
    sync(cli)
    with_store(
        home,
        lambda store: Agent(store, "alice").manage_tool.invoke(
            {"action": "delete", "id": created}, config=Agent(store, "alice").config
        ),
    )
    with Mem0App(home) as memory:
        memory.delete(team["bob"]["plays the cello"])
        memory.add("eve likes colons", user_id="eve:x", infer=False)
    result = cli("sync", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 1  # eve's scope is refused; everyone else synced
    eve = report["scopes"]["user_id=eve:x"]
    assert eve["state"] == "error" and "refused" in eve["error"]
    assert "likes hiking" not in {m["memory"] for m in mem0_memories(home, "alice")}
    found = with_store(home, lambda store: texts(Agent(store, "bob").search()))
    assert found == {"prefers espresso"}
    namespaces = with_store(home, lambda store: store.list_namespaces())
    assert sorted(namespaces) == [("memories", "alice"), ("memories", "bob")]


def test_one_user_config_writes_the_namespace_literally_and_leaves_other_namespaces_alone(
    home: Path, cli: Any
) -> None:
    configure(home)
    config = (home / "config" / "config.toml").read_text()
    config = config.replace('scope = { user_id = "*" }', 'scope = { user_id = "alice" }')
    config = config.replace(
        'namespace = ["memories", "{user_id}"]', 'namespace = ["memories", "alice"]'
    )
    config = config.replace('direction = "push"', 'direction = "push"\nscope_key = "alice"')
    write_config(home, config)
    with Mem0App(home) as memory:
        add(memory, "alice", ALICE)
    sync(cli)
    with_store(home, lambda store: Agent(store, "bob").remember("bob's own note"))
    sync(cli)
    found = with_store(home, lambda store: texts(Agent(store, "alice").search()))
    assert found == set(ALICE)
    assert {m["memory"] for m in mem0_memories(home, "alice")} == set(ALICE)
    assert "agents: 1 node outside the layout's namespaces" in cli("status").output
