"""``memsync mcp`` answers as ``mnem-mcp`` does: the official ``mcp`` client, over stdio, calls
every tool and reads every resource of mnem-mcp 0.0.1 on both servers, over copies of the same
store, and gets the same answers; memsync's also through the daemon. Beside them, its PMM tools
export a valid PMM file and import it without a duplicate.

Commit ids and times differ between runs (a commit hashes its time), so each transcript names
every 64-hex id by its first appearance and every ``time`` by a placeholder; everything else,
state hashes, node contents, provenance, error texts, must be byte for byte the same.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client  # a test dependency (dev extra): missing, it is an error, not a skip
from mcp.client.stdio import StdioServerParameters

from tests.conftest import subprocess_env, write_config
from tests.mnem_sdk import real_sdk
from tests.test_daemon import DaemonProcess
from tests.test_live_watch import DEADLINE, init_store

CONFIG = """
[sync]
active = "agent"
interval = "1h"

[backup]
interval = "1h"

[providers.agent]
type = "mnem"
path = "{store}"

[providers.backup]
type = "pmm-dir"
path = "{home}/pmm"
direction = "push"
"""

HEX = re.compile(r"\b[0-9a-f]{64}\b")
MNEM_MCP_TOOLS = {
    "remember",
    "revise",
    "remember_many",
    "forget",
    "recall",
    "recall_at",
    "history",
    "why",
    "when_did",
    "whats_new",
    "branch",
    "switch",
    "merge",
}


def seed(path: Path) -> Path:
    """A store with some history: what every side starts from (copied, ids and all)."""
    mnem = real_sdk()
    store = mnem.init(str(path))
    store.add("tea", "alice likes tea", provenance=mnem.Provenance(source="chat-1"))
    store.add("mem0:42", "bob walks", provenance=mnem.Provenance(note='{"memsync": 1}'))
    store.commit("seed", author="memsync", time_ms=1_700_000_000_000)
    store.add("prefs", {"drink": "tea", "n": 2, "x": [1, 2.5, None, "é"]}, event_time=17)
    store.commit("seed 2", author="someone", time_ms=1_700_000_100_000)
    del store
    import gc

    gc.collect()
    return path


class Names:
    """64-hex ids by first appearance, so two runs with different commit times compare."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def name(self, text: str) -> str:
        return HEX.sub(lambda m: self.seen.setdefault(m.group(0), f"<id{len(self.seen)}>"), text)

    def normal(self, value: Any, key: str = "") -> Any:
        if key == "time" and isinstance(value, int):
            return "<time>"
        if isinstance(value, dict):
            return {k: self.normal(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.normal(v) for v in value]
        if isinstance(value, str):
            if value[:1] in "{[":
                try:
                    return {"json": self.normal(json.loads(value))}
                except ValueError:
                    pass
            return self.name(value)
        return value


def by_parents(value: Any) -> Any:
    """Every list of commits in VALUE (a history answer, its JSON text too) ordered newest
    first by parent links: mnem's log orders by time, and two commits made within one
    millisecond come in either order."""
    if isinstance(value, dict):
        return {key: by_parents(item) for key, item in value.items()}
    if isinstance(value, str) and value[:1] == "[":
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return json.dumps(by_parents(decoded), indent=2)
    if not isinstance(value, list):
        return value
    if not value or not all(isinstance(c, dict) and "parents" in c for c in value):
        return [by_parents(item) for item in value]
    by_id = {c["id"]: c for c in value}
    parents = {p for c in value for p in c["parents"]}
    heads = [c for c in value if c["id"] not in parents]
    if len(heads) != 1:
        return value
    ordered = heads
    while ordered[-1]["parents"] and ordered[-1]["parents"][0] in by_id:
        ordered = [*ordered, by_id[ordered[-1]["parents"][0]]]
    return ordered if len(ordered) == len(value) else value


async def transcript(params: StdioServerParameters) -> dict[str, Any]:
    """Every mnem-mcp tool and resource, called in one order; the answers, normalised."""
    names = Names()
    calls: list[Any] = []
    async with Client(params) as client:

        async def call(tool: str, **args: Any) -> Any:
            result = await client.call_tool(tool, args)
            answer = result.model_dump(mode="json", exclude_none=True)
            calls.append([tool, names.normal(by_parents(answer) if tool == "history" else answer)])
            return result.structured_content or {}

        async def read(uri: str) -> None:
            result = await client.read_resource(uri)
            answer = result.model_dump(mode="json", exclude_none=True)
            calls.append([names.name(uri), names.normal(by_parents(answer))])

        head = (await call("history", limit=1))["result"][0]["id"]
        first = (
            await call(
                "remember",
                id="tea",
                content="alice likes green tea",
                source="chat-2",
                step="s2",
                observation="she said so",
                summary="tea, revised",
            )
        )["commit"]
        await call("revise", id="prefs", content={"drink": "coffee", "n": 3})
        await call("remember", id="préférence", content=["a", {"b": None}, 1e100])
        await call("remember", id="nothing", content=None)
        many = (
            await call(
                "remember_many",
                items=[
                    {"id": "a1", "content": "one", "source": "s"},
                    {"id": "a2", "content": {"k": "v"}, "step": "t", "observation": "o"},
                ],
                summary="two at once",
            )
        )["commit"]
        await call("remember_many", items=[{"id": "broken"}])
        await call("remember_many", items=[])
        for args in ({"id": "tea"}, {}, {"id": "missing"}):
            await call("recall", **args)
        for args in ({"commit": head}, {"commit": head, "id": "tea"}, {"commit": "nosuch"}):
            await call("recall_at", **args)
        await call("history")
        await call("history", limit=2)
        for args in ({"id": "tea"}, {"id": "tea", "at": head}, {"id": "missing"}):
            await call("why", **args)
        await call("when_did", id="tea", equals="alice likes green tea")
        await call("when_did", id="a1", present=True)
        await call("when_did", id="tea")
        await call("whats_new", commit=first)
        await call("whats_new", commit=many)
        await call("whats_new", commit="zz")
        await call("forget", id="a1", summary="not true")
        await call("forget", id="missing")
        await call("when_did", id="a1", absent=True)
        await call("branch", name="try")
        await call("branch", name="try")
        await call("switch", target="try")
        await call("remember", id="guess", content="alice may move")
        await call("switch", target="main")
        await call("merge", theirs="try")
        await call("merge", theirs="nosuch")
        await call("switch", target="nosuch")
        for uri in ("mnem://memory", "mnem://memory/tea", "mnem://log", f"mnem://commit/{first}"):
            await read(uri)
        tools = {
            tool.name: names.normal(tool.model_dump(mode="json", exclude_none=True))
            for tool in (await client.list_tools()).tools
        }
        resources = names.normal((await client.list_resources()).model_dump(mode="json"))
        templates = names.normal((await client.list_resource_templates()).model_dump(mode="json"))
        instructions = client.instructions
    return {
        "calls": calls,
        "tools": tools,
        "resources": resources,
        "templates": templates,
        "instructions": instructions,
    }


def run(params: StdioServerParameters) -> dict[str, Any]:
    return anyio.run(transcript, params)


def server(store: Path, home: Path, *command: str) -> StdioServerParameters:
    env = subprocess_env(MEMSYNC_HOME=str(home))
    env.pop("MNEM_AUTHOR", None)
    return StdioServerParameters(
        command=sys.executable, args=[*command, "--store", str(store), "--tools", "all"], env=env
    )


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, Path]:
    original = seed(tmp_path / "seed" / "memory")
    copies = {}
    for side in ("mnem-mcp", "memsync", "memsync-daemon"):
        copies[side] = tmp_path / side / "memory"
        shutil.copytree(original, copies[side])
    return copies


def test_memsync_mcp_answers_every_mnem_mcp_tool_as_mnem_mcp_does(
    tmp_path: Path, stores: dict[str, Path]
) -> None:
    theirs = run(server(stores["mnem-mcp"], tmp_path / "none", "-m", "mnem_mcp"))
    ours_alone = run(server(stores["memsync"], tmp_path / "none", "-m", "memsync", "mcp"))

    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    write_config(home, CONFIG.format(store=stores["memsync-daemon"], home=home))
    daemon = DaemonProcess(home)
    try:
        daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
        ours_served = run(server(stores["memsync-daemon"], home, "-m", "memsync", "mcp"))
        served = [line for line in daemon.lines if "serving agent" in line]
        code, _ = daemon.stop()
    finally:
        daemon.kill()
    assert served and "memsync mcp" in served[0], daemon.lines  # it went through the daemon
    assert code == 0

    assert len(theirs["calls"]) == 40
    errors = [answer for _, answer in theirs["calls"] if answer.get("is_error")]
    assert len(errors) == 10  # the error paths are compared too
    for ours in (ours_alone, ours_served):
        assert ours["calls"] == theirs["calls"]
        assert set(ours["tools"]) == MNEM_MCP_TOOLS | {"memory_export", "memory_import"}
        assert {name: ours["tools"][name] for name in MNEM_MCP_TOOLS} == theirs["tools"]
        assert ours["resources"] == theirs["resources"]
        assert ours["templates"] == theirs["templates"]
        assert ours["instructions"] == theirs["instructions"]


async def export_then_import(params: StdioServerParameters, fmt: str) -> tuple[str, Any, Any]:
    async with Client(params) as client:
        exported = await client.call_tool("memory_export", {"format": fmt})
        assert not exported.is_error, exported
        data = exported.content[0].text  # type: ignore[union-attr]
        again = await client.call_tool("memory_import", {"data": data})
        recalled = await client.call_tool("recall", {})
    return data, again.structured_content, recalled.structured_content


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_memory_export_is_a_valid_pmm_file_and_importing_it_again_imports_nothing_twice(
    tmp_path: Path, fmt: str
) -> None:
    from memsync.base.pmm import Rejected, open_pmm

    store = seed(tmp_path / "memory")
    data, report, recalled = anyio.run(
        export_then_import, server(store, tmp_path / "none", "-m", "memsync", "mcp"), fmt
    )
    path = tmp_path / f"export.pmm.{fmt}"
    path.write_text(data)
    with open_pmm(path) as reader:
        assert reader.header.pmm_version == 1
        records = list(reader)
    assert not [r for r in records if isinstance(r, Rejected)]
    by_id = {record.id: record for record in records}
    assert set(by_id) == {"tea", "mem0:42", "prefs"}
    assert by_id["tea"].content == "alice likes tea"
    assert {r.scope_key for r in records} == {"memory"}

    assert report["imported"] == 0 and report["updated"] == 0
    assert sorted(s["id"] for s in report["skipped"]) == sorted(by_id)
    assert set(recalled["result"]) == {"tea", "mem0:42", "prefs"}  # nothing written twice

    empty = init_store(tmp_path / "empty")  # the same file into an empty store: all of it
    params = server(empty, tmp_path / "none", "-m", "memsync", "mcp")

    async def load() -> tuple[Any, Any]:
        async with Client(params) as client:
            first = await client.call_tool("memory_import", {"data": data})
            second = await client.call_tool(
                "memory_import", {"data": data, "merge_strategy": "skip_duplicates"}
            )
        return first.structured_content, second.structured_content

    first, second = anyio.run(load)
    assert first["imported"] == 3 and not first["rejected"] and not first["failed"]
    assert second["imported"] == 0 and len(second["skipped"]) == 3


def test_a_bad_pmm_document_is_one_clear_tool_error(tmp_path: Path) -> None:
    store = seed(tmp_path / "memory")
    params = server(store, tmp_path / "none", "-m", "memsync", "mcp")

    async def bad() -> Any:
        async with Client(params) as client:
            return await client.call_tool("memory_import", {"data": '{"nope": 1}'})

    result = anyio.run(bad)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "pmm" in text.lower() and "Traceback" not in text, text
