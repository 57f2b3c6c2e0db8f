"""``memsync mcp``: mnem-mcp's MCP server, on a store memsync serves.

The tools, their arguments and their answers are mnem-mcp 0.0.1's (the same names, signatures
and descriptions, on the ``mcp`` package's ``MCPServer``), so an agent's MCP config changes its
command and nothing else. The store is reached through ``StoreClient``: the daemon holds it when
it runs, this process when it does not. Beside them, OpenMem's PMM tools ``memory_export`` and
``memory_import`` run on memsync's PMM codec and import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mnem import MnemError

from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths
from memsync.orchestration.serve.client import StoreClient
from memsync.orchestration.serve.ops import LOG_LIMIT
from memsync.orchestration.serve.sharded import ShardedClient, store_client
from memsync.orchestration.serve.wire import ServeError

INSTRUCTIONS = (
    "Mnemosyne: the agent's memory, under version control. "
    "Record what you learn with `remember` (include where it came from); "
    "trace a wrong belief with `why` and `when_did`."
)
# MnemError subclass name -> the code an agent sees (mnem-mcp's table).
CODES = {
    "NotFoundError": "not_found",
    "InvalidRefError": "invalid_ref",
    "ConflictError": "conflict",
    "CorruptStoreError": "corrupt_store",
    "NoStoreError": "no_store",
    "StoreIoError": "store_io",
    "FormatVersionError": "format_version",
}
Guard = Callable[..., Any]  # guard(op, **args): the operation's answer, its errors as ToolError


def error_code(exc: MnemError) -> str:
    for kind in type(exc).__mro__:
        if kind.__name__ in CODES:
            return CODES[kind.__name__]
    return "error"


def resolve_store_path(explicit: str | None) -> str:
    """The store path: an explicit argument, then ``$MNEM_STORE``, then ``.`` (as mnem-mcp)."""
    return explicit or os.environ.get("MNEM_STORE") or "."


def build_server(
    store_path: str | None = None, tools: str = "core", *, paths: Paths | None = None
) -> MCPServer:
    """An ``MCPServer`` for one store, as mnem-mcp's ``build_server`` makes it (the tools in
    mnem-mcp's order, then memsync's PMM tools, the resources, and with ``all`` the harness
    tools)."""
    mcp = MCPServer("mnem", instructions=INSTRUCTIONS)
    client = store_client(resolve_store_path(store_path), client="memsync mcp", paths=paths)

    def guard(op: str, **args: Any) -> Any:
        try:
            return client.call(op, **args)
        except MnemError as exc:
            raise ToolError(f"{error_code(exc)}: {exc}") from None
        except (ServeError, MemsyncError) as exc:  # memsync's own (a bad PMM document)
            raise ToolError(str(exc)) from None

    _add_write_tools(mcp, guard)
    _add_read_tools(mcp, guard)
    _add_portable_tools(mcp, guard, client)
    _add_resources(mcp, guard)
    if tools == "all":
        _add_harness_tools(mcp, guard)
    return mcp


def _add_write_tools(mcp: MCPServer, guard: Guard) -> None:
    """mnem-mcp's writes: each one commit by the agent."""

    @mcp.tool()
    def remember(
        id: str,
        content: Any,
        source: str | None = None,
        step: str | None = None,
        observation: str | None = None,
        summary: str | None = None,
    ) -> dict[str, Any]:
        """Record one fact in memory as a commit, with where it came from."""
        answer: dict[str, Any] = guard(
            "remember",
            id=id,
            content=content,
            source=source,
            step=step,
            observation=observation,
            summary=summary,
        )
        return answer

    @mcp.tool()
    def revise(
        id: str,
        content: Any,
        source: str | None = None,
        step: str | None = None,
        observation: str | None = None,
        summary: str | None = None,
    ) -> dict[str, Any]:
        """Change an existing belief. Same as `remember`; the name says intent."""
        return remember(id, content, source, step, observation, summary)

    @mcp.tool()
    def remember_many(items: list[dict[str, Any]], summary: str | None = None) -> dict[str, Any]:
        """Record several facts as one commit. Each item has id, content, and
        optionally source / step / observation."""
        answer: dict[str, Any] = guard("remember_many", items=items, summary=summary)
        return answer

    @mcp.tool()
    def forget(id: str, summary: str | None = None) -> dict[str, Any]:
        """Drop a memory from the next snapshot. Past snapshots keep it."""
        answer: dict[str, Any] = guard("forget", id=id, summary=summary)
        return answer


def _add_read_tools(mcp: MCPServer, guard: Guard) -> None:
    """mnem-mcp's reads: memory now and as it stood, and the history that made it."""

    @mcp.tool()
    def recall(id: str | None = None) -> dict[str, Any] | None:
        """Read one memory, or the whole current memory with no id. A single
        memory comes back with an ``id`` field; the whole memory as
        ``{node_id: memory}``."""
        answer: dict[str, Any] | None = guard("recall", id=id)
        return answer

    @mcp.tool()
    def recall_at(commit: str, id: str | None = None) -> dict[str, Any] | None:
        """Read memory as it stood at a past commit."""
        answer: dict[str, Any] | None = guard("recall_at", commit=commit, id=id)
        return answer

    @mcp.tool()
    def history(limit: int = LOG_LIMIT) -> list[dict[str, Any]]:
        """The recent commits, newest first."""
        answer: list[dict[str, Any]] = guard("history", limit=limit)
        return answer

    @mcp.tool()
    def why(id: str, at: str | None = None) -> dict[str, Any]:
        """The commit and provenance that set a memory's current value."""
        answer: dict[str, Any] = guard("why", id=id, at=at)
        return answer

    @mcp.tool()
    def when_did(
        id: str,
        equals: Any = None,
        absent: bool = False,
        present: bool = False,
        good: str | None = None,
    ) -> dict[str, Any]:
        """The first commit where a memory equals a value, is absent, or is
        present. Pass exactly one of equals / absent / present."""
        answer: dict[str, Any] = guard(
            "when_did",
            id=id,
            equals=equals,
            has_equals=equals is not None,
            absent=absent,
            present=present,
            good=good,
        )
        return answer

    @mcp.tool()
    def whats_new(commit: str) -> dict[str, str]:
        """The memories a commit added, changed or removed."""
        answer: dict[str, str] = guard("whats_new", commit=commit)
        return answer


def _add_portable_tools(mcp: MCPServer, guard: Guard, client: StoreClient | ShardedClient) -> None:
    """OpenMem's PMM tools, on memsync's codec and import (``portable``), the scope named as
    memsync's config names the store."""

    @mcp.tool()
    def memory_export(
        format: str = "jsonl", bank: str | None = None, user_id: str | None = None
    ) -> str:
        """Export this memory as a PMM (portable memory) document, "json" or "jsonl"; bank
        or user_id keeps only the memories of that scope."""
        answer: str = guard(
            "memory_export", format=format, bank=bank, user_id=user_id, **client.place_args()
        )
        return answer

    @mcp.tool()
    def memory_import(data: str, merge_strategy: str = "skip_duplicates") -> dict[str, Any]:
        """Import a PMM document (JSON or JSONL text) into this memory. skip_duplicates (the
        default) skips what it already holds, by id or text; overwrite replaces by id."""
        answer: dict[str, Any] = guard(
            "memory_import", data=data, merge_strategy=merge_strategy, **client.place_args()
        )
        return answer


def _add_resources(mcp: MCPServer, guard: Guard) -> None:
    """mnem-mcp's resources: the memory, one node, the log, one commit."""

    @mcp.resource("mnem://memory")
    def memory_resource() -> str:
        return json.dumps(guard("recall"))

    @mcp.resource("mnem://memory/{node_id}")
    def node_resource(node_id: str) -> str:
        return json.dumps(guard("recall", id=node_id))

    @mcp.resource("mnem://log")
    def log_resource() -> str:
        return json.dumps(guard("history"))

    @mcp.resource("mnem://commit/{commit}")
    def commit_resource(commit: str) -> str:
        return json.dumps(guard("commit_view", commit=commit))


def _add_harness_tools(mcp: MCPServer, guard: Guard) -> None:
    """mnem-mcp's harness tools (``--tools all``): branches and merges."""

    @mcp.tool()
    def branch(name: str, start: str | None = None) -> dict[str, Any]:
        """Fork memory onto a new branch (harness tool)."""
        answer: dict[str, Any] = guard("branch", name=name, start=start)
        return answer

    @mcp.tool()
    def switch(target: str) -> dict[str, Any]:
        """Move HEAD to a branch or commit (harness tool)."""
        answer: dict[str, Any] = guard("switch", target=target)
        return answer

    @mcp.tool()
    def merge(
        theirs: str,
        resolutions: dict[str, str] | None = None,
        strategy: str | None = None,
    ) -> dict[str, Any]:
        """Merge a branch into the current one (harness tool)."""
        answer: dict[str, Any] = guard(
            "merge",
            theirs=theirs,
            resolutions=resolutions,
            strategy=strategy,
            author=os.environ.get("MNEM_AUTHOR") or "unknown",  # as the SDK would here
        )
        return answer
