"""A double of Mem0's self-hosted REST server (``server/main.py`` in the mem0 repository).

It serves the documented routes over a REAL ``mem0.Memory`` (mem0ai, offline: in-memory
qdrant, in-memory history, a deterministic hashing embedder, and an LLM pointed at a closed
loopback port) — the embedder is memsync's own ``HashEmbedder`` — so what memsync reads back is what mem0 itself stores. What is simulated is
only the FastAPI shell: request validation (422), auth (X-API-Key / Bearer), ``top_k`` bounds,
404s, and ``/openapi.json``.

Expiry is mem0's own: ``expiration_date`` on add and update, expired memories hidden from
``GET /memories`` unless ``show_expired=true``. ``supports_show_expired=False`` is a server
from before 2026-06: it drops the parameter and always hides them (``GET /memories/{id}``
still answers).

``honours_top_k=False`` is a server that drops ``top_k`` and answers its own default page
(100). ``faults.latency`` delays every request (Mem0's server checks each key with bcrypt:
about 300 ms), and ``Fault.bad_gateway()`` answers a proxy's 502 with a code and request id.
Calls into the one ``Memory`` are serialised, as its local stores need; the latency is
served outside that lock, so concurrent requests overlap as they would on a real server.

``supports_infer=False`` is a server from before the ``infer`` field: its request model
silently drops ``infer`` and would run LLM extraction on every write. This double has no LLM,
so any write that would reach extraction is answered 500 (as a server whose LLM is down) and
counted in ``extraction_requests``: a test asserting it stays 0 proves memsync never asked.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import warnings
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.doubles import ASGIApp, ASGIBridge, Faults

os.environ.setdefault("MEM0_TELEMETRY", "False")  # must be set before mem0 is imported
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="memsync-mem0-"))

from mem0 import Memory
from qdrant_client import QdrantClient

from memsync.providers.mem0.hash_embedder import HashEmbedder

DIMS = 64
MAX_TOP_K = 1000  # server/main.py: ALL_MEMORIES_LIMIT
DEFAULT_TOP_K = 100  # what Memory.get_all returns when no top_k reaches it
ENTITY_SCAN_LIMIT = 10_000  # server/routers/entities.py: SCAN_LIMIT
ENTITY_TYPES = {"user": "user_id", "agent": "agent_id", "run": "run_id"}


def offline_memory() -> Memory:
    """A real mem0 Memory that never leaves the machine."""
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
    memory.embedding_model = HashEmbedder(DIMS)
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
    infer: bool | None = Field(None, description="Whether to extract facts from messages.")


class MemoryUpdate(BaseModel):
    text: str | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = None


class Mem0ServerDouble:
    """State and options of one double; ``app`` is the ASGI app, ``transport()`` a client's."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        bearer_token: str | None = None,
        supports_infer: bool = True,
        openapi: bool = True,
        memory: Memory | None = None,
        supports_show_expired: bool = True,
        honours_top_k: bool = True,
        user_keys: dict[str, str] | None = None,
    ) -> None:
        self.supports_show_expired = supports_show_expired
        self.api_key = api_key  # the admin key (ADMIN_API_KEY)
        self.user_keys = dict(user_keys or {})  # per-user keys (m0sk_...) -> their user id
        self.honours_top_k = honours_top_k
        self.lock = threading.Lock()
        self.bearer_token = bearer_token
        self.supports_infer = supports_infer
        self.openapi = openapi
        self.memory = memory or offline_memory()
        self.faults = Faults()
        self.extraction_requests = 0
        routes = [
            Route("/openapi.json", self.openapi_json, methods=["GET"]),
            Route("/memories", self.add_memory, methods=["POST"]),
            Route("/memories", self.get_all_memories, methods=["GET"]),
            Route("/memories/{memory_id}", self.get_memory, methods=["GET"]),
            Route("/memories/{memory_id}", self.update_memory, methods=["PUT"]),
            Route("/memories/{memory_id}", self.delete_memory, methods=["DELETE"]),
            Route("/memories/{memory_id}/history", self.memory_history, methods=["GET"]),
            Route("/entities", self.list_entities, methods=["GET"]),
        ]
        self.app: ASGIApp = self.faults.wrap(Starlette(routes=routes))

    def transport(self) -> ASGIBridge:
        return ASGIBridge(self.app)

    # helpers ----------------------------------------------------------------------------

    def _unauthorized(self, request: Request) -> Response | None:
        if self.api_key is None and self.bearer_token is None:
            return None  # AUTH_DISABLED
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            if self.bearer_token is not None and header[7:] == self.bearer_token:
                return None
            return JSONResponse({"detail": "Invalid or expired token."}, status_code=401)
        key = request.headers.get("x-api-key")
        if key is not None:
            if self.api_key is not None and key == self.api_key:
                return None
            if key in self.user_keys:
                return None
            return JSONResponse({"detail": "Invalid API key."}, status_code=401)
        return JSONResponse(
            {"detail": "Authentication required. Provide a Bearer token or X-API-Key header."},
            status_code=401,
        )

    @staticmethod
    def _invalid(exc: ValidationError) -> JSONResponse:
        errors = json.loads(exc.json(include_url=False))
        for error in errors:
            error["loc"] = ["body", *error["loc"]]
        return JSONResponse({"detail": errors}, status_code=422)

    # routes -------------------------------------------------------------------------------

    async def openapi_json(self, request: Request) -> Response:
        if not self.openapi:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        model = MemoryCreate if self.supports_infer else MemoryCreateOld
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.pop("$defs", {})
        components[model.__name__] = schema
        top_k = {
            "name": "top_k",
            "in": "query",
            "required": False,
            "schema": {
                "anyOf": [{"type": "integer", "maximum": MAX_TOP_K, "minimum": 0}, {"type": "null"}]
            },
        }
        body = {
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
            "required": True,
        }
        parameters: list[dict[str, Any]] = [top_k] if self.honours_top_k else []
        if self.supports_show_expired:
            parameters.append(
                {"name": "show_expired", "in": "query", "schema": {"type": "boolean"}}
            )
        return JSONResponse(
            {
                "openapi": "3.1.0",
                "info": {"title": "Mem0 REST APIs", "version": "1.0.0"},
                "paths": {
                    "/memories": {
                        "post": {"summary": "Create memories", "requestBody": body},
                        "get": {"summary": "Get memories", "parameters": parameters},
                    }
                },
                "components": {"schemas": components},
            }
        )

    async def add_memory(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        model = MemoryCreate if self.supports_infer else MemoryCreateOld
        try:
            create = model.model_validate_json(await request.body())
        except ValidationError as exc:
            return self._invalid(exc)
        if not any([create.user_id, create.agent_id, create.run_id]):
            return JSONResponse(
                {"detail": "At least one identifier (user_id, agent_id, run_id) is required."},
                status_code=400,
            )
        if getattr(create, "infer", None) is not False:
            self.extraction_requests += 1
            return JSONResponse({"detail": "LLM call failed (this double has no LLM)"}, 500)
        params = {
            k: v
            for k, v in create.model_dump().items()
            if v is not None and k not in ("messages", "infer")
        }
        with self.lock:
            result = self.memory.add(
                [m.model_dump() for m in create.messages], infer=False, **params
            )
        return JSONResponse(result)

    async def get_all_memories(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        query = request.query_params
        filters = {k: query[k] for k in ("user_id", "agent_id", "run_id") if query.get(k)}
        if not filters:
            return self._admin_listing(request)
        params: dict[str, Any] = {"filters": filters}
        if "top_k" in query and self.honours_top_k:
            try:
                top_k = int(query["top_k"])
            except ValueError:
                top_k = -1
            if not 0 <= top_k <= MAX_TOP_K:
                return JSONResponse(
                    {
                        "detail": [
                            {
                                "loc": ["query", "top_k"],
                                "type": "less_than_equal",
                                "msg": f"Input should be between 0 and {MAX_TOP_K}",
                            }
                        ]
                    },
                    status_code=422,
                )
            params["top_k"] = top_k
        if not self.honours_top_k:
            params["top_k"] = DEFAULT_TOP_K  # the query's top_k never reached Memory.get_all
        if params.get("top_k") == 0:
            return JSONResponse({"results": []})
        if self.supports_show_expired and query.get("show_expired", "").lower() == "true":
            params["show_expired"] = True
        with self.lock:
            return JSONResponse(self.memory.get_all(**params))

    def _admin_listing(self, request: Request) -> Response:
        """Without ids, the admin key lists every memory (how a client discovers scopes).

        A per-user key may not: the double answers 403 (upstream's exact wording is not
        documented; memsync only relies on the refusal being 4xx).
        """
        if request.headers.get("x-api-key") in self.user_keys:
            return JSONResponse(
                {"detail": "Listing memories without an identifier requires the admin key."},
                status_code=403,
            )
        try:
            top_k = int(request.query_params.get("top_k", "100"))
        except ValueError:
            top_k = -1
        if not 0 <= top_k <= MAX_TOP_K:
            return JSONResponse({"detail": f"top_k must be between 0 and {MAX_TOP_K}"}, 422)
        with self.lock:
            results = self.memory._get_all_from_vector_store({}, top_k, show_expired=True)
        return JSONResponse({"results": json.loads(json.dumps(results, default=str))})

    async def get_memory(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        with self.lock:
            return JSONResponse(self.memory.get(request.path_params["memory_id"]))

    async def update_memory(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        try:
            update = MemoryUpdate.model_validate_json(await request.body())
        except ValidationError as exc:
            return self._invalid(exc)
        fields = update.model_fields_set
        params: dict[str, Any] = {}
        if "text" in fields:
            params["text"] = update.text
        if "metadata" in fields:
            params["metadata"] = update.metadata
        if "expiration_date" in fields:
            params["expiration_date"] = update.expiration_date
        try:
            with self.lock:
                answer = self.memory.update(memory_id=request.path_params["memory_id"], **params)
            return JSONResponse(answer)
        except ValueError as exc:
            status = 404 if "not found" in str(exc).lower() else 400
            return JSONResponse({"detail": str(exc)}, status_code=status)

    async def delete_memory(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        try:
            with self.lock:
                self.memory.delete(memory_id=request.path_params["memory_id"])
        except ValueError as exc:
            status = 404 if "not found" in str(exc).lower() else 400
            return JSONResponse({"detail": str(exc)}, status_code=status)
        return JSONResponse({"message": "Memory deleted successfully"})

    async def memory_history(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        rows = self.memory.history(memory_id=request.path_params["memory_id"])
        return JSONResponse(json.loads(json.dumps(rows, default=str)))

    async def list_entities(self, request: Request) -> Response:
        """``GET /entities`` as ``server/routers/entities.py`` computes it (upstream 8d5b786).

        Any valid key; one live pass over at most ``ENTITY_SCAN_LIMIT`` payloads, expired ones
        included; per entity the count, the oldest ``created_at`` and the newest
        ``updated_at`` (or ``created_at``) of the memories it holds now, sorted by type, id.
        """
        if denied := self._unauthorized(request):
            return denied
        with self.lock:
            answer = self.memory.vector_store.list(top_k=ENTITY_SCAN_LIMIT)
        rows = answer[0] if answer and isinstance(answer[0], list) else answer or []
        buckets: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:
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
        return JSONResponse(
            [
                {
                    "id": entity_id,
                    "type": kind,
                    "total_memories": data["total_memories"],
                    "created_at": _isoformat(data["created_at"]),
                    "updated_at": _isoformat(data["updated_at"]),
                }
                for (kind, entity_id), data in sorted(buckets.items())
            ]
        )

    # backdoor -------------------------------------------------------------------------------

    def insert_without_content(self, **scope: str) -> str:
        """A memory whose payload has no ``data`` (ADR-0024's empty-content case)."""
        import uuid
        from datetime import UTC, datetime

        memory_id = str(uuid.uuid4())
        now = datetime.now(UTC).isoformat()
        payload = {"hash": "", "created_at": now, "updated_at": now, **scope}
        self.memory.vector_store.insert(
            vectors=[[0.0] * (DIMS - 1) + [1.0]], ids=[memory_id], payloads=[payload]
        )
        return memory_id
