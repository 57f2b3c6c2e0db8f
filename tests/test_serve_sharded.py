"""A root with a mnem store per namespace, served as one store: ``memsync.langgraph`` answers on
it as ``mnem_langgraph.MnemosyneStore`` answers on one store, alone and through the daemon, and
agents' writes through the daemon (LangMem's tools, and ``memsync mcp`` over the official MCP
client) reach Mem0 under their user, a user only an agent knows included.

Real processes and parts: ``memsync daemon`` as its own process, the Mem0 server double (a real
mem0 Memory) on a loopback socket, the real mnem SDK and mnem-langgraph.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client  # a test dependency (dev extra): missing, it is an error, not a skip
from mcp.client.stdio import StdioServerParameters

from tests.conftest import subprocess_env, write_config
from tests.live_world import ServedServer, served_mem0_server
from tests.mnem_sdk import real_sdk
from tests.test_daemon import DaemonProcess
from tests.test_layouts_agents import Agent, texts
from tests.test_live_watch import DEADLINE, wait_until
from tests.test_serve_langgraph import item, outcome, sdk_object
from tests.test_serve_mcp import Names

ALONE = """
[sync]
active = "agents"
interval = "1h"

[providers.agents]
type = "mnem"
path = "{root}"
create = true
layout = {{ type = "langgraph", namespace = ["memories", "alice"], stores = "per-namespace" }}
"""

TEAM = """
[sync]
active = "server"
interval = "1h"
probe = "1s"
watch = false

[backup]
interval = "1h"

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{root}"
create = true
layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"], stores = "per-namespace" }}
"""


def body(store: Any) -> list[Any]:
    """What a LangGraph application does with a store (branches aside: they are per store)."""
    names = Names()
    since = datetime.now(UTC)  # a timestamp from here on is "now"
    seen: list[Any] = []
    alice, bob = ("memories", "alice"), ("memories", "bob")
    store.put(alice, "k1", {"content": "prefers tea", "topic": "drinks", "_meta": {"source": "c1"}})
    store.put(alice, "k2", {"content": "walks to work", "topic": "travel", "n": 2})
    store.put(bob, "k1", {"content": "likes jazz", "topic": "music", "_meta": {"step": "s4"}})
    store.put(("memories", "alice", "deep"), "k9", {"content": "a sub-namespace"})
    store.put(("prefs",), "theme", {"v": "dark", "unicode": "é☕"})
    seen.append(item(names, since, store.get(alice, "k1")))
    seen.append(item(names, since, store.get(alice, "missing")))
    seen.append(item(names, since, store.get(("nobody",), "x")))
    searches: list[dict[str, Any]] = [
        {"namespace_prefix": ("memories",)},
        {"namespace_prefix": alice, "filter": {"topic": "drinks"}},
        {"namespace_prefix": ("memories",), "query": "JAZZ"},
        {"namespace_prefix": ("memories",), "limit": 2, "offset": 1},
        {"namespace_prefix": ()},
        {"namespace_prefix": ("memories",), "filter": {"n": 2, "topic": "travel"}},
    ]
    for search in searches:
        prefix = search.pop("namespace_prefix")
        seen.append([item(names, since, found) for found in store.search(prefix, **search)])
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("memories",)))
    seen.append(store.list_namespaces(suffix=("alice",)))
    seen.append(store.list_namespaces(max_depth=1))
    seen.append(store.list_namespaces(limit=1, offset=1))
    store.delete(alice, "k2")
    seen.append(item(names, since, store.get(alice, "k2")))
    seen.append(sdk_object(names, store.why(alice, "k1")))
    seen.append(sdk_object(names, store.why(bob, "k1")))
    seen.append(outcome(names, lambda: store.why(alice, "k2")))
    seen.append(sorted((c.message, c.author) for c in store.history(limit=50)))
    seen.append(outcome(names, lambda: store.put(alice, "when", {"at": datetime.now(UTC)})))

    async def later() -> list[Any]:
        await store.aput(bob, "k2", {"content": "async write"})
        return [
            item(names, since, await store.aget(bob, "k2")),
            [
                item(names, since, f)
                for f in await store.asearch(("memories", "bob"), query="async")
            ],
            await store.alist_namespaces(prefix=("memories",)),
        ]

    seen.append(asyncio.run(later()))
    return seen


def test_memsync_store_on_a_sharded_root_answers_as_mnem_langgraph_on_one_store(
    home: Path, tmp_path: Path
) -> None:
    import mnem_langgraph

    from memsync.langgraph import MnemosyneStore

    mnem = real_sdk()
    one = tmp_path / "one"
    made = mnem.init(str(one))
    del made
    gc.collect()
    theirs_store = mnem_langgraph.MnemosyneStore(str(one), author="agent-x")
    theirs = body(theirs_store)
    del theirs_store
    gc.collect()

    write_config(home, ALONE.format(root=tmp_path / "alone"))  # the client finds it sharded
    alone = MnemosyneStore(str(tmp_path / "alone"), author="agent-x")
    ours_alone = body(alone)
    assert not alone._client.via_daemon
    alone.close()

    write_config(home, ALONE.format(root=tmp_path / "served"))
    daemon = DaemonProcess(home)
    try:
        daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
        served = MnemosyneStore(str(tmp_path / "served"), author="agent-x")
        ours_served = body(served)
        assert served._client.via_daemon
        served.close()
        code, _ = daemon.stop()
    finally:
        daemon.kill()
    assert code == 0

    assert ours_alone == theirs
    assert ours_served == theirs
    raised = [entry[1] for entry in theirs if isinstance(entry, list) and entry[:1] == ["raised"]]
    assert raised == ["InvalidRefError", "TypeError"]  # the errors compared too
    shards = sorted(p.name for p in (tmp_path / "served").iterdir() if p.name[0] != ".")
    assert shards == ["memories%3Aalice", "memories%3Aalice%3Adeep", "memories%3Abob", "prefs"]


@pytest.fixture
def team(home: Path, tmp_path: Path) -> Iterator[tuple[ServedServer, Path]]:
    real_sdk()
    root = tmp_path / "agents"
    with served_mem0_server() as server:
        write_config(home, TEAM.format(url=server.url, root=root))
        yield server, root


def mcp_session(root: Path, home: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call's answer from ``memsync mcp --store ROOT``, through the official MCP client."""
    env = subprocess_env(MEMSYNC_HOME=str(home))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memsync", "mcp", "--store", str(root)], env=env
    )

    async def session() -> list[Any]:
        answers = []
        async with Client(params) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    answers.append({"error": result.content[0].text})  # type: ignore[union-attr]
                    continue
                answer = result.structured_content or {}
                answers.append(answer["result"] if set(answer) == {"result"} else answer)
        return answers

    answers: list[Any] = anyio.run(session)
    return answers


def test_agents_writes_through_the_daemon_reach_mem0_under_their_user(
    home: Path, team: tuple[ServedServer, Path]
) -> None:
    from memsync.langgraph import MnemosyneStore

    server, root = team
    tea = server.add("alice likes tea", user_id="alice")
    server.add("bob plays chess", user_id="bob")
    daemon = DaemonProcess(home)
    try:
        daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
        assert sorted(p.name for p in root.iterdir() if p.name[0] != ".") == [
            "memories%3Aalice",
            "memories%3Abob",
        ]
        store = MnemosyneStore(str(root), author="support-agent")
        assert texts(Agent(store, "alice").search()) == {"alice likes tea"}
        Agent(store, "alice").remember("alice walks to work")
        Agent(store, "carol").remember("carol keeps bees")  # a user Mem0 does not know yet
        assert store._client.via_daemon
        wait_until(lambda: "alice walks to work" in server.texts("alice"), "alice's write")
        wait_until(lambda: "carol keeps bees" in server.texts("carol"), "carol's write")
        server.add("bob reads at night", user_id="bob")  # Mem0 -> bob's store, read as one
        wait_until(
            lambda: "bob reads at night" in texts(Agent(store, "bob").search()), "bob's memory"
        )
        store.close()

        answers = mcp_session(
            root,
            home,
            [
                ("remember", {"id": "memories:bob:k1", "content": {"content": "bob cycles"}}),
                ("recall", {"id": f"memories:alice:{tea}"}),
                ("why", {"id": "memories:bob:k1"}),
                ("history", {"limit": 3}),
                ("recall", {"id": "memories:nobody:x"}),
                ("memory_export", {}),
            ],
        )
        written, recalled, why, history, nobody, export = answers
        assert recalled["content"]["content"] == "alice likes tea"
        assert why["commit"] == written["commit"]
        assert written["commit"] in {row["id"] for row in history}
        assert nobody is None
        assert "memsync export --provider" in export["error"]  # one store's tool: said so
        wait_until(lambda: "bob cycles" in server.texts("bob"), "the MCP agent's write")
        code, _ = daemon.stop()
    finally:
        daemon.kill()
    assert code == 0
    note = json.loads((root / ".memsync-shards").read_text())
    assert note["format"] == 1
