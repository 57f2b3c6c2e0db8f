"""The Platform double's webhooks, as ``docs/platform/features/webhooks.mdx`` and the OpenAPI
(mem0 8d5b786) document them and ``MemoryClient`` 2.2.1 calls them.

Routes (note the ``/api/`` prefix, unlike the memory routes): ``GET`` and ``POST
/api/v1/webhooks/projects/{project_id}/`` (a bare list; 201 with the webhook object, 400 with
field-keyed errors), ``PUT`` and ``DELETE /api/v1/webhooks/{webhook_id}/`` (200 with a message;
404 ``{"error": "Webhook not found"}``). A webhook id is a string (``wh_...``).

Events: on every add, update and delete (one or in a batch), an HTTP POST of
``{"event_details": {"id", "data": {"memory"}, "event": "ADD"|"UPDATE"|"DELETE"}}`` to each
active webhook subscribed to that type (``memory_add``, ``memory_update``, ``memory_delete``),
sent by a thread of its own after the write answered: no scope, no timestamp, no event id, no
signature, as documented. Delivery is not documented (retries, order, timeout): the double
tries each once. Knobs: ``delay`` (seconds before each delivery) and ``drop_every`` (every Nth
event is lost), so tests can see memsync survive a late or a lost event; ``delivered`` records
(event, id, HTTP status) of each try.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

EVENT_TYPES = (
    "memory_add",
    "memory_update",
    "memory_delete",
    "memory_categorize",
    "ingest_job_completed",
    "ingest_job_partially_completed",
    "ingest_job_failed",
    "ingest_job_cancelled",
)
EVENTS = {"memory_add": "ADD", "memory_update": "UPDATE", "memory_delete": "DELETE"}


class PlatformWebhooks:
    """The webhook routes of one double and the thread that delivers its events."""

    def __init__(self, authorized: Callable[[Request], bool]) -> None:
        self.authorized = authorized
        self.hooks: dict[str, dict[str, Any]] = {}
        self.delay = 0.0
        self.drop_every = 0
        self.delivered: list[tuple[str, str, int]] = []
        self.dropped: list[tuple[str, str]] = []
        self._emitted = 0
        self._outbox: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self._sender: threading.Thread | None = None
        self._lock = threading.Lock()

    def routes(self) -> list[Route]:
        return [
            Route("/api/v1/webhooks/projects/{project_id}/", self.listed, methods=["GET"]),
            Route("/api/v1/webhooks/projects/{project_id}/", self.create, methods=["POST"]),
            Route("/api/v1/webhooks/{webhook_id}/", self.update, methods=["PUT"]),
            Route("/api/v1/webhooks/{webhook_id}/", self.delete, methods=["DELETE"]),
        ]

    # the routes -----------------------------------------------------------------------------

    def _refused(self, request: Request) -> Response | None:
        if not self.authorized(request):
            return JSONResponse({"error": "Invalid API key"}, status_code=401)
        return None

    async def listed(self, request: Request) -> Response:
        project = request.path_params["project_id"]
        return self._refused(request) or JSONResponse(
            [hook for hook in self.hooks.values() if hook["project"] == project]
        )

    async def create(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        body = _body(await request.body())
        errors = {k: ["This field is required."] for k in ("url", "name") if not body.get(k)}
        types = body.get("event_types")
        if not isinstance(types, list) or not types:
            errors["event_types"] = ["This field is required."]
        else:
            wrong = [t for t in types if t not in EVENT_TYPES]
            if wrong:
                errors["event_types"] = [f'"{t}" is not a valid choice.' for t in wrong]
        if errors:
            return JSONResponse(errors, status_code=400)
        now = datetime.now(UTC).isoformat()
        hook = {
            "webhook_id": f"wh_{uuid.uuid4().hex[:12]}",
            "name": body["name"],
            "url": body["url"],
            "event_types": list(types),  # type: ignore[arg-type]
            "owner": "tester",
            "is_active": body.get("is_active", True) is not False,
            "project": request.path_params["project_id"],
            "created_at": now,
            "updated_at": now,
        }
        with self._lock:
            self.hooks[hook["webhook_id"]] = hook
        return JSONResponse(hook, status_code=201)

    async def update(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        hook = self.hooks.get(request.path_params["webhook_id"])
        if hook is None:
            return JSONResponse({"error": "Webhook not found"}, status_code=404)
        body = _body(await request.body())
        with self._lock:
            hook.update({k: body[k] for k in ("name", "url", "event_types") if k in body})
            hook["updated_at"] = datetime.now(UTC).isoformat()
        return JSONResponse({"message": "Webhook updated successfully"})

    async def delete(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        with self._lock:
            gone = self.hooks.pop(request.path_params["webhook_id"], None)
        if gone is None:
            return JSONResponse({"error": "Webhook not found"}, status_code=404)
        return JSONResponse({"message": "Webhook deleted successfully"})

    # events ---------------------------------------------------------------------------------

    def emit(self, kind: str, memory: dict[str, Any]) -> None:
        """A memory was added, updated or deleted: queue its event for every subscriber."""
        details = {"id": memory["id"], "data": {"memory": memory["memory"]}, "event": EVENTS[kind]}
        with self._lock:
            targets = [
                h["url"] for h in self.hooks.values() if h["is_active"] and kind in h["event_types"]
            ]
            if not targets:
                return
            self._emitted += 1
            if self.drop_every and self._emitted % self.drop_every == 0:
                self.dropped.append((details["event"], details["id"]))
                return
            if self._sender is None:
                self._sender = threading.Thread(target=self._send, name="webhooks", daemon=True)
                self._sender.start()
        for url in targets:
            self._outbox.put((url, {"event_details": details}))

    def _send(self) -> None:
        with httpx.Client(timeout=10.0) as http:
            while (item := self._outbox.get()) is not None:
                url, payload = item
                if self.delay:
                    time.sleep(self.delay)  # the Platform's own delivery delay, by the knob
                try:
                    status = http.post(url, json=payload).status_code
                except httpx.HTTPError:
                    status = 0  # not retried: the docs promise no retry
                details = payload["event_details"]
                self.delivered.append((details["event"], details["id"], status))

    def close(self) -> None:
        if self._sender is not None:
            self._outbox.put(None)
            self._sender.join(10)


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
