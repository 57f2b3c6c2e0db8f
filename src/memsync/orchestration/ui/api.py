"""The status page's JSON API: the routes that read, and the two that act (resolve, verify)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memsync.base.errors import LockHeld, MemsyncError
from memsync.config import load_config
from memsync.engine.conflicts import choose_winner
from memsync.engine.report import SyncOptions
from memsync.orchestration.runner import run_sync
from memsync.orchestration.status import cycle_history, page_status, scope_page
from memsync.orchestration.ui.data import conflict_views, find_memories, memory_timeline
from memsync.orchestration.verify import verify_pair
from memsync.staging import StagingStore

if TYPE_CHECKING:
    from memsync.orchestration.ui.handler import Handler


def _status(handler: Handler, query: dict[str, list[str]]) -> dict[str, Any]:
    return page_status(handler.server.paths)


def _scopes(handler: Handler, query: dict[str, list[str]]) -> dict[str, Any]:
    """A page of one team provider's scopes: ?provider=NAME&offset=N&limit=N&attention=1."""
    provider = (query.get("provider") or [""])[0]
    if not provider:
        raise MemsyncError("/api/scopes needs ?provider=NAME")
    try:
        offset = int((query.get("offset") or ["0"])[0])
        limit = min(500, int((query.get("limit") or ["50"])[0]))
    except ValueError:
        raise MemsyncError("offset and limit are whole numbers") from None
    attention = (query.get("attention") or ["0"])[0] in ("1", "true")
    return scope_page(
        handler.server.paths, provider, offset=offset, limit=limit, attention=attention
    )


def _history(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return cycle_history(store)


def _conflicts(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return conflict_views(store)


def _search(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return find_memories(store, (query.get("q") or [""])[0])


def _timeline(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return memory_timeline(store, (query.get("id") or [""])[0])


def _resolve(handler: Handler, body: dict[str, Any]) -> dict[str, Any]:
    """What `memsync resolve ID --keep NAME` does: record the winner, then run a cycle."""
    paths = handler.server.paths
    conflict_id, keep = body.get("id"), body.get("keep")
    if not isinstance(conflict_id, int) or not isinstance(keep, str):
        raise MemsyncError("resolve needs a conflict id and the provider to keep")
    config = load_config(paths.config_file)
    with StagingStore.open(paths.database, create=False) as store:
        choose_winner(store, conflict_id, keep)
    try:
        report = run_sync(
            paths,
            config,
            SyncOptions(stop=handler.server.stopping),
            lock_wait=handler.server.lock_wait,
        )
    except LockHeld as exc:
        handler.server.metrics.cycle_not_run("busy")
        return {
            "message": f"conflict #{conflict_id}: keeping {keep}'s version; {exc}; the choice "
            "is recorded and the next cycle applies it",
            "exit_code": None,
            "busy": True,
        }
    handler.server.metrics.cycle_ended(report.run_id, per_scope=config.metrics.per_scope)
    return {
        "message": f"conflict #{conflict_id}: kept {keep}'s version",
        "exit_code": report.exit_code,
        "cycle": report.as_dict(),
    }


def _verify(handler: Handler, body: dict[str, Any]) -> dict[str, Any]:
    """What `memsync verify A B` does, its result kept for the readiness view."""
    a, b = body.get("a"), body.get("b")
    if not isinstance(a, str) or not isinstance(b, str):
        raise MemsyncError("verify needs two provider names")
    config = load_config(handler.server.paths.config_file)
    return verify_pair(config, handler.server.paths.database, a, b).as_dict()


GET_API: dict[str, Callable[[Handler, dict[str, list[str]]], Any]] = {
    "/api/status": _status,
    "/api/scopes": _scopes,
    "/api/history": _history,
    "/api/conflicts": _conflicts,
    "/api/memory/search": _search,
    "/api/memory/history": _timeline,
}


POST_API: dict[str, Callable[[Handler, dict[str, Any]], Any]] = {
    "/api/resolve": _resolve,
    "/api/verify": _verify,
}
