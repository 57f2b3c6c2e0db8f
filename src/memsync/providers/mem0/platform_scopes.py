"""The Mem0 Platform's scopes: which ones it holds (the probe of which changed is
``platform_probe``).

Discovery (``Mem0PlatformProvider.discover``): ``GET /v1/entities/``, whose four types (user,
agent, app, run) fill the four scope keys; with fixed keys beside the wildcard, the memories
those keys select (merged and expired ones included), so that only pairs that hold memories
are found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

from memsync.base.errors import ProviderError
from memsync.base.scopes import Scope
from memsync.providers.discovery import Discovery, scopes_of

if TYPE_CHECKING:
    from memsync.providers.mem0.platform import Mem0PlatformProvider

# The Platform's entity types, as the scope key each one fills.
ENTITY_KEYS = {"user": "user_id", "agent": "agent_id", "app": "app_id", "run": "run_id"}
MAX_ENTITY_PAGES = 10_000


def discover_platform_scopes(
    provider: Mem0PlatformProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The scopes the Platform holds, as values of the wildcard KEYS (see module docstring)."""
    if fixed:
        return _from_memories(provider, keys, fixed)
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
    url = httpx.URL(following)
    return url.path, dict(url.params)


def _from_memories(
    provider: Mem0PlatformProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The pairs that hold memories: page through what the fixed keys select."""
    conditions = [{k: v} for k, v in fixed.items()]
    filters = conditions[0] if len(conditions) == 1 else {"AND": conditions}
    scopes: set[Scope] = set()
    number = 1
    while True:
        page = provider._page(number, filters)
        results = page["results"]
        scopes |= scopes_of((_with_run_id(r) for r in results if isinstance(r, dict)), keys, fixed)
        if not page.get("next") or not results:
            return Discovery(scopes)
        number += 1


def _with_run_id(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Platform lists a run id as session_id."""
    if "run_id" not in raw and "session_id" in raw:
        return {**raw, "run_id": raw["session_id"]}
    return raw


__all__ = ["discover_platform_scopes"]
