"""The Mem0 Platform across scopes: which scopes it holds, and which of them changed.

- Discovery (``Mem0PlatformProvider.discover``): ``GET /v1/entities/``, whose four types (user,
  agent, app, run) fill the four scope keys; with fixed keys beside the wildcard, the memories
  those keys select (merged and expired ones included), so that only pairs that hold memories
  are found.
- The probe (``PlatformChangesProbe``): the v3 list filtered on ``updated_at`` since the last
  probe (less the look-back) across every scope: one short page naming the scope of every
  memory added or edited. Deletes do not show (nor an add backdated out of the window): the
  full pass finds them. Not the entity listing (its ``updated_at`` is the entity's own, not its
  memories'), nor ``/v1/memories/events/`` (its order and which writes it logs are not
  documented), nor the total count (memsync's own backdated adds would make every one of its
  writes look like a delete): none is sure enough to stand on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx

from memsync.base.errors import ProviderError
from memsync.base.records import parse_instant
from memsync.base.scopes import Scope
from memsync.providers.base import Provider
from memsync.providers.change_probe import WHOLE, ChangeProbe, Flags
from memsync.providers.discovery import Discovery, scopes_of
from memsync.providers.mem0.platform_listing import utc_iso

if TYPE_CHECKING:
    from memsync.providers.mem0.platform import Mem0PlatformProvider

# The Platform's entity types, as the scope key each one fills.
ENTITY_KEYS = {"user": "user_id", "agent": "agent_id", "app": "app_id", "run": "run_id"}
MAX_ENTITY_PAGES = 10_000
PLATFORM_PAGES = 5  # pages of changed memories one probe reads before it lists every scope


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


class PlatformChangesProbe(ChangeProbe):
    """The v3 list filtered on ``updated_at`` since the last probe, less the look-back.

    Its state is the window it last asked about, kept in memory (after a restart the start's
    full pass covers the gap): the changes it has flagged already are not flagged again.
    Deletes do not show in it: they are found by the full pass.
    """

    def __init__(
        self,
        name: str,
        provider: Provider,
        keys: tuple[str, ...],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        super().__init__(name, provider)
        self.keys = keys
        self.now = now
        self._asked: datetime | None = None  # when the last probe asked (local clock)
        self._seen: dict[str, str] = {}  # memory id -> the updated_at already flagged

    def ask(self, known: Mapping[str, str]) -> Flags:
        provider: Any = self.provider
        lookback: timedelta = provider.lookback
        asked = self.now()
        since = (self._asked or asked) - lookback
        changed, whole = self._changed(provider, since)
        flags = Flags()
        for raw in changed:
            memory_id, stamp = str(raw["id"]), str(raw.get("updated_at") or "")
            if self._seen.get(memory_id) == stamp:
                continue
            self._seen[memory_id] = stamp
            values = {**raw, "run_id": raw.get("run_id") or raw.get("session_id")}
            scope = {k: str(values[k]) for k in self.keys if values.get(k)}
            if not self.keys:
                flags.scopes.add(WHOLE)
            elif len(scope) == len(self.keys):
                flags.scopes.add(Scope.of(scope).label)
        if self._asked is None:
            flags.scopes.clear()  # the first probe sets the window; the start's full pass lists
        elif not whole:
            flags.everything = f"more than {PLATFORM_PAGES} pages of memories changed"
        self._seen = {
            i: s for i, s in self._seen.items() if (parse_instant(s) or asked) >= since - lookback
        }
        self._asked = asked
        return flags

    def _changed(self, provider: Any, since: datetime) -> tuple[list[dict[str, Any]], bool]:
        """The memories changed since SINCE, across every scope; False when pages remain."""
        filters = _all_scopes_filter(provider, {"updated_at": {"gte": utc_iso(since)}})
        changed: list[dict[str, Any]] = []
        for number in range(1, PLATFORM_PAGES + 1):
            page = provider._page(number, filters)
            changed += [r for r in page["results"] if isinstance(r, dict) and r.get("id")]
            if not page.get("next") or not page["results"]:
                return changed, True
        return changed, False


def _all_scopes_filter(provider: Any, condition: dict[str, Any] | None) -> dict[str, Any]:
    """The configured scope (wildcards as "*", fixed keys as set), and CONDITION."""
    conditions: list[dict[str, Any]] = [{k: v} for k, v in provider.scope.items()]
    if condition is not None:
        conditions.append(condition)
    return conditions[0] if len(conditions) == 1 else {"AND": conditions}


__all__ = ["PlatformChangesProbe", "discover_platform_scopes"]
