"""Scope discovery: which users, agents, apps or runs a wildcard provider holds memories for.

Each provider family finds its scopes its own way:

- ``mem0-oss``: the vector store's payloads (one pass over the collection, paged like get_all);
- ``mem0-server``: ``GET /entities``, else ``GET /memories`` without ids (``server_discovery``);
- ``mem0-platform``: ``GET /v1/entities/``, whose four types (user, agent, app, run) fill the
  four scope keys (with fixed keys beside the wildcard: the memories those keys select, merged
  and expired ones included, so that only pairs that hold memories are found);
- ``pmm-dir``: one file per scope key.

A discovery that could not see everything says so (``complete = False``): scopes it missed
are not new this cycle, and scopes known from earlier cycles are still synced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memsync.base.errors import ProviderError
from memsync.base.scopes import Scope
from memsync.providers.base import Provider
from memsync.providers.mem0.paging import fetch_all, start_for

# The Platform's entity types, as the scope key each one fills.
ENTITY_KEYS = {"user": "user_id", "agent": "agent_id", "app": "app_id", "run": "run_id"}
MAX_ENTITY_PAGES = 10_000


@dataclass
class Discovery:
    scopes: set[Scope] = field(default_factory=set)
    complete: bool = True
    note: str | None = None  # why it is not complete (or, complete, what else was seen)
    source: str | None = None  # how the scopes were found ("database", "GET /entities"...)


def discover_scopes(
    provider: Provider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The scopes an open provider holds, as values of the wildcard ``keys``.

    A provider class of another kind may take part by defining ``discover_scopes(keys,
    fixed)`` itself (the benchmarks' synthetic source does).
    """
    own = getattr(provider, "discover_scopes", None)
    if callable(own):
        found: Discovery = own(keys, fixed)
        return found
    if provider.type == "mem0-oss":
        return _from_payloads(provider, keys, fixed)
    if provider.type == "mem0-server":
        from memsync.orchestration.scopes.server_discovery import discover_server_scopes

        return discover_server_scopes(provider, keys, fixed)  # type: ignore[arg-type]
    if provider.type == "mem0-platform":
        return _from_entities(provider, keys, fixed)
    if provider.type == "pmm-dir":
        return _from_files(provider, keys)
    raise ProviderError(f"{provider.name}: a {provider.type} provider cannot discover scopes")


def scope_of(
    fields: Mapping[str, Any], keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Scope | None:
    """The scope a memory belongs to, or None when it lacks a wildcard key or a fixed one."""
    values: dict[str, str] = {}
    for key in keys:
        value = fields.get(key)
        if value is None or str(value) == "":
            return None
        values[key] = str(value)
    if any(str(fields.get(k)) != v for k, v in fixed.items()):
        return None
    return Scope.of(values)


def _scopes(
    rows: Iterable[Mapping[str, Any]], keys: tuple[str, ...], fixed: Mapping[str, str]
) -> set[Scope]:
    found = (scope_of(row, keys, fixed) for row in rows)
    return {scope for scope in found if scope is not None}


# --- mem0-oss ------------------------------------------------------------------------------


def _from_payloads(provider: Any, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
    memory = provider._require_memory()
    store = memory.vector_store

    def payloads(top_k: int) -> list[Mapping[str, Any]]:
        with provider._translate("list the scopes in the store"):
            answer = store.list(filters=dict(fixed) or None, top_k=top_k)
        rows = answer[0] if answer and isinstance(answer[0], list | tuple) else answer
        return [getattr(row, "payload", None) or {} for row in rows or []]

    expected = provider._collection_size(memory)
    fetched = fetch_all(payloads, start=start_for(expected), factor=16)
    discovery = Discovery(_scopes(fetched.items, keys, fixed))
    if not fetched.complete:
        discovery.complete = False
        discovery.note = f"the store returned its maximum of {fetched.top_k} memories"
    return discovery


# --- mem0-platform ---------------------------------------------------------------------------


def _from_entities(provider: Any, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
    if fixed:
        return _from_platform_memories(provider, keys, fixed)
    (key,) = keys  # the config refuses two wildcards without a fixed key on the Platform
    scopes: set[Scope] = set()
    params: dict[str, Any] = dict(provider.params)
    path: str | None = "/v1/entities/"
    for _ in range(MAX_ENTITY_PAGES):
        if path is None:
            break
        body = provider.http.get(path, params=params)
        entities = body.get("results") if isinstance(body, dict) else body
        if not isinstance(entities, list):
            raise ProviderError(f"{provider.name}: GET /v1/entities/ answered no list of entities")
        for entity in entities:
            if not isinstance(entity, dict) or ENTITY_KEYS.get(str(entity.get("type"))) != key:
                continue
            name = entity.get("name")
            if isinstance(name, str) and name:
                scopes.add(Scope.of({key: name}))
        path, following = _next_page(body)
        params = {**provider.params, **following}
    if path is not None:
        note = f"GET /v1/entities/ still had pages after {MAX_ENTITY_PAGES}"
        return Discovery(scopes, complete=False, note=note)
    return Discovery(scopes)


def _next_page(body: Any) -> tuple[str | None, dict[str, Any]]:
    """The path and query of the next page of a paginated answer; (None, {}) on the last.

    Only the path and query are taken from ``next``: the request goes to the configured
    base_url, so an answer can never send the API key to another host.
    """
    following = body.get("next") if isinstance(body, dict) else None
    if not isinstance(following, str) or not following:
        return None, {}
    import httpx  # only here: a sync of local stores never imports it

    url = httpx.URL(following)
    return url.path, dict(url.params)


def _from_platform_memories(
    provider: Any, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The pairs that hold memories: page through what the fixed keys select."""
    conditions = [{k: v} for k, v in fixed.items()]
    filters = conditions[0] if len(conditions) == 1 else {"AND": conditions}
    scopes: set[Scope] = set()
    number = 1
    while True:
        page = provider._page(number, filters)
        results = page["results"]
        scopes |= _scopes((_with_run_id(r) for r in results if isinstance(r, dict)), keys, fixed)
        if not page.get("next") or not results:
            return Discovery(scopes)
        number += 1


def _with_run_id(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Platform lists a run id as session_id."""
    if "run_id" not in raw and "session_id" in raw:
        return {**raw, "run_id": raw["session_id"]}
    return raw


# --- pmm-dir -------------------------------------------------------------------------------------


def _from_files(provider: Any, keys: tuple[str, ...]) -> Discovery:
    from memsync.providers.pmm_dir import scope_from_file_name

    scopes: set[Scope] = set()
    for path in provider._scope_files():
        key = scope_from_file_name(path.name)
        scope = scope_from_pmm_key(key, keys)
        if scope is not None:
            scopes.add(scope)
    return Discovery(scopes)


def scope_from_pmm_key(key: str, keys: tuple[str, ...]) -> Scope | None:
    """The scope a pmm-dir file holds (the inverse of ``Scope.pmm_key``)."""
    from urllib.parse import unquote

    if not key:
        return None
    if len(keys) == 1:
        return Scope.of({keys[0]: key})
    parts = key.split("+")
    if len(parts) != len(keys) or not all(parts):
        return None
    return Scope.of({k: unquote(v) for k, v in zip(keys, parts, strict=True)})
