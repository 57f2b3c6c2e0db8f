"""``mem0-platform``: the hosted Mem0 Platform API, spoken as ``MemoryClient`` 2.2.1 speaks it.

Request shapes follow ``mem0/client/main.py`` of mem0ai 2.2.1: ``Authorization: Token <key>``;
``get_all`` is ``POST /v3/memories/?page&page_size`` with ``{"filters": ...}`` in the body
(entity ids only inside ``filters``); ``add`` is ``POST /v3/memories/add/`` with the messages,
the entity ids at the top level (``run_id``, which list results call ``session_id``),
``metadata``, ``infer`` and ``timestamp`` (Unix seconds, the Platform's way to backdate);
``GET/PUT/DELETE /v1/memories/{id}/``; ``PUT`` and ``DELETE /v1/batch/`` with
``{"memories": [{"memory_id", "text", "metadata"}]}``. 2.2.1 resolves org and project from
the key; when ``org_id``/``project_id`` are configured they go as query parameters, the form
earlier clients used. The client's telemetry headers (``Mem0-User-ID``, a hash of the key)
are not sent. Listings: see ``platform_listing``.

Writes send ``infer: false``, which makes an add synchronous and keeps the Platform's LLM
from rewriting the memory; an add that comes back queued is reported, never trusted.

Dream (always on) hides merged duplicates from default reads: every list asks
``include_merged`` and ``show_expired`` so that it sees everything the Platform keeps, and a
merged or superseded memory is listed with its Dream fields (see ``memsync.base.dream``), never
mistaken for a deleted one. ``latest_only = true`` asks for the current truth only; a memory
that then leaves the listing is read by id before any delete is inferred (``hides_retired``).
An ``app_id`` scope is the Platform's own: it filters lists and goes with each add.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import httpx

from memsync.base.errors import (
    AuthError,
    ConfigError,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.history import HistoryRead, event_from_platform
from memsync.base.records import Outgoing, Record, parse_instant
from memsync.base.scopes import WILDCARD, Scope
from memsync.base.secrets import Secret, resolve_secret
from memsync.config import Config, Mem0PlatformConfig
from memsync.config.scoping import wildcard_keys
from memsync.providers.base import (
    Capabilities,
    Listing,
    Provider,
    WriteOp,
    WriteResult,
    require_content,
)
from memsync.providers.change_probe import ChangeProbe, ProbeMaker
from memsync.providers.concurrent import lanes
from memsync.providers.discovery import Discovery
from memsync.providers.http.provider import DEFAULT_CONCURRENCY
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.http.shapes import expect_list, expect_object
from memsync.providers.mem0.convert import (
    metadata_for_mem0,
    record_from_mem0,
    version_of,
)
from memsync.providers.mem0.history_reads import route_history
from memsync.providers.mem0.http import Mem0HttpProvider, path_segment
from memsync.providers.mem0.platform_listing import PlatformListing, utc_iso
from memsync.providers.mem0.platform_probe import PlatformChangesProbe
from memsync.providers.mem0.platform_scopes import discover_platform_scopes
from memsync.providers.mem0.platform_webhooks import PlatformWebhooks
from memsync.providers.mem0.server_session import ReadAhead
from memsync.providers.pushed import PushedChanges, PushMaker

DEFAULT_BASE_URL = "https://api.mem0.ai"
_KIND_ORDER = {"create": 0, "update": 1, "delete": 2}
MAX_PAGE_SIZE = 200
MAX_BATCH = 1000
DOCUMENTED_LIMIT = (1000, 60.0)  # requests a minute (docs/changelog/platform.mdx, "ADD API")


class Mem0PlatformProvider(Mem0HttpProvider):
    type = "mem0-platform"
    family = "mem0"
    capabilities = Capabilities(
        incremental=True, batch_writes=True, timestamps=True, ordered_updates=True, history=True
    )

    def __init__(
        self,
        name: str,
        scope: Mapping[str, str],
        *,
        secret: Secret | None,
        base_url: str = DEFAULT_BASE_URL,
        org_id: str | None = None,
        project_id: str | None = None,
        lookback: float = 600.0,
        timeout: float = 30.0,
        allow_insecure_http: bool = False,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        page_size: int = MAX_PAGE_SIZE,
        batch_size: int = MAX_BATCH,
        concurrency: int = DEFAULT_CONCURRENCY,
        latest_only: bool = False,
        rate_limit: tuple[int, float] | None = DOCUMENTED_LIMIT,
        rate_headroom: float = 0.0,
    ) -> None:
        if secret is None:
            raise ConfigError(
                f"providers.{name}: the Mem0 Platform needs an API key; set "
                'api_key_env = "MEM0_API_KEY" (or api_key_file) in its table'
            )
        super().__init__(
            name,
            base_url,
            secret=secret,
            auth="token",
            timeout=timeout,
            allow_insecure_http=allow_insecure_http,
            transport=transport,
            retry=retry,
            sleep=sleep,
            concurrency=concurrency,
            rate_limit=rate_limit,
            rate_headroom=rate_headroom,
        )
        self.scope = self.scope_ids(scope)
        self.lookback = timedelta(seconds=lookback)
        self.page_size = max(1, min(page_size, MAX_PAGE_SIZE))
        self.batch_size = max(1, min(batch_size, MAX_BATCH))
        self.params = {k: v for k, v in (("org_id", org_id), ("project_id", project_id)) if v}
        self.latest_only = latest_only
        # Whether each listed memory carries an expiration date: /v1/batch/ cannot set or
        # clear one, so only updates known to need neither go in a batch.
        self._dated: dict[str, bool] = {}
        # The scopes' first pages read ahead of their cycles (``read_ahead``): made by the
        # configured provider, shared by the scopes bound from it, cleared when it closes.
        self._ahead: list[ReadAhead | None] = [None]

    # lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        super().close()
        if self._client_owner is self:  # the configured provider: its scopes' reads go
            ahead, self._ahead[0] = self._ahead[0], None
            if ahead is not None:
                ahead.close()

    def read_ahead(self, scopes: list[Scope]) -> None:
        """Read each scope's first page (its whole listing, for a scope of up to 200
        memories) a few scopes ahead of the cycle that takes them in this order, 4 at a time,
        paced by the key's limiter: the round trips overlap the cycle's local work
        (``PlatformListing`` takes its scope's read, or reads itself)."""
        bound = {b.name: b for b in (self.bind(scope) for scope in scopes)}
        ahead = ReadAhead(
            list(bound), lambda name: bound[name]._page(1, bound[name]._filters(None))
        )
        previous, self._ahead[0] = self._ahead[0], ahead
        if previous is not None:
            previous.close()

    def read_taken(self) -> dict[str, Any] | None:
        """This scope's first page of a full listing, when it was read ahead (its error raised
        here); None when it was not."""
        ahead = self._ahead[0]
        if ahead is None:
            return None
        taken, page = ahead.take(self.name)
        return page if taken else None

    # identity -------------------------------------------------------------------------

    def identity(self) -> str:
        scope = ",".join(f"{k}={v}" for k, v in sorted(self.scope.items()))
        project = "/".join(self.params.get(k, "-") for k in ("org_id", "project_id"))
        return f"mem0-platform:{self.base_url}/{project}#{scope}"

    def _reads(self) -> dict[str, bool]:
        """What every list asks to see: expired memories (expiry is not deletion) and, unless
        only the current truth is wanted, the duplicates Dream merged (merged is not deleted)."""
        if self.latest_only:
            return {"show_expired": True, "latest_only": True}
        return {"show_expired": True, "include_merged": True}

    def check(self) -> str:
        pong = expect_object(self.name, self.http.get("/v1/ping/", params=self.params), "ping")
        first = self._page(1, self._filters(None))
        project = pong.get("project_id") or "the key's project"
        return f"reachable ({project}), {first['count']} memories in scope"

    def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
        """Its entities, or the pairs the fixed keys' memories hold (``platform_scopes``)."""
        return discover_platform_scopes(self, keys, fixed)

    # reads ----------------------------------------------------------------------------

    def listing(self, cursor: str | None = None) -> Listing:
        last = parse_instant(cursor) if cursor else None
        return PlatformListing(self, last)

    def _filters(self, since: datetime | None) -> dict[str, Any]:
        conditions: list[dict[str, Any]] = [{k: v} for k, v in self.scope.items()]
        if since is not None:
            conditions.append({"updated_at": {"gte": utc_iso(since)}})
        return conditions[0] if len(conditions) == 1 else {"AND": conditions}

    def across_scopes(
        self, condition: dict[str, Any], *, among: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Filters over every scope of the configured one (wildcards as "*", fixed keys as
        set), or only those AMONG names in place of the wildcards, and CONDITION."""
        kept = {k: v for k, v in self.scope.items() if among is None or v != WILDCARD}
        conditions: list[dict[str, Any]] = [{k: v} for k, v in kept.items()]
        if among is not None:
            conditions.append(among)
        conditions.append(condition)
        return {"AND": conditions}

    def count(self, filters: dict[str, Any]) -> int | None:
        """How many memories FILTERS select, as the listing sees them (one request)."""
        body = self.http.json(
            "POST",
            "/v3/memories/",
            params={"page": 1, "page_size": 1, **self.params},
            json={"filters": filters, **self._reads()},
            idempotent=True,
        )
        count = expect_object(self.name, body, "POST /v3/memories/").get("count")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    def _page(self, number: int, filters: dict[str, Any]) -> dict[str, Any]:
        body = self.http.json(
            "POST",
            "/v3/memories/",
            params={"page": number, "page_size": self.page_size, **self.params},
            json={"filters": filters, **self._reads()},
            idempotent=True,
        )
        page = expect_object(self.name, body, "POST /v3/memories/")
        if not isinstance(page.get("count"), int) or isinstance(page.get("count"), bool):
            page["count"] = None
        page["results"] = expect_list(self.name, page.get("results"), "POST /v3/memories/ results")
        return page

    def _raw(self, provider_id: str) -> dict[str, Any] | None:
        raw = self.raw_any_scope(provider_id)
        if raw is None:
            return None
        held = {**raw, "run_id": raw.get("run_id") or raw.get("session_id")}
        if any(held.get(k) != v for k, v in self.scope.items()):
            return None
        return raw

    def raw_any_scope(self, provider_id: str) -> dict[str, Any] | None:
        """``GET /v1/memories/{id}/`` whatever its scope (None: no such memory)."""
        try:
            body = self.http.get(f"/v1/memories/{path_segment(provider_id)}/", params=self.params)
        except NotFound:
            return None
        if body is None:
            return None
        return expect_object(self.name, body, "GET /v1/memories/{id}/")

    def versions_changed_since(self, since: datetime) -> dict[str, str | None]:
        """One filtered v3 list (``updated_at >= since - lookback``, the look-back absorbing
        clock skew): usually one short page."""
        filters = self._filters(since - self.lookback)
        changed: dict[str, str | None] = {}
        number = 1
        while True:
            body = self._page(number, filters)
            for raw in body["results"]:
                if isinstance(raw, dict) and raw.get("id"):
                    changed[str(raw["id"])] = version_of(raw)
            if not body.get("next") or not body["results"]:
                return changed
            number += 1

    def history(self, memory_ids: list[str]) -> HistoryRead:
        """``GET /v1/memories/{id}/history/`` for each, on the provider's lanes and pacer."""
        return route_history(
            memory_ids,
            lambda memory_id: self.http.get(
                f"/v1/memories/{path_segment(memory_id)}/history/", params=self.params
            ),
            event_from_platform,
            concurrency=self.concurrency,
            source="the Platform's route GET /v1/memories/{id}/history/",
        )

    def get(self, provider_id: str) -> Record | None:
        record = super().get(provider_id)
        if record is not None:
            self._dated[record.id] = bool(record.expiration_date)
        return record

    # writes ---------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        role = item.provenance.get("role")
        body: dict[str, Any] = {
            "messages": [
                {"role": role if role in ("user", "assistant") else "user", "content": item.content}
            ],
            **self.scope,
            "metadata": metadata_for_mem0(item),
            "infer": False,
        }
        created = parse_instant(item.created_at)
        if created is not None:
            body["timestamp"] = int(created.timestamp())
        if item.expiration_date:
            body["expiration_date"] = item.expiration_date
        answer = self.http.json("POST", "/v3/memories/add/", params=self.params or None, json=body)
        if isinstance(answer, dict) and "results" not in answer and answer.get("event_id"):
            raise ProviderError(
                f"{self.name}: the Platform queued the add (event {answer['event_id']}, status "
                f"{answer.get('status')}) instead of storing it as sent; it may run LLM "
                f"extraction on it. Check the memory of origin {item.origin} in the dashboard"
            )
        results = answer.get("results") if isinstance(answer, dict) else answer
        added = [
            r
            for r in expect_list(self.name, results, "POST /v3/memories/add/")
            if isinstance(r, dict) and r.get("id") and r.get("event", "ADD") == "ADD"
        ]
        if len(added) != 1:
            raise ProviderError(
                f"{self.name}: the Platform added {len(added)} memories where one was expected "
                f"(origin {item.origin})"
            )
        text = added[0].get("memory") or (added[0].get("data") or {}).get("memory")
        self._dated[str(added[0]["id"])] = bool(item.expiration_date)
        return self._as_written(str(added[0]["id"]), item, text)

    def update_op(self, op: WriteOp) -> Record:
        assert op.item is not None and op.provider_id is not None
        item, provider_id = op.item, op.provider_id
        require_content(self.name, item)
        replacing = self._replacing(op)
        if replacing is None:
            raise NotFound(f"{self.name}: memory {provider_id} is not in scope {self.scope}")
        answer = self.http.json(
            "PUT",
            f"/v1/memories/{path_segment(provider_id)}/",
            params=self.params or None,
            json={
                "text": item.content,
                "metadata": metadata_for_mem0(item, replacing=replacing),
                "expiration_date": item.expiration_date,  # None clears it
            },
        )
        if isinstance(answer, dict) and answer.get("id") == provider_id:
            held = record_from_mem0(answer, self.scope_key())  # the answer is the memory
            if isinstance(held, Record):
                return held
        return self._as_written(provider_id, item)

    def delete(self, provider_id: str) -> None:
        try:
            self.http.json(
                "DELETE", f"/v1/memories/{path_segment(provider_id)}/", params=self.params or None
            )
        except NotFound:
            return

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Creates concurrently (each add carries its own metadata); updates and deletes in
        ``/v1/batch/`` calls of up to 1000.

        Ops of different memories are independent, so they are grouped by kind; when one
        memory has several ops in the batch, runs of one kind keep the engine's order.
        A batch the Platform refuses as a whole (a 400, or a 404 for one missing memory) is
        replayed op by op, so one bad op never fails the others; a rate limit, outage or
        refused key fails the batch's ops with that error, for the engine to retry.
        """
        if len(lanes(ops)) == len(ops):
            ops = sorted(ops, key=lambda op: _KIND_ORDER[op.kind])
        run: list[WriteOp] = []
        for op in [*ops, None]:
            if run and (
                op is None
                or (op.kind, self._batchable(op)) != (run[0].kind, self._batchable(run[0]))
                or len(run) >= self.batch_size
            ):
                if run[0].kind == "create" or not self._batchable(run[0]):
                    yield from super().write_many(run)
                else:
                    yield from self._batch(run)
                run = []
            if op is not None:
                run.append(op)

    def _batchable(self, op: WriteOp) -> bool:
        """Whether the op fits /v1/batch/, which takes text and metadata but no expiration
        date: an update that sets a date, or may have to clear one, goes through PUT. What the
        memory held comes from the staging store (``op.previous``), else from this listing."""
        if op.kind != "update" or op.item is None:
            return True
        if op.item.expiration_date:
            return False
        if op.previous is not None:
            return not op.previous.expiration_date
        return self._dated.get(op.provider_id or "") is False

    def _batch(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        kind = ops[0].kind
        if kind == "update" and any(op.previous is None for op in ops):
            yield from super().write_many(ops)  # each must learn what it replaces: one by one
            return
        try:
            entries = [self._batch_entry(op) for op in ops]
        except ProviderError:
            yield from super().write_many(ops)
            return
        method = "PUT" if kind == "update" else "DELETE"
        try:
            self.http.json(
                method, "/v1/batch/", params=self.params or None, json={"memories": entries}
            )
        except (TransientProviderError, AuthError) as exc:
            for op in ops:
                yield WriteResult(op, error=exc)
            return
        except ProviderError:
            yield from super().write_many(ops)
            return
        for op in ops:
            if kind == "delete":
                yield WriteResult(op)
            else:
                assert op.item is not None and op.provider_id is not None
                yield WriteResult(op, record=self._as_written(op.provider_id, op.item))

    def _batch_entry(self, op: WriteOp) -> dict[str, Any]:
        if op.provider_id is None:
            raise ProviderError(f"{self.name}: {op.kind} {op.key} names no memory")
        if op.kind == "delete":
            return {"memory_id": op.provider_id}
        if op.item is None:
            raise ProviderError(f"{self.name}: update {op.key} carries no content")
        require_content(self.name, op.item)
        replacing = op.previous.metadata if op.previous is not None else {}
        return {
            "memory_id": op.provider_id,
            "text": op.item.content,
            "metadata": metadata_for_mem0(op.item, replacing=replacing),
        }


def change_probe(name: str, entry: Mem0PlatformConfig) -> ProbeMaker:
    """The memories changed since the last probe, across every scope, and a count for deletes
    once a ``delete_check`` period (``platform_probe``, ``platform_deletes``)."""
    keys = wildcard_keys(entry)

    def make(provider: Provider) -> ChangeProbe:
        assert isinstance(provider, Mem0PlatformProvider)
        return PlatformChangesProbe(name, provider, keys, delete_check=entry.delete_check)

    return make


def pushed_changes(name: str, entry: Mem0PlatformConfig) -> PushMaker:
    """The Platform's webhook events and their registration (``platform_webhooks``)."""

    def make(provider: Provider) -> PushedChanges:
        assert isinstance(provider, Mem0PlatformProvider)
        return PlatformWebhooks(provider)

    return make


def build(name: str, entry: Mem0PlatformConfig, config: Config) -> Mem0PlatformProvider:
    return Mem0PlatformProvider(
        name,
        entry.scope,
        secret=resolve_secret(name, entry.api_key_env, entry.api_key_file),
        base_url=entry.base_url,
        org_id=entry.org_id,
        project_id=entry.project_id,
        lookback=entry.lookback,
        timeout=entry.timeout,
        allow_insecure_http=entry.allow_insecure_http,
        concurrency=entry.concurrency,
        latest_only=entry.latest_only,
        rate_limit=entry.rate_limit,
        rate_headroom=entry.rate_headroom,
    )
