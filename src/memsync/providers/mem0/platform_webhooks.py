"""The Platform's webhooks, as ``MemoryClient`` 2.2.1 calls them and its docs describe them.

Routes (``mem0/client/main.py`` 1094-1206 at 2.2.1; the OpenAPI at mem0 8d5b786), with the
client's ``Authorization: Token`` and under ``/api/`` unlike the memory routes:
``GET``/``POST /api/v1/webhooks/projects/{project_id}/`` (a bare list; the created webhook),
``PUT``/``DELETE /api/v1/webhooks/{webhook_id}/``. The project comes from the config, else
from ``GET /v1/ping/`` as ``MemoryClient`` learns it. A webhook id is typed ``int`` by the
Python client and a string (``wh_123``) by the docs: kept as an opaque string.

An event (``docs/platform/features/webhooks.mdx``):
``{"event_details": {"id", "data": {"memory"}, "event": "ADD"|"UPDATE"|"DELETE"}}``: no
scope, no timestamp, no event id and no signature (the docs name none; the URL's secret is
memsync's authentication). ``memory_categorize`` and the ingest events are not subscribed to.
The scope of an id staging does not hold is read from ``GET /v1/memories/{id}/``.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from memsync.base.errors import NotFound, ProviderError
from memsync.base.scopes import Scope
from memsync.providers.http.shapes import expect_list, expect_object
from memsync.providers.mem0.http import path_segment
from memsync.providers.pushed import NotAnEvent, PushedChanges, PushedEvent, Subscription

if TYPE_CHECKING:
    from memsync.providers.mem0.platform import Mem0PlatformProvider

EVENT_TYPES = ("memory_add", "memory_update", "memory_delete")
KINDS = {"ADD": "add", "UPDATE": "update", "DELETE": "delete"}
MAX_EVENT_BYTES = 65536


class PlatformWebhooks(PushedChanges):
    """One Platform provider's webhook events and registrations."""

    platform: Mem0PlatformProvider

    def __init__(self, provider: Mem0PlatformProvider) -> None:
        super().__init__(provider)
        self.platform = provider
        self._project: str | None = provider.params.get("project_id")

    def parse(self, body: bytes) -> PushedEvent:
        if len(body) > MAX_EVENT_BYTES:
            raise NotAnEvent("an event longer than 64 KB")
        try:
            details = json.loads(body)["event_details"]
            kind = KINDS[details["event"]]
            memory_id = str(uuid.UUID(str(details["id"])))
        except (ValueError, KeyError, TypeError):
            raise NotAnEvent("not a memory event of the documented shape") from None
        data = details.get("data")
        text = data.get("memory") if isinstance(data, dict) else None
        return PushedEvent(kind, memory_id, text if isinstance(text, str) else None)  # type: ignore[arg-type]

    def project(self) -> str:
        """The project the key belongs to (or the one configured)."""
        if self._project is None:
            pong = expect_object(
                self.platform.name,
                self.platform.http.get("/v1/ping/", params=self.platform.params),
                "ping",
            )
            found = pong.get("project_id")
            if not isinstance(found, str) or not found:
                raise ProviderError(
                    f"{self.platform.name}: GET /v1/ping/ names no project; set project_id in "
                    "its table to register a webhook"
                )
            self._project = found
        return self._project

    def where(self) -> str:
        return f"project {self.project()}"

    def _hooks_path(self) -> str:
        return f"/api/v1/webhooks/projects/{path_segment(self.project())}/"

    def subscriptions(self) -> list[Subscription]:
        answer = self.platform.http.get(self._hooks_path())
        hooks = expect_list(self.platform.name, answer, f"GET {self._hooks_path()}")
        return [_subscription(h) for h in hooks if isinstance(h, dict) and h.get("webhook_id")]

    def subscribe(self, url: str, name: str) -> Subscription:
        body = {"url": url, "name": name, "event_types": list(EVENT_TYPES)}
        answer = self.platform.http.json("POST", self._hooks_path(), json=body)
        created = expect_object(self.platform.name, answer, f"POST {self._hooks_path()}")
        if not created.get("webhook_id"):
            raise ProviderError(f"{self.platform.name}: the Platform answered no webhook id")
        return _subscription(created)

    def move(self, subscription_id: str, url: str) -> None:
        path = f"/api/v1/webhooks/{path_segment(subscription_id)}/"
        self.platform.http.json("PUT", path, json={"url": url, "event_types": list(EVENT_TYPES)})

    def unsubscribe(self, subscription_id: str) -> bool:
        path = f"/api/v1/webhooks/{path_segment(subscription_id)}/"
        try:
            self.platform.http.json("DELETE", path)
        except NotFound:
            return False
        return True

    def locate(self, memory_id: str, keys: tuple[str, ...]) -> str | None:
        raw = self.platform.raw_any_scope(memory_id)
        if raw is None:
            return None
        values = {**raw, "run_id": raw.get("run_id") or raw.get("session_id")}
        fixed = {k: v for k, v in self.platform.scope.items() if v != "*"}
        if any(values.get(k) != v for k, v in fixed.items()):
            return None
        scope = {k: str(values[k]) for k in keys if values.get(k)}
        if len(scope) != len(keys) or not keys:
            return None
        return Scope.of(scope).label


def _subscription(hook: dict[str, Any]) -> Subscription:
    types = hook.get("event_types")
    return Subscription(
        id=str(hook["webhook_id"]),
        url=str(hook.get("url") or ""),
        events=tuple(str(t) for t in types) if isinstance(types, list) else (),
        active=hook.get("is_active") is not False,
        project=str(hook["project"]) if hook.get("project") else None,
    )


__all__ = ["EVENT_TYPES", "PlatformWebhooks"]
