"""Mem0's past comes along into a new mnem store, on the real parts: Mem0's library (offline,
its own history database, every add, edit and delete made through its API), the real mnem SDK,
and ``mnem-mcp`` asked over stdio with the official ``mcp`` client, as an agent asks it.

The world: memsync syncs alice's Mem0 memories into a PMM backup for a while (so its journal
sees them), then one is deleted in Mem0, then the team moves to mnem. ``migrate`` into a new
store brings each memory's history; a second store made with ``--no-history`` is the
current-state import, and the two HEADs must be the same nodes exactly.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client  # a test dependency (dev extra): missing, it is an error, not a skip
from mcp.client.stdio import StdioServerParameters

from memsync.cli import main
from tests.conftest import subprocess_env, write_config
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, mem0_table

BACKDATED = "2021-06-01T09:30:00.123456-07:00"
TEA, TEA_NOW = "Prefers green tea over coffee", "Prefers matcha over coffee"


def memsync(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner(env={"MEMSYNC_HOME": str(home)}).invoke(
        main, list(args), catch_exceptions=False
    )
    return result.exit_code, result.output


def configure(home: Path, *mnem: str, layout: str = "") -> None:
    tables = "".join(
        f'\n[providers.{name}]\ntype = "mnem"\npath = "{home / name}"\ncreate = true\n'
        + ("import_history = false\n" if name.startswith("plain") else "")
        + layout
        for name in mnem
    )
    write_config(
        home,
        '[sync]\nactive = "mem0"\n'
        + mem0_table("mem0", home / "stores")
        + f'\n[providers.backup]\ntype = "pmm-dir"\npath = "{home / "pmm"}"\ndirection = "push"\n'
        + tables,
    )


def next_millisecond() -> None:
    """Wait for the clock's next millisecond: each Mem0 event then has an instant of its own,
    and so (with event windows) a commit of its own, whose author is that event's actor."""
    start = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 == start:
        pass


def add(memory: Any, text: str, role: str = "user", name: str | None = None, **kw: Any) -> str:
    next_millisecond()
    message = {"role": role, "content": text, **({"name": name} if name else {})}
    answer = memory.add([message], user_id="alice", infer=False, **kw)
    return str(answer["results"][0]["id"])


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory, mnem: ModuleType) -> Iterator[dict[str, Any]]:
    """Mem0 used, synced to a backup, one memory deleted, then migrated into two new stores."""
    home = tmp_path_factory.mktemp("history-library")
    (home / "config").mkdir()
    configure(home)
    with App(home, "mem0") as memory:
        ids = {
            "tea": add(memory, TEA, "assistant", "bot-7", metadata={"topic": "drinks"}),
            "city": add(memory, "Lives in Lisbon"),
            "cat": add(memory, "Has a cat named Tom", metadata={"created_at": BACKDATED}),
            "work": add(memory, "Works at Initech"),
            "trip": add(memory, "Is in Paris this week", expiration_date="2021-01-08"),
        }
        memory.delete(add(memory, "Planning a surprise"))  # gone before memsync ever saw it
    assert memsync(home, "sync")[0] == 0  # the journal now knows alice's memories
    with App(home, "mem0") as memory:
        for edit in (
            lambda: memory.update(ids["tea"], text=TEA_NOW),
            lambda: memory.update(ids["city"], text="Lives in Porto"),
            lambda: memory.update(ids["city"], text="Lives in Berlin"),
            lambda: memory.update(ids["tea"], metadata={"topic": "tea"}),  # metadata only
            lambda: memory.delete(ids["work"]),
        ):
            next_millisecond()
            edit()
    assert memsync(home, "sync")[0] == 0  # the journal sees the delete
    configure(home, "agent", "plain")
    code, out = memsync(home, "migrate", "--from", "mem0", "--to", "agent", "--json")
    assert code == 0, out
    plain = memsync(home, "migrate", "--from", "mem0", "--to", "plain", "--json")
    assert plain[0] == 0, plain[1]
    yield {"home": home, "ids": ids, "report": json.loads(out), "plain": json.loads(plain[1])}


def opened(mnem: ModuleType, path: Path) -> Any:
    gc.collect()
    return mnem.open(str(path))


def test_migrate_brings_every_version_at_its_own_time_and_head_is_the_current_state_import(
    moved: dict[str, Any], mnem: ModuleType
) -> None:
    home, ids, report = moved["home"], moved["ids"], moved["report"]
    history = report["history"]
    assert history["written"] and history["memories"] == 5
    # the library's history names no scope: a memory memsync never saw cannot be placed
    assert history["reasons"] == {"deleted before the move, scope unknown": 1}
    assert report["imported"] == 4 and moved["plain"]["history"] is None
    store = opened(mnem, home / "agent")
    try:
        plain = opened(mnem, home / "plain")
        try:
            ours = {k: v.to_dict() for k, v in store.working_memory().items()}
            theirs = {k: v.to_dict() for k, v in plain.working_memory().items()}
        finally:
            del plain
        assert ours == theirs and len(ours) == 3  # same ids, contents, provenance, notes
        assert f"mem0:{ids['trip']}" not in ours  # expired: written, then forgotten, as without
        chain = list(reversed(store.log(first_parent=True)))
        times = [commit.time for commit in chain]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert chain[0].message.endswith("begins") and store.state_at(chain[0].id) == {}
        assert "imported" in chain[-1].message and chain[-1].author == "memsync"
        assert chain[1].time < 1_700_000_000_000  # the cat, added in 2021 (its metadata)
        texts = [
            [n.content for n in store.state_at(c.id).values() if isinstance(n.content, str)]
            for c in chain
        ]
        work = [i for i, state in enumerate(texts) if "Works at Initech" in state]
        assert work and work[-1] < len(chain) - 1  # there between its add and its delete
        assert "Works at Initech" not in texts[-1]
        assert not any("Planning a surprise" in state for state in texts)
        assert any("Lives in Porto" in state for state in texts)  # the version in between
        assert f"mem0:{ids['work']}" not in ours
    finally:
        del store
        gc.collect()


def test_a_sync_after_the_history_import_writes_what_it_writes_without_and_verify_holds(
    moved: dict[str, Any], mnem: ModuleType
) -> None:
    home = moved["home"]
    code, out = memsync(home, "sync", "--json")
    assert code == 0, out
    providers = json.loads(out)["providers"]
    # as after the import without history: only the expired memory, which mnem does not serve,
    # is written again (and forgotten again); nothing else
    assert providers["agent"]["written"] == providers["plain"]["written"] == 1
    gc.collect()
    code, out = memsync(home, "verify", "mem0", "agent")
    assert code == 0, out


def test_a_store_with_commits_gets_no_history_and_the_report_says_why(
    moved: dict[str, Any],
) -> None:
    code, out = memsync(moved["home"], "migrate", "--from", "mem0", "--to", "agent", "--history")
    assert code == 0, out
    assert "imported 0, 4 already there" in out
    assert "history: not imported: the store has commits already" in out


async def ask_as_an_agent(store: Path, tea: str) -> dict[str, Any]:
    env = subprocess_env()
    env.pop("MNEM_AUTHOR", None)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mnem_mcp", "--store", str(store), "--tools", "all"],
        env=env,
    )
    async with Client(params) as client:

        async def call(tool: str, **args: Any) -> Any:
            result = await client.call_tool(tool, args)
            assert not result.is_error, result.content
            found = result.structured_content or {}
            return found.get("result", found)

        now_since = await call("when_did", id=tea, equals=TEA_NOW)
        added = await call("when_did", id=tea, present=True)
        return {
            "now_since": now_since,
            "why": await call("why", id=tea),
            "added": added,
            "then": await call("recall_at", commit=added["commit"], id=tea),
            "history": await call("history", limit=50),
        }


def test_an_agent_on_mnem_mcp_sees_the_past_before_the_move(
    moved: dict[str, Any], mnem: ModuleType
) -> None:
    gc.collect()
    tea = f"mem0:{moved['ids']['tea']}"
    answers = anyio.run(ask_as_an_agent, moved["home"] / "agent", tea)
    log = {entry["id"]: entry for entry in answers["history"]}
    (move,) = [entry for entry in log.values() if "imported" in entry["message"]]
    since = log[answers["now_since"]["commit"]]
    assert since["time"] < move["time"]  # the matcha text dates from before the move
    assert since["author"] == "bot-7" and since["message"].startswith("mem0: ")
    assert answers["why"]["node"]["provenance"]["source"] == "bot-7"  # the Mem0 actor
    assert answers["then"]["content"] == TEA  # the text it had when it was added
    messages = [entry["message"] for entry in answers["history"]]
    assert any("deleted" in m for m in messages) and any("updated" in m for m in messages)
    assert messages[-1].endswith("begins")


def test_the_first_sync_into_a_new_store_brings_the_history_and_then_has_nothing_to_write(
    tmp_path: Path, mnem: ModuleType
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    configure(home, "agent")
    with App(home, "mem0") as memory:
        tea = add(memory, TEA, "assistant", "bot-7")
        add(memory, "Lives in Lisbon")
        memory.update(tea, text=TEA_NOW)
    code, out = memsync(home, "migrate", "--from", "mem0", "--to", "agent", "--dry-run")
    assert code == 0 and "history: would import 3 version(s) of 2 memories" in out, out
    code, out = memsync(home, "sync", "--dry-run", "--json")
    assert code == 0, out
    planned = json.loads(out)["providers"]["agent"]["history"]
    assert not planned["written"] and planned["versions"] == 3 and planned["commits"] >= 2
    assert not (home / "agent").exists()  # a dry run makes no store
    code, out = memsync(home, "sync", "--json")
    assert code == 0, out
    report = json.loads(out)
    agent = report["providers"]["agent"]
    assert agent["history"]["written"] and agent["history"]["versions"] == 3
    assert agent["written"] == 0 and agent["added"] == 2  # listed after the import: linked
    store = opened(mnem, home / "agent")
    try:
        texts = [node.content for node in store.working_memory().values()]
        assert sorted(texts) == ["Lives in Lisbon", TEA_NOW]
        assert any(c.author == "bot-7" for c in store.log())
        head = store.head_commit()
    finally:
        del store
    code, out = memsync(home, "sync", "--json")
    assert code == 0 and "history" not in json.loads(out)["providers"]["agent"], out
    assert opened(mnem, home / "agent").head_commit() == head
    gc.collect()
    assert memsync(home, "verify", "mem0", "agent")[0] == 0


def test_a_langgraph_store_of_one_user_gets_the_history_in_its_namespace(
    tmp_path: Path, mnem: ModuleType
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    configure(
        home,
        "agent",
        "plain",
        layout='layout = { type = "langgraph", namespace = ["memories", "alice"] }\n',
    )
    with App(home, "mem0") as memory:
        tea = add(memory, TEA, "assistant", "bot-7", metadata={"topic": "drinks"})
        next_millisecond()
        memory.update(tea, text=TEA_NOW)
    for name, flag in (("agent", "--history"), ("plain", "--no-history")):
        code, out = memsync(home, "migrate", "--from", "mem0", "--to", name, flag)
        assert code == 0, out
    assert nodes_of(mnem, home / "agent") == nodes_of(mnem, home / "plain")
    store = opened(mnem, home / "agent")
    try:
        (node_id,) = store.working_memory()
        assert node_id == f"memories:alice:{tea}"  # where mnem-langgraph looks for it
        past = [store.state_at(c.id).get(node_id) for c in store.log(first_parent=True)]
        values = [node.content["content"] for node in past if node is not None]
        assert values[-1] == TEA and values[0] == TEA_NOW  # newest first
    finally:
        del store
        gc.collect()


def nodes_of(mnem: ModuleType, path: Path) -> dict[str, Any]:
    store = opened(mnem, path)
    try:
        return {k: v.to_dict() for k, v in store.working_memory().items()}
    finally:
        del store
        gc.collect()
