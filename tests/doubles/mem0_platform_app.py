"""A double of the hosted Mem0 Platform API, as ``mem0.client.main.MemoryClient`` 2.2.1 calls it.

The Platform cannot be reached from here, so this in-process Starlette app follows its
documented contract with state in memory: ``Authorization: Token <key>``; the v3 list
``POST /v3/memories/?page&page_size`` (page_size <= 200) with ``{filters}`` (entity ids,
``AND``/``OR``, ``created_at``/``updated_at`` with gt/gte/lt/lte) answering
``{count, next, previous, results}``, newest first, the run id named ``session_id``;
``POST /v3/memories/add/`` (synchronous with ``infer: false``, otherwise queued as
``{event_id, status: PENDING}``); ``GET/PUT/DELETE /v1/memories/{id}/``; ``PUT|DELETE
/v1/batch/`` (<= 1000 items); ``GET /v1/ping/``.

Expiry as upstream: a memory carries ``expiration_date`` (``YYYY-MM-DD`` or null, set by add
and v1 PUT, not by the batch); once the date has passed, v3 lists leave it out unless the body
asks ``show_expired: true``, while ``GET /v1/memories/{id}/`` still returns it.

Dream as ``docs/platform/features/dream.mdx`` describes it (always on): every memory carries
``lifecycle_state`` ("active", "superseded" or "merged"), ``replaced_by`` (the id of the memory
that replaced it, or null) and ``synthesized``. A default v3 read returns active and superseded
memories and hides merged ones; ``include_merged: true`` returns all three; ``latest_only:
true`` returns active ones only (and wins over ``include_merged``). Synthesized pattern
memories are active and appear beside the rest. Nothing Dream does deletes: ``GET
/v1/memories/{id}/`` returns a memory in any state. The v3 list schema names ``replaced_by``
and ``synthesized`` but not ``lifecycle_state``, which the v1 reads name; the docs badge
superseded memories in default reads, so the double returns all three fields everywhere.
Dream acts behind the client's back, as the Platform's background does: ``merge(duplicate,
into=canonical)``, ``supersede(old, by=newer)`` and ``synthesize(text, sources, **ids)``.
Whether Dream moves ``updated_at`` is not documented: ``dream_touches_updated_at`` (off by
default, the case where only a full listing can see the change).

Rate limits: with ``rate_limit`` set, every answer of the routes it covers carries
``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` and ``X-RateLimit-Reset``, and a request past
the limit is answered 429 with ``Retry-After``. Two kinds: ``SlidingLimit``
(``sliding_limit.py``: ``limit`` requests in any ``window`` seconds over every route, the
documented 1,000 a minute at its hardest for a client), and ``RateLimit``: fixed windows
starting at the first request, over the routes it names (by default the add route), Reset and
Retry-After whole seconds until the window ends, rounded up (Mem0's client reads Retry-After
with ``int()``). ``throttled`` counts the 429s.

Shapes follow what ``MemoryClient`` reads: an add answers ``{"results": [...]}``, records
(listed or read by id) carry ``session_id`` for the run id, errors are ``{"error": ...}``, and
an id that is not a UUID is refused with 400 before it is looked up.

Where the contract is silent, the double says what it chose, or lets a test choose: whether a
PUT (single or batch) replaces metadata or merges into it is ``metadata_mode`` ("replace" or
"merge"), since the Platform's documentation does not say; a batch naming a missing memory
is refused whole (404) and changes nothing.

Filters as ``v2-memory-filters.mdx`` documents them for the Platform: entity fields take a
value, ``*``, ``eq``, ``ne`` or ``in``; ``memory_ids``; ``AND``, ``OR`` and ``NOT``. Webhooks
(``mem0_platform_webhooks.py``): the four routes ``MemoryClient`` calls, and an event POSTed to
each subscriber on every add, update and delete.

Knobs for the failure modes memsync must survive: ``between_pages(page)`` runs after a list
page is served (insert memories there to shift offset paging), ``count_skew`` makes ``count``
disagree with the pages, ``queues_every_add`` ignores ``infer: false``, and ``faults`` injects 429/5xx/stalls/resets/malformed JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memsync.base.records import is_expired, parse_instant
from tests.doubles import ASGIApp, ASGIBridge, Faults
from tests.doubles.mem0_platform_webhooks import PlatformWebhooks
from tests.doubles.sliding_limit import SlidingLimit

ENTITY_IDS = ("user_id", "agent_id", "app_id", "run_id")
MAX_PAGE_SIZE = 200
MAX_BATCH = 1000
ACTIVE, SUPERSEDED, MERGED = "active", "superseded", "merged"
ADD_ROUTE = ("POST", "/v3/memories/add/")


@dataclass
class RateLimit:
    """``limit`` requests per fixed ``window`` (seconds) over ``routes`` (method, path)."""

    limit: int = 1000
    window: float = 60.0
    routes: tuple[tuple[str, str], ...] = (ADD_ROUTE,)
    clock: Callable[[], float] = time.monotonic
    first_at: float | None = None  # when the first request of these routes arrived
    _started: float | None = None
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def covers(self, method: str, path: str) -> bool:
        return (method, path) in self.routes

    def take(self, who: str = "") -> tuple[bool, dict[str, str]]:
        """Whether one more request fits this window, and the headers that say how many do."""
        with self._lock:
            now = self.clock()
            if self._started is None:
                self._started = self.first_at = now
            elif now >= self._started + self.window:  # the next window on the same grid
                self._started += self.window * ((now - self._started) // self.window)
                self._used = 0
            allowed = self._used < self.limit
            if allowed:
                self._used += 1
            reset = max(0.0, self._started + self.window - now)
            headers = {
                "X-RateLimit-Limit": str(self.limit),
                "X-RateLimit-Remaining": str(max(0, self.limit - self._used)),
                "X-RateLimit-Reset": str(math.ceil(reset)),
            }
            if not allowed:
                headers["Retry-After"] = headers["X-RateLimit-Reset"]
            return allowed, headers


class Memories(dict[str, dict[str, Any]]):
    """The double's memories by id, indexed by user: a list naming users (as each scope's
    listing does) looks at theirs alone, so a thousand users' listings cost what they hold,
    not a thousand passes over every memory. A memory's user never changes."""

    def __init__(self) -> None:
        super().__init__()
        self._by_user: dict[str | None, set[str]] = {}

    def __setitem__(self, memory_id: str, memory: dict[str, Any]) -> None:
        if memory_id in self:
            self._unindex(memory_id)
        super().__setitem__(memory_id, memory)
        self._by_user.setdefault(memory.get("user_id"), set()).add(memory_id)

    def __delitem__(self, memory_id: str) -> None:
        self._unindex(memory_id)
        super().__delitem__(memory_id)

    def pop(self, memory_id: str, *default: Any) -> Any:  # type: ignore[override]
        if memory_id in self:
            self._unindex(memory_id)
        return super().pop(memory_id, *default)

    def clear(self) -> None:
        super().clear()
        self._by_user.clear()

    def update(self, *others: Any, **more: Any) -> None:
        for memory_id, memory in dict(*others, **more).items():
            self[memory_id] = memory

    def setdefault(self, *args: Any) -> Any:
        raise NotImplementedError("set a memory with memories[id] = memory")

    def _unindex(self, memory_id: str) -> None:
        self._by_user.get(self[memory_id].get("user_id"), set()).discard(memory_id)

    def among(self, users: list[str] | None) -> list[dict[str, Any]]:
        """The memories of these users (None: every memory)."""
        if users is None:
            return list(self.values())
        return [self[i] for user in users for i in sorted(self._by_user.get(user, ()))]


class _Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail


class Mem0PlatformDouble:
    def __init__(
        self,
        *,
        api_key: str,
        page_size_default: int = 100,
        metadata_mode: Literal["replace", "merge"] = "replace",
        rate_limit: RateLimit | SlidingLimit | None = None,
    ) -> None:
        self.api_key = api_key
        self.rate_limit = rate_limit
        self.throttled = 0  # requests answered 429 by the rate limit
        self.dream_touches_updated_at = False
        self.metadata_mode = metadata_mode
        self.page_size_default = page_size_default
        self.memories = Memories()
        # Each memory's history entries, as GET /v1/memories/{id}/history/ answers them (kept
        # after a delete): one per add, edit and delete, in upstream's OpenAPI entry shape.
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.faults = Faults()
        self.extraction_requests = 0
        self.between_pages: Callable[[int], None] | None = None
        self.count_skew = 0
        self.queues_every_add = False  # behave as if infer: false were ignored
        self.entities_page_size = 100
        self._last = datetime(2020, 1, 1, tzinfo=UTC)
        routes = [
            Route("/v1/ping/", self.ping, methods=["GET"]),
            Route("/v3/memories/", self.list_memories, methods=["POST"]),
            Route("/v3/memories/add/", self.add, methods=["POST"]),
            Route("/v1/memories/{memory_id}/", self.get_memory, methods=["GET"]),
            Route("/v1/memories/{memory_id}/", self.update_memory, methods=["PUT"]),
            Route("/v1/memories/{memory_id}/", self.delete_memory, methods=["DELETE"]),
            Route("/v1/memories/{memory_id}/history/", self.memory_history, methods=["GET"]),
            Route("/v1/batch/", self.batch_update, methods=["PUT"]),
            Route("/v1/batch/", self.batch_delete, methods=["DELETE"]),
            Route("/v1/entities/", self.entities, methods=["GET"]),
        ]
        self.webhooks = PlatformWebhooks(
            lambda request: request.headers.get("authorization") == f"Token {self.api_key}"
        )
        routes += self.webhooks.routes()
        self.app: ASGIApp = self.faults.wrap(self._limited(Starlette(routes=routes)))

    def transport(self) -> ASGIBridge:
        return ASGIBridge(self.app)

    # state ------------------------------------------------------------------------------

    def now(self) -> datetime:
        """Wall-clock time, strictly increasing so that every write has its own instant."""
        current = max(datetime.now(UTC), self._last + timedelta(microseconds=1))
        self._last = current
        return current

    def insert(self, text: str, *, created_at: datetime | None = None, **ids: str) -> str:
        """Write a memory behind the client's back (another application using the Platform)."""
        memory_id = str(uuid.uuid4())
        when = (created_at or self.now()).isoformat()
        self.memories[memory_id] = {
            "id": memory_id,
            "memory": text,
            **{k: ids.get(k) for k in ENTITY_IDS},
            "metadata": None,
            "expiration_date": None,
            "categories": [],
            "created_at": when,
            "updated_at": when,
            "hash": hashlib.md5(text.encode()).hexdigest(),
            "lifecycle_state": ACTIVE,
            "replaced_by": None,
            "synthesized": False,
        }
        self.webhooks.emit("memory_add", self.memories[memory_id])
        self._record_history(self.memories[memory_id], "ADD", None, text, when)
        return memory_id

    def _record_history(
        self, memory: dict[str, Any], event: str, old: str | None, new: str | None, when: str
    ) -> None:
        """One history entry (``created_at``: when the entry was made, as the docs say)."""
        self.history.setdefault(memory["id"], []).append(
            {
                "id": str(uuid.uuid4()),
                "memory_id": memory["id"],
                "input": [{"role": "user", "content": new or old or ""}],
                "old_memory": old,
                "new_memory": new,
                **{k: memory.get(k) for k in ("user_id", "agent_id", "app_id")},
                "session_id": memory.get("run_id"),
                "categories": memory.get("categories"),
                "event": event,
                "metadata": memory.get("metadata"),
                "created_at": when,
                "updated_at": when,
            }
        )

    # Dream, behind the client's back ------------------------------------------------------

    def _retire(self, memory_id: str, state: str, replacement: str) -> None:
        if replacement not in self.memories:
            raise KeyError(f"no memory {replacement} to point replaced_by at")
        memory = self.memories[memory_id]
        memory["lifecycle_state"] = state
        memory["replaced_by"] = replacement
        if self.dream_touches_updated_at:
            memory["updated_at"] = self.now().isoformat()

    def merge(self, duplicate: str, *, into: str) -> None:
        """Dream folds ``duplicate`` into the canonical ``into``: hidden by default, kept."""
        self._retire(duplicate, MERGED, into)

    def supersede(self, old: str, *, by: str) -> None:
        """Dream marks ``old`` as outdated by the newer ``by``: still listed, badged."""
        self._retire(old, SUPERSEDED, by)

    def synthesize(self, text: str, sources: list[str], **ids: str) -> str:
        """Dream writes a pattern memory distilled from ``sources``, beside them."""
        memory_id = self.insert(text, **ids)
        self.memories[memory_id]["synthesized"] = True
        self.memories[memory_id]["source_memory_ids"] = list(sources)
        return memory_id

    def _limited(self, app: ASGIApp) -> ASGIApp:
        """The rate limit, in front of the routes (it answers before any work is done)."""

        async def middleware(scope: Any, receive: Any, send: Any) -> None:
            limit = self.rate_limit
            if scope["type"] != "http" or limit is None:
                await app(scope, receive, send)
                return
            if not limit.covers(scope["method"], scope["path"]):
                await app(scope, receive, send)
                return
            allowed, headers = limit.take(_who(scope))
            raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
            if not allowed:
                self.throttled += 1
                body = json.dumps({"error": "Rate limit exceeded"}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 429,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            *raw,
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return

            async def with_headers(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), *raw]}
                await send(message)

            await app(scope, receive, with_headers)

        return middleware

    def _touch(self, memory: dict[str, Any], text: str | None, metadata: Any) -> None:
        old = memory["memory"]
        if text is not None:
            memory["memory"] = text
            memory["hash"] = hashlib.md5(text.encode()).hexdigest()
        if metadata is not None:
            if self.metadata_mode == "merge":
                metadata = {**(memory.get("metadata") or {}), **metadata}
            memory["metadata"] = metadata
        memory["updated_at"] = self.now().isoformat()
        self.webhooks.emit("memory_update", memory)
        self._record_history(memory, "UPDATE", old, memory["memory"], memory["updated_at"])

    @staticmethod
    def _as_listed(memory: dict[str, Any]) -> dict[str, Any]:
        listed = {k: v for k, v in memory.items() if k != "run_id"}
        listed["session_id"] = memory.get("run_id")
        return listed

    # plumbing ---------------------------------------------------------------------------

    def _authorized(self, request: Request) -> None:
        if request.headers.get("authorization") != f"Token {self.api_key}":
            raise _Refused(401, "Invalid API key")

    async def _body(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            raise _Refused(400, "Invalid JSON body") from None
        if not isinstance(body, dict):
            raise _Refused(400, "Expected a JSON object")
        return body

    @staticmethod
    def _handle(
        handler: Callable[[Mem0PlatformDouble, Request], Any],
    ) -> Callable[[Mem0PlatformDouble, Request], Any]:
        async def wrapped(self: Mem0PlatformDouble, request: Request) -> Response:
            try:
                self._authorized(request)
                return await handler(self, request)  # type: ignore[no-any-return]
            except _Refused as refused:
                return JSONResponse({"error": refused.detail}, status_code=refused.status)

        return wrapped

    # routes -----------------------------------------------------------------------------

    @_handle
    async def ping(self, request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "org_id": "org_test",
                "project_id": "proj_test",
                "user_email": "tester@example.com",
            }
        )

    @_handle
    async def list_memories(self, request: Request) -> Response:
        body = await self._body(request)
        try:
            page = int(request.query_params.get("page", "1"))
            size = int(request.query_params.get("page_size", str(self.page_size_default)))
        except ValueError:
            raise _Refused(400, "page and page_size must be integers") from None
        if page < 1 or not 1 <= size <= MAX_PAGE_SIZE:
            raise _Refused(400, f"page_size must be between 1 and {MAX_PAGE_SIZE}")
        filters = body.get("filters")
        if not isinstance(filters, dict) or not _names_an_entity(filters):
            raise _Refused(
                400, "filters must contain at least one of user_id, agent_id, app_id or run_id"
            )
        shown = body.get("show_expired") is True
        states = _dream_states(body)
        chosen = [
            m
            for m in self.memories.among(_users_named(filters))
            if _matches(m, filters)
            and (shown or not is_expired(m.get("expiration_date")))
            and m.get("lifecycle_state", ACTIVE) in states
        ]
        chosen.sort(key=lambda m: (m["created_at"], m["id"]), reverse=True)
        start = (page - 1) * size
        results = [self._as_listed(m) for m in chosen[start : start + size]]
        base = str(request.url.replace(query=""))
        after = start + size < len(chosen)
        answer = {
            "count": len(chosen) + self.count_skew,
            "next": f"{base}?page={page + 1}&page_size={size}" if after else None,
            "previous": f"{base}?page={page - 1}&page_size={size}" if page > 1 else None,
            "results": results,
        }
        if self.between_pages is not None:
            self.between_pages(page)
        return JSONResponse(answer)

    @_handle
    async def add(self, request: Request) -> Response:
        body = await self._body(request)
        ids = {k: body.get(k) for k in ENTITY_IDS if body.get(k)}
        nested = body.get("filters") if isinstance(body.get("filters"), dict) else {}
        ids.update({k: nested[k] for k in ENTITY_IDS if nested.get(k) and k not in ids})
        if not ids:
            raise _Refused(400, "At least one of user_id, agent_id, app_id or run_id is required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Refused(400, "messages must be a non-empty list")
        if body.get("infer") is not False or self.queues_every_add:
            self.extraction_requests += 1
            return JSONResponse({"event_id": str(uuid.uuid4()), "status": "PENDING"})
        created = None
        if body.get("timestamp") is not None:
            try:
                created = datetime.fromtimestamp(int(body["timestamp"]), tz=UTC)
            except (TypeError, ValueError):
                raise _Refused(400, "timestamp must be a Unix timestamp") from None
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise _Refused(400, "metadata must be an object")
        added = []
        for message in messages:
            if not isinstance(message, dict) or message.get("role") == "system":
                continue
            memory_id = self.insert(str(message.get("content", "")), created_at=created, **ids)
            self.memories[memory_id]["metadata"] = metadata
            self.memories[memory_id]["expiration_date"] = body.get("expiration_date")
            added.append(
                {
                    "id": memory_id,
                    "memory": message.get("content"),
                    "data": {"memory": message.get("content")},
                    "event": "ADD",
                }
            )
        return JSONResponse({"results": added})

    def _found(self, request: Request) -> dict[str, Any]:
        memory_id = _valid_id(request.path_params["memory_id"])
        memory = self.memories.get(memory_id)
        if memory is None:
            raise _Refused(404, "Memory not found")
        return memory

    @_handle
    async def get_memory(self, request: Request) -> Response:
        return JSONResponse(self._as_listed(self._found(request)))

    @_handle
    async def update_memory(self, request: Request) -> Response:
        memory = self._found(request)
        body = await self._body(request)
        if (
            body.get("text") is None
            and body.get("metadata") is None
            and "expiration_date" not in body
        ):
            raise _Refused(
                400, "At least one of text, metadata or expiration_date must be provided"
            )
        if "expiration_date" in body:
            memory["expiration_date"] = body["expiration_date"]
        self._touch(memory, body.get("text"), body.get("metadata"))
        return JSONResponse(self._as_listed(memory))

    @_handle
    async def delete_memory(self, request: Request) -> Response:
        memory = self._found(request)
        del self.memories[memory["id"]]
        self.webhooks.emit("memory_delete", memory)
        self._record_history(memory, "DELETE", memory["memory"], None, self.now().isoformat())
        return JSONResponse({"message": "Memory deleted successfully!"})

    async def _batch(self, request: Request) -> list[dict[str, Any]]:
        items = (await self._body(request)).get("memories")
        if not isinstance(items, list) or not items:
            raise _Refused(400, "memories must be a non-empty list")
        if len(items) > MAX_BATCH:
            raise _Refused(400, f"Maximum of {MAX_BATCH} memories per batch")
        for entry in items:
            if isinstance(entry, dict):
                _valid_id(str(entry.get("memory_id")))
            if not isinstance(entry, dict) or entry.get("memory_id") not in self.memories:
                missing = entry.get("memory_id") if isinstance(entry, dict) else entry
                raise _Refused(404, f"Memory {missing} not found")
        return items

    @_handle
    async def memory_history(self, request: Request) -> Response:
        """``GET /v1/memories/{id}/history/``: the entries, oldest first (a deleted memory's
        too); 404 for an id the Platform never held."""
        memory_id = _valid_id(request.path_params["memory_id"])
        if memory_id not in self.history:
            raise _Refused(404, "Memory not found")
        return JSONResponse(self.history[memory_id])

    @_handle
    async def batch_update(self, request: Request) -> Response:
        items = await self._batch(request)
        for entry in items:
            self._touch(self.memories[entry["memory_id"]], entry.get("text"), entry.get("metadata"))
        return JSONResponse({"message": f"Successfully updated {len(items)} memories"})

    @_handle
    async def batch_delete(self, request: Request) -> Response:
        items = await self._batch(request)
        for entry in items:
            memory = self.memories.pop(entry["memory_id"])
            self.webhooks.emit("memory_delete", memory)
            self._record_history(memory, "DELETE", memory["memory"], None, self.now().isoformat())
        return JSONResponse({"message": f"Successfully deleted {len(items)} memories"})

    @_handle
    async def entities(self, request: Request) -> Response:
        """``GET /v1/entities/``: every user, agent, app and run holding memories.

        The paginated object of the OpenAPI at mem0 8d5b786 (``?page&page_size``), which
        ``MemoryClient.delete_users`` reads: no ``total_memories`` (mem0 5f77d86ca removed it
        "against live API behavior"), so nothing of memsync's may count on it.
        """
        try:
            page = int(request.query_params.get("page", "1"))
            size = int(request.query_params.get("page_size", str(self.entities_page_size)))
        except ValueError:
            raise _Refused(400, "page and page_size must be integers") from None
        found: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for memory in self.memories.values():
            for key in ENTITY_IDS:
                if memory.get(key):
                    found.setdefault((key[: -len("_id")], memory[key]), []).append(memory)
        rows = [
            {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{name}")),
                "name": name,
                "type": kind,
                "created_at": min(m["created_at"] for m in held),
                "updated_at": max(m["updated_at"] for m in held),
                "owner": "tester",
                "metadata": None,
            }
            for (kind, name), held in sorted(found.items())
        ]
        start = (page - 1) * size
        base = str(request.url.replace(query=""))
        after = start + size < len(rows)
        return JSONResponse(
            {
                "count": len(rows),
                "next": f"{base}?page={page + 1}&page_size={size}" if after else None,
                "previous": f"{base}?page={page - 1}&page_size={size}" if page > 1 else None,
                "results": rows[start : start + size],
            }
        )


def _who(scope: Any) -> str:
    """Who sent a request: a benchmark's other client names itself in X-Bench-Client."""
    for name, value in scope.get("headers") or []:
        if name.lower() == b"x-bench-client":
            return value.decode("latin-1") or "bench"
    return "memsync"


def _dream_states(body: dict[str, Any]) -> set[str]:
    """The lifecycle states a v3 read returns (dream.mdx, "How reads change with Dream")."""
    if body.get("latest_only") is True:
        return {ACTIVE}
    if body.get("include_merged") is True:
        return {ACTIVE, SUPERSEDED, MERGED}
    return {ACTIVE, SUPERSEDED}


def _valid_id(memory_id: str) -> str:
    """Memory ids are UUIDs: anything else is a bad request, not a missing memory."""
    try:
        uuid.UUID(memory_id)
    except ValueError:
        raise _Refused(400, f"Invalid memory ID: {memory_id}") from None
    return memory_id


def _users_named(filters: dict[str, Any]) -> list[str] | None:
    """The users a filter is limited to (a user_id value or ``in`` list at its top, or in its
    top AND), or None when it may select any memory."""
    conditions = [filters, *(c for c in filters.get("AND") or [] if isinstance(c, dict))]
    for condition in conditions:
        wanted = condition.get("user_id")
        if isinstance(wanted, str) and wanted != "*":
            return [wanted]
        if isinstance(wanted, dict) and isinstance(wanted.get("in"), list) and len(wanted) == 1:
            return sorted({str(user) for user in wanted["in"]})
    return None


def _names_an_entity(filters: dict[str, Any]) -> bool:
    if any(k in filters for k in ENTITY_IDS):
        return True
    return any(
        isinstance(sub, dict) and _names_an_entity(sub)
        for key in ("AND", "OR")
        for sub in (filters.get(key) or [])
    )


def _matches(memory: dict[str, Any], filters: dict[str, Any]) -> bool:
    for key, condition in filters.items():
        if key == "AND":
            if not all(_matches(memory, c) for c in condition):
                return False
        elif key == "OR":
            if not any(_matches(memory, c) for c in condition):
                return False
        elif key == "NOT":
            negated = condition if isinstance(condition, list) else [condition]
            if all(_matches(memory, c) for c in negated):
                return False
        elif key in ENTITY_IDS:
            if not _entity_matches(memory.get(key), condition):
                return False
        elif key == "memory_ids":
            ids = condition.get("in") if isinstance(condition, dict) else condition
            if not isinstance(ids, list):
                raise _Refused(400, "memory_ids takes a list of ids")
            if memory["id"] not in ids:
                return False
        elif key in ("created_at", "updated_at"):
            if not _compare(memory[key], condition):
                return False
        else:
            raise _Refused(400, f"Unsupported filter field: {key}")
    return True


def _entity_matches(value: Any, condition: Any) -> bool:
    """An entity field's condition (v2-memory-filters.mdx): a value, "*" (any non-null
    value), or one of eq, ne, in."""
    if condition == "*":
        return value is not None
    if not isinstance(condition, dict):
        return bool(value == condition)
    for op, operand in condition.items():
        if op == "eq":
            ok = value == operand
        elif op == "ne":
            ok = value != operand
        elif op == "in" and isinstance(operand, list):
            ok = value in operand
        else:
            raise _Refused(400, f"Invalid entity filter {op}: {operand}")
        if not ok:
            return False
    return True


def _compare(value: str, condition: Any) -> bool:
    instant = parse_instant(value)
    if not isinstance(condition, dict) or instant is None:
        raise _Refused(400, "date filters take {gt|gte|lt|lte: ISO-8601}")
    for op, bound in condition.items():
        limit = parse_instant(str(bound))
        if limit is None or op not in ("gt", "gte", "lt", "lte"):
            raise _Refused(400, f"Invalid date filter {op}: {bound}")
        ok = {
            "gt": instant > limit,
            "gte": instant >= limit,
            "lt": instant < limit,
            "lte": instant <= limit,
        }[op]
        if not ok:
            return False
    return True
