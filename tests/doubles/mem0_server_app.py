"""A double of Mem0's self-hosted REST server, answering as upstream does (mem0 commit 8d5b786:
``server/main.py``, ``server/auth.py``, ``server/routers/{auth,entities}.py``).

It serves upstream's routes over a REAL ``mem0.Memory`` (mem0ai 2.2.1, offline: in-memory
qdrant, in-memory history, a hashing embedder, an LLM pointed at a closed loopback port), so
what memsync reads back is what mem0 itself stores: metadata flat in the payload (a key named
like one of Mem0's own fields collides with it), ``metadata: null`` when a memory has none,
``top_k`` absent means Mem0's default of 20 and ``top_k=0`` still returns one row, POST keeps
only ``role`` and ``content`` of a message and skips system messages with ``infer: false``.
What is reproduced here is upstream's FastAPI shell, each behaviour as checked against the
upstream server run offline (``docs/mem0-server.md`` says what was seen):

- auth as ``server/auth.py`` (``tests/doubles/mem0_server_auth.py``): the admin key, dashboard
  users' ``m0sk_`` keys, HS256 JWTs that expire on a clock the test moves, single-use refresh
  tokens, the exact 401/403 bodies;
- FastAPI's 422 bodies for query and body validation, ``{"detail": "Not Found"}`` for unknown
  routes (no trailing-slash redirects: ``redirect_slashes=False``), 405 for a wrong method;
- ``GET /memories`` without ids: the admin listing, ``_serialize_memory`` rows, capped at
  1000 server-wide, expired ones included; 403 ``Admin role required to list all memories.``
  for a user who is not an admin;
- ``GET /entities`` computed as ``routers/entities.py`` does (at most 10,000 memories scanned),
  ``DELETE /entities/{type}/{id}``, ``POST /search``, ``DELETE /memories?ids``;
- Mem0 failures answer 502 ``{"detail", "code", "request_id"}``; ``ValueError`` answers 404
  when it says "not found", 400 otherwise (``_client_error``).

The vector store is local qdrant (or, with ``database_url``, a real PostgreSQL table of
upstream's shape through mem0's own pgvector store), and the double answers as upstream's
default store (pgvector) does: ids that are not UUIDs fail with 502, ``top_k=0`` with ``show_expired``
lists nothing. ``qdrant_list_bug=True`` is upstream on Qdrant instead: its admin listing and
``/entities`` unwrap a list where Qdrant returns a tuple, so the listing answers two rows whose
every field is null and ``/entities`` answers ``[]``, as seen on the upstream server.

Older servers: ``has_entities=False`` (before 2026-04: ``/entities`` is 404),
``lists_without_ids=False`` (GET /memories without ids is 400 ``At least one identifier is
required.`` to any key), ``supports_show_expired=False`` and ``honours_top_k=False`` (before
2026-06), ``supports_infer=False`` (before ``infer``: the field is dropped and every write
would run LLM extraction; this double has no LLM, so such a write is answered 502 and counted
in ``extraction_requests``), ``openapi=False`` (schema hidden).

``faults.latency`` delays every request; calls into the one ``Memory`` are serialised, as its
local stores need, outside the latency, so concurrent requests overlap as on a real server.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import uuid
import warnings
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, create_model
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.doubles import ASGIApp, ASGIBridge, Faults
from tests.doubles.mem0_server_auth import Caller, Clock, HTTPError, ServerAuth

os.environ.setdefault("MEM0_TELEMETRY", "False")  # must be set before mem0 is imported
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="memsync-mem0-"))

from mem0 import Memory
from mem0.exceptions import ValidationError as Mem0ValidationError
from qdrant_client import QdrantClient

from memsync.providers.mem0.hash_embedder import HashEmbedder

DIMS = 64
MAX_TOP_K = 1000  # server/main.py: ALL_MEMORIES_LIMIT
DEFAULT_TOP_K = 100  # what an old server's Memory.get_all returned when no top_k reached it
ENTITY_SCAN_LIMIT = 10_000  # server/routers/entities.py: SCAN_LIMIT
ENTITY_TYPES = {"user": "user_id", "agent": "agent_id", "run": "run_id"}
# server/main.py: what the admin listing keeps out of a row's metadata
_RESERVED_PAYLOAD_KEYS = {
    "data",
    "user_id",
    "agent_id",
    "run_id",
    "hash",
    "created_at",
    "updated_at",
    "expiration_date",
}


class BiasedHashEmbedder(HashEmbedder):
    """memsync's hashing embedder plus a constant first dimension, as upstream's offline
    launcher embeds: any two texts have a cosine of at least 0, so a search with
    ``threshold: 0`` finds every memory of its scope, as pgvector (whose score is floored at
    0) does with real embeddings."""

    def __init__(self, dims: int) -> None:
        super().__init__(dims)
        self.words = HashEmbedder(dims - 1)

    def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
        vector = [1.0, *self.words.embed(text, memory_action)]
        return [x / 2**0.5 for x in vector]


def offline_memory(
    *, embedder: HashEmbedder | None = None, database_url: str | None = None, indexed: bool = False
) -> Memory:
    """A real mem0 Memory that never leaves the machine; with DATABASE_URL, its memories live
    in that PostgreSQL database's ``memories`` table, through mem0's own pgvector store;
    ``indexed``: in ``IndexedVectors`` (pgvector's answers at an organisation's size, in
    memory) instead of local qdrant."""
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "memories",
                "client": QdrantClient(":memory:"),
                "embedding_model_dims": DIMS,
            },
        },
        "llm": {
            "provider": "openai",
            "config": {"api_key": "placeholder", "openai_base_url": "http://127.0.0.1:9/v1"},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "api_key": "placeholder",
                "openai_base_url": "http://127.0.0.1:9/v1",
                "embedding_dims": DIMS,
            },
        },
        "history_db_path": ":memory:",
    }
    with warnings.catch_warnings():  # local qdrant says payload indexes do nothing: known
        warnings.simplefilter("ignore", UserWarning)
        memory = Memory.from_config(config)
    memory.embedding_model = embedder or HashEmbedder(DIMS)
    if database_url is not None:
        from tests.doubles.mem0_postgres_store import PostgresStore

        memory.vector_store = PostgresStore(database_url, "memories", DIMS)
        memory.vector_store.create_col()
    elif indexed:
        from tests.doubles.indexed_vectors import IndexedVectors

        memory.vector_store = IndexedVectors()
    return memory


def _timestamp(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _isoformat(value: datetime | None) -> str | None:
    """How FastAPI serialises a datetime field (pydantic's JSON mode)."""
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


# request models, as server/main.py declares them -------------------------------------------


class Message(BaseModel):
    role: str
    content: str


class MemoryCreateOld(BaseModel):
    """The request model of servers from before ``infer`` (unknown fields are dropped)."""

    messages: list[Message]
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = None


class MemoryCreate(MemoryCreateOld):
    infer: bool | None = Field(
        None, description="Whether to extract facts from messages. Defaults to True."
    )
    memory_type: str | None = None
    prompt: str | None = None


class MemoryUpdate(BaseModel):
    text: str | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = None


class SearchRequest(BaseModel):
    query: str
    user_id: str | None = None
    run_id: str | None = None
    agent_id: str | None = None
    filters: dict[str, Any] | None = None
    top_k: int | None = None
    threshold: float | None = None
    explain: bool | None = None
    show_expired: bool | None = None


def list_query(*, top_k: bool, show_expired: bool) -> type[BaseModel]:
    """The query parameters ``GET /memories`` declares (``top_k`` and ``show_expired`` arrived
    in 2026-06); FastAPI ignores the ones a route does not declare."""
    fields: dict[str, Any] = {k: (str | None, None) for k in ("user_id", "run_id", "agent_id")}
    if top_k:
        fields["top_k"] = (int | None, Field(None, ge=0, le=MAX_TOP_K))
    if show_expired:
        fields["show_expired"] = (bool, False)
    model: type[BaseModel] = create_model("ListQuery", **fields)
    return model


class EntityPath(BaseModel):
    entity_type: Literal["user", "agent", "run"]
    entity_id: str


class LoginRequest(BaseModel):
    email: str
    password: str


class RefreshRequest(BaseModel):
    refresh_token: str


def _unprocessable(exc: ValidationError, where: str) -> HTTPError:
    """FastAPI's 422: pydantic's errors without their URLs, ``loc`` under ``where``."""
    errors = json.loads(exc.json(include_url=False))
    for error in errors:
        error["loc"] = [where, *error["loc"]]
    return HTTPError(422, errors)


def _upstream_error(code: str = "unknown") -> HTTPError:
    """``errors.upstream_error``: 502 with a code and a request id to quote."""
    messages = {
        "unknown": "Upstream provider error.",
        "provider_unavailable": "Provider is unreachable or returned a server error.",
    }
    request_id = uuid.uuid4().hex[:8]
    body = {"detail": messages[code], "code": code, "request_id": request_id}
    return HTTPError(502, messages[code], {"X-Request-ID": request_id}, body=body)


def _client_error(exc: Exception) -> HTTPError:
    """``_client_error``: 'not found' is a 404, every other ValueError a 400."""
    detail = str(exc)
    status = 404 if isinstance(exc, ValueError) and "not found" in detail.lower() else 400
    return HTTPError(status, detail)


Handler = Callable[[Request], Awaitable[Any]]


class Mem0ServerDouble:
    """State and options of one double; ``app`` is the ASGI app, ``transport()`` a client's."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        user_keys: Mapping[str, str] | None = None,
        auth_disabled: bool | None = None,
        supports_infer: bool = True,
        openapi: bool = True,
        memory: Memory | None = None,
        supports_show_expired: bool = True,
        honours_top_k: bool = True,
        has_entities: bool = True,
        lists_without_ids: bool = True,
        qdrant_list_bug: bool = False,
        search_finds_all: bool = True,
        indexed: bool = False,
        clock: Clock | None = None,
        database_url: str | None = None,
        history_database_url: str | None = None,
    ) -> None:
        """``api_key`` is ADMIN_API_KEY; ``user_keys`` maps ``m0sk_`` keys to their user's
        role ("admin", or "member" as only SQL makes one). Auth is disabled when neither is
        given (``auth_disabled`` says otherwise). ``search_finds_all=False`` embeds with
        signed hashes, so a search may rank a memory below ``threshold: 0`` and leave it out.
        ``database_url``: the memories live in that PostgreSQL database's ``memories`` table, as
        on upstream's default store (``mem0_postgres_store``).
        ``indexed=True`` keeps the memories in ``IndexedVectors`` (a thousand users' worth listed
        per user in milliseconds, as pgvector with an index answers).
        ``history_database_url``: Mem0's history lives in that database's ``history`` table, as
        upstream PR #6968 keeps it (``mem0_postgres_history``); else in memory, as main's."""
        self.auth = ServerAuth(
            admin_api_key=api_key,
            auth_disabled=(api_key is None and not user_keys)
            if auth_disabled is None
            else auth_disabled,
            clock=clock or Clock(),
        )
        self.admin = self.auth.add_user()  # the dashboard's first (admin) user
        for key, role in (user_keys or {}).items():
            owner = (
                self.admin if role == "admin" else self.auth.add_user(f"{key}@x.test", role=role)
            )
            self.auth.api_keys[key] = owner.id
        self.supports_infer = supports_infer
        self.supports_show_expired = supports_show_expired
        self.honours_top_k = honours_top_k
        self.has_entities = has_entities
        self.lists_without_ids = lists_without_ids
        self.qdrant_list_bug = qdrant_list_bug
        self.openapi = openapi
        self.entity_scan_limit = ENTITY_SCAN_LIMIT
        embedder = BiasedHashEmbedder(DIMS) if search_finds_all else HashEmbedder(DIMS)
        self.database_url = database_url
        self.memory = memory or offline_memory(
            embedder=embedder, database_url=database_url, indexed=indexed
        )
        if history_database_url is not None:
            from tests.doubles.mem0_postgres_history import PostgresHistory

            self.memory.db = PostgresHistory(history_database_url)
        self.lock = threading.Lock()
        self.faults = Faults()
        self.extraction_requests = 0
        get, post, put, delete = ["GET"], ["POST"], ["PUT"], ["DELETE"]
        routes = [
            Route("/", self.home, methods=get),
            Route("/openapi.json", self.openapi_json, methods=get),
            Route("/auth/login", self._open(self.login), methods=post),
            Route("/auth/refresh", self._open(self.refresh), methods=post),
            Route("/memories", self._guard(self.add_memory), methods=post),
            Route("/memories", self._guard(self.get_all_memories), methods=get),
            Route("/memories", self._guard(self.delete_all_memories), methods=delete),
            Route("/memories/{memory_id}", self._guard(self.get_memory), methods=get),
            Route("/memories/{memory_id}", self._guard(self.update_memory), methods=put),
            Route("/memories/{memory_id}", self._guard(self.delete_memory), methods=delete),
            Route("/memories/{memory_id}/history", self._guard(self.memory_history), methods=get),
            Route("/search", self._guard(self.search_memories), methods=post),
        ]
        if has_entities:
            routes += [
                Route("/entities", self._guard(self.list_entities), methods=get),
                Route(
                    "/entities/{entity_type}/{entity_id}",
                    self._guard(self.delete_entity),
                    methods=delete,
                ),
            ]
        app = Starlette(
            routes=routes, exception_handlers={StarletteHTTPException: self._starlette_error}
        )
        app.router.redirect_slashes = False  # FastAPI(redirect_slashes=False) upstream
        self.app: ASGIApp = self.faults.wrap(app)

    def transport(self) -> ASGIBridge:
        return ASGIBridge(self.app)

    @property
    def clock(self) -> Clock:
        return self.auth.clock

    def login_tokens(self, role: str = "admin") -> dict[str, str]:
        """An access and a refresh token, as ``POST /auth/login`` answers them."""
        user = self.admin if role == "admin" else self.auth.add_user(f"{role}@x.test", role=role)
        return self.auth.tokens_for(user)

    # the FastAPI shell ----------------------------------------------------------------------

    @staticmethod
    async def _starlette_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)

    @staticmethod
    def _answer(error: HTTPError) -> Response:
        return JSONResponse(error.body, status_code=error.status, headers=error.headers)

    def _guard(self, handler: Callable[[Request, Caller], Awaitable[Any]]) -> Handler:
        """A route behind ``Depends(verify_auth)``: body JSON first, then auth, then the rest."""

        async def route(request: Request) -> Response:
            try:
                body = await request.body()
                if body:
                    try:
                        json.loads(body)
                    except ValueError as exc:
                        raise HTTPError(
                            422,
                            [
                                {
                                    "type": "json_invalid",
                                    "loc": ["body", 0],
                                    "msg": "JSON decode error",
                                    "input": {},
                                    "ctx": {"error": str(exc).split(":")[0]},
                                }
                            ],
                        ) from None
                caller = self.auth.verify({k.lower(): v for k, v in request.headers.items()})
                answer = await handler(request, caller)
            except HTTPError as error:
                return self._answer(error)
            return answer if isinstance(answer, Response) else JSONResponse(answer)

        return route

    def _open(self, handler: Callable[[Request], Awaitable[Any]]) -> Handler:
        async def route(request: Request) -> Response:
            try:
                return JSONResponse(await handler(request))
            except HTTPError as error:
                return self._answer(error)

        return route

    @staticmethod
    async def _model(request: Request, model: type[BaseModel]) -> Any:
        raw = await request.body()
        if not raw:
            raise HTTPError(
                422, [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
            )
        try:
            return model.model_validate_json(raw)
        except ValidationError as exc:
            raise _unprocessable(exc, "body") from None

    def _mem0(self, call: Callable[[], Any], *, client_errors: bool = True) -> Any:
        """Call the Memory as upstream does: ValueError is the client's fault, the rest 502."""
        try:
            with self.lock:
                return call()
        except (ValueError, Mem0ValidationError) as exc:
            if client_errors:
                raise _client_error(exc) from None
            raise _upstream_error() from None
        except Exception:
            raise _upstream_error() from None

    @staticmethod
    def _require_uuid(memory_id: str) -> None:
        """pgvector keeps ids in a uuid column: anything else fails in the database (502)."""
        try:
            uuid.UUID(memory_id)
        except ValueError:
            raise _upstream_error() from None

    def _rows(self, answer: Any) -> list[Any]:
        """``vector_store.list``'s rows as upstream unwraps them (the Qdrant tuple bug, or not)."""
        if self.qdrant_list_bug:  # upstream's own expression, which misses Qdrant's tuple
            found = (
                answer[0]
                if answer and isinstance(answer, list) and isinstance(answer[0], list)
                else answer
            )
            return list(found or [])
        if isinstance(answer, tuple | list) and answer and isinstance(answer[0], list | tuple):
            return list(answer[0])
        return list(answer or [])

    # routes ---------------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        return RedirectResponse("/docs", status_code=307)

    async def login(self, request: Request) -> Any:
        body = await self._model(request, LoginRequest)
        return self.auth.login(
            request.client.host if request.client else "", body.email, body.password
        )

    async def refresh(self, request: Request) -> Any:
        body = await self._model(request, RefreshRequest)
        return self.auth.refresh(request.client.host if request.client else "", body.refresh_token)

    async def openapi_json(self, request: Request) -> Response:
        if not self.openapi:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        return JSONResponse(self._schema())

    def _schema(self) -> dict[str, Any]:
        create = MemoryCreate if self.supports_infer else MemoryCreateOld
        components: dict[str, Any] = {}
        for model in (create, MemoryUpdate, SearchRequest, RefreshRequest):
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(schema.pop("$defs", {}))
            components[model.__name__] = schema

        def body(model: type[BaseModel]) -> dict[str, Any]:
            ref = {"$ref": f"#/components/schemas/{model.__name__}"}
            return {"content": {"application/json": {"schema": ref}}, "required": True}

        def query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
            return {"name": name, "in": "query", "required": False, "schema": schema}

        text = {"anyOf": [{"type": "string"}, {"type": "null"}]}
        parameters = [query(k, text) for k in ("user_id", "run_id", "agent_id")]
        if self.honours_top_k:
            bounded = {"type": "integer", "maximum": MAX_TOP_K, "minimum": 0}
            parameters.append(query("top_k", {"anyOf": [bounded, {"type": "null"}]}))
        if self.supports_show_expired:
            parameters.append(query("show_expired", {"type": "boolean", "default": False}))
        paths: dict[str, Any] = {
            "/auth/refresh": {"post": {"summary": "Refresh", "requestBody": body(RefreshRequest)}},
            "/memories": {
                "post": {"summary": "Create memories", "requestBody": body(create)},
                "get": {"summary": "Get memories", "parameters": parameters},
                "delete": {"summary": "Delete all memories"},
            },
            "/memories/{memory_id}": {
                "get": {"summary": "Get a memory"},
                "put": {"summary": "Update a memory", "requestBody": body(MemoryUpdate)},
                "delete": {"summary": "Delete a memory"},
            },
            "/memories/{memory_id}/history": {"get": {"summary": "Get memory history"}},
            "/search": {"post": {"summary": "Search memories", "requestBody": body(SearchRequest)}},
        }
        if self.has_entities:
            paths["/entities"] = {"get": {"summary": "List Entities"}}
            paths["/entities/{entity_type}/{entity_id}"] = {"delete": {"summary": "Delete Entity"}}
        return {
            "openapi": "3.1.0",
            "info": {"title": "Mem0 REST APIs", "version": "1.0.0"},
            "paths": paths,
            "components": {
                "schemas": components,
                "securitySchemes": {
                    "HTTPBearer": {"type": "http", "scheme": "bearer"},
                    "APIKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                },
            },
        }

    async def add_memory(self, request: Request, caller: Caller) -> Any:
        model = MemoryCreate if self.supports_infer else MemoryCreateOld
        create = await self._model(request, model)
        if not any([create.user_id, create.agent_id, create.run_id]):
            raise HTTPError(400, "At least one identifier (user_id, agent_id, run_id) is required.")
        params = {k: v for k, v in create.model_dump().items() if v is not None and k != "messages"}
        if params.get("infer") is not False:
            self.extraction_requests += 1  # would reach the LLM, which is down here
            raise _upstream_error("provider_unavailable")
        messages = [m.model_dump() for m in create.messages]
        return self._mem0(lambda: self.memory.add(messages=messages, **params))

    async def get_all_memories(self, request: Request, caller: Caller) -> Any:
        model = list_query(top_k=self.honours_top_k, show_expired=self.supports_show_expired)
        try:
            query = model.model_validate(dict(request.query_params)).model_dump()
        except ValidationError as exc:
            raise _unprocessable(exc, "query") from None
        ids = {k: query[k] for k in ("user_id", "run_id", "agent_id") if query[k]}
        top_k, show_expired = query.get("top_k"), query.get("show_expired", False)
        if not ids:
            if not self.lists_without_ids:
                raise HTTPError(400, "At least one identifier is required.")
            if not caller.is_admin:
                raise HTTPError(403, "Admin role required to list all memories.")
            return self._admin_listing(MAX_TOP_K if top_k is None else top_k)
        params: dict[str, Any] = {"filters": ids, "show_expired": show_expired}
        if not self.honours_top_k:
            params["top_k"] = DEFAULT_TOP_K  # the query's top_k never reached Memory.get_all
        elif top_k is not None:
            params["top_k"] = top_k
        if top_k == 0 and show_expired:
            return {"results": []}  # pgvector's LIMIT 0 (local qdrant refuses a 0 limit)
        return self._mem0(lambda: self.memory.get_all(**params), client_errors=False)

    def _admin_listing(self, limit: int) -> dict[str, Any]:
        """``_list_all_memories``: raw payloads, expired ones too, at most ``limit`` rows."""
        if limit == 0:
            return {"results": []}
        rows = self._rows(self._mem0(lambda: self.memory.vector_store.list(top_k=limit)))
        return {"results": [self._serialize_memory(row) for row in rows]}

    @staticmethod
    def _serialize_memory(row: Any) -> dict[str, Any]:
        payload = getattr(row, "payload", None) or {}
        return {
            "id": getattr(row, "id", None),
            "memory": payload.get("data"),
            "user_id": payload.get("user_id"),
            "agent_id": payload.get("agent_id"),
            "run_id": payload.get("run_id"),
            "hash": payload.get("hash"),
            "expiration_date": payload.get("expiration_date"),
            "metadata": {k: v for k, v in payload.items() if k not in _RESERVED_PAYLOAD_KEYS},
            "created_at": payload.get("created_at"),
            "updated_at": payload.get("updated_at"),
        }

    async def delete_all_memories(self, request: Request, caller: Caller) -> Any:
        self.auth.require_admin(caller)
        ids = {
            k: v for k in ("user_id", "run_id", "agent_id") if (v := request.query_params.get(k))
        }
        if not ids:
            raise HTTPError(400, "At least one identifier is required.")
        self._mem0(lambda: self.memory.delete_all(**ids), client_errors=False)
        return {"message": "All relevant memories deleted"}

    async def get_memory(self, request: Request, caller: Caller) -> Any:
        memory_id = request.path_params["memory_id"]
        self._require_uuid(memory_id)
        return self._mem0(lambda: self.memory.get(memory_id), client_errors=False)

    async def update_memory(self, request: Request, caller: Caller) -> Any:
        memory_id = request.path_params["memory_id"]
        update = await self._model(request, MemoryUpdate)
        self._require_uuid(memory_id)
        fields = update.model_fields_set
        params: dict[str, Any] = {"memory_id": memory_id}
        if "text" in fields:
            params["data"] = update.text  # upstream still passes the deprecated name
        if "metadata" in fields:
            params["metadata"] = update.metadata
        if "expiration_date" in fields:
            params["expiration_date"] = update.expiration_date
        return self._mem0(lambda: self.memory.update(**params))

    async def delete_memory(self, request: Request, caller: Caller) -> Any:
        memory_id = request.path_params["memory_id"]
        self._require_uuid(memory_id)
        self._mem0(lambda: self.memory.delete(memory_id=memory_id))
        return {"message": "Memory deleted successfully"}

    async def memory_history(self, request: Request, caller: Caller) -> Any:
        memory_id = request.path_params["memory_id"]
        rows = self._mem0(lambda: self.memory.history(memory_id=memory_id), client_errors=False)
        return json.loads(json.dumps(rows, default=str))

    async def search_memories(self, request: Request, caller: Caller) -> Any:
        search = await self._model(request, SearchRequest)
        filters = dict(search.filters or {})
        for key in ("user_id", "agent_id", "run_id"):
            if value := getattr(search, key):
                filters[key] = value  # deprecated top-level ids still count
        params = {
            k: getattr(search, k)
            for k in ("top_k", "threshold", "explain", "show_expired")
            if getattr(search, k) is not None
        }
        try:
            with self.lock:
                return self.memory.search(query=search.query, filters=filters, **params)
        except ValueError as exc:
            raise HTTPError(400, str(exc)) from None
        except Exception:
            raise _upstream_error() from None

    async def list_entities(self, request: Request, caller: Caller) -> Any:
        """``GET /entities`` as ``server/routers/entities.py`` computes it: any valid key; one
        live pass over at most ``entity_scan_limit`` (10,000) payloads, expired ones included; per
        entity the count, the oldest ``created_at`` and the newest ``updated_at`` (or
        ``created_at``) of the memories it holds now, sorted by type, then id."""
        limit = self.entity_scan_limit
        answer = self._mem0(lambda: self.memory.vector_store.list(top_k=limit))
        buckets: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self._rows(answer):
            payload = getattr(row, "payload", None) or {}
            created = _timestamp(payload.get("created_at"))
            updated = _timestamp(payload.get("updated_at")) or created
            for kind, key in ENTITY_TYPES.items():
                value = payload.get(key)
                if not value:
                    continue
                bucket = buckets.setdefault(
                    (kind, str(value)),
                    {"total_memories": 0, "created_at": None, "updated_at": None},
                )
                bucket["total_memories"] += 1
                if created and (bucket["created_at"] is None or created < bucket["created_at"]):
                    bucket["created_at"] = created
                if updated and (bucket["updated_at"] is None or updated > bucket["updated_at"]):
                    bucket["updated_at"] = updated
        return [
            {
                "id": entity_id,
                "type": kind,
                "total_memories": data["total_memories"],
                "created_at": _isoformat(data["created_at"]),
                "updated_at": _isoformat(data["updated_at"]),
            }
            for (kind, entity_id), data in sorted(buckets.items())
        ]

    async def delete_entity(self, request: Request, caller: Caller) -> Any:
        try:
            path = EntityPath.model_validate(dict(request.path_params))
        except ValidationError as exc:
            raise _unprocessable(exc, "path") from None
        self.auth.require_admin(caller)
        key = ENTITY_TYPES[path.entity_type]
        self._mem0(lambda: self.memory.delete_all(**{key: path.entity_id}), client_errors=False)
        return {"message": "Entity deleted"}

    # backdoors ------------------------------------------------------------------------------

    def insert_without_content(self, **scope: str) -> str:
        """A memory whose payload has no ``data`` (ADR-0024's empty-content case)."""
        return self.insert_many([None], **scope)[0]

    def insert_many(self, texts: list[str | None], **scope: str) -> list[str]:
        """Memories stored as ``Memory.add(infer=False)`` stores them, in one vector-store
        call (for scopes of thousands); ``None`` stores a payload without ``data``."""
        import hashlib
        from datetime import UTC, timedelta

        start = datetime.now(UTC)
        ids, vectors, payloads = [], [], []
        for number, text in enumerate(texts):
            stamp = (start + timedelta(microseconds=number)).isoformat()
            payload: dict[str, Any] = {**scope, "created_at": stamp, "updated_at": stamp}
            if text is None:
                payload["hash"] = ""
            else:
                payload.update(
                    data=text,
                    hash=hashlib.md5(text.encode()).hexdigest(),
                    role="user",
                    text_lemmatized=text.lower(),
                )
            ids.append(str(uuid.uuid4()))
            vectors.append(self.memory.embedding_model.embed(text or "", "add"))
            payloads.append(payload)
        with self.lock:
            self.memory.vector_store.insert(vectors=vectors, ids=ids, payloads=payloads)
        return ids
