"""Which Mem0 server this is: whether it knows ``infer`` and ``top_k``, told without writing.

memsync never lets a write trigger LLM extraction: creates send ``infer: false``. Servers from
before that field silently drop it and extract anyway, so before the first create the server
must prove it knows ``infer`` — from its OpenAPI schema, or, when that is hidden, from a probe
that cannot write (an invalid ``infer`` with no scope id: a server that knows the field answers
422 about it; one that does not answers 400 for the missing id). Unproven means no writes.
The same schema (or a ``top_k=1`` probe) proves ``top_k`` is honoured: a server that ignores it
returns its own default page, and a listing from it is never called complete. The schema also
says whether the server has ``GET /entities`` (since 2026-04) and ``POST /search``; without a
schema those stay unknown (None) and are found out by calling them.

The schema is read once a process (``KNOWN``), not once a cycle: a daemon's hinted cycles
would otherwise ask for it beside every listing (276 requests in five minutes at a thousand
users). What a server proved is forgotten, and read again by the next cycle, when a route
answers as if it changed (``forget``: ``/entities`` or ``/search`` gone, ``top_k`` ignored, a
create refused over ``infer``). A server that lacks any of these features is not remembered
at all but read again each cycle (through ``server_session``, once for every scope), so an
upgrade, which is what memsync tells its user to do, is seen at the next cycle.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import astuple, dataclass
from typing import Any

import httpx

from memsync.base.errors import AuthError, ProviderError, TransientProviderError
from memsync.providers.http.client import HttpClient

log = logging.getLogger("memsync.mem0")


@dataclass(frozen=True)
class ServerFeatures:
    """What the server proved it supports; None when it could not be told."""

    infer: bool | None
    top_k: bool | None
    how: str
    show_expired: bool | None = None  # lists expired memories when asked (since 2026-06)
    entities: bool | None = None  # GET /entities (since 2026-04)
    search: bool | None = None  # POST /search

    @property
    def current(self) -> bool:
        """Whether the server proved every feature memsync asks about (a current release)."""
        return all(value is True for value in astuple(self) if not isinstance(value, str))


class KnownServers:
    """What each server proved, for this process, by the key its provider gives (its URL, and
    the transport a test hands it); a current server's features are read once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[Hashable, ServerFeatures] = {}

    def features(self, key: Hashable, load: Callable[[], ServerFeatures]) -> ServerFeatures:
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        features = load()
        if features.current:
            with self._lock:
                self._known[key] = features
        return features

    def forget(self, key: Hashable, why: str) -> None:
        """A route answered as if the server changed: read its features again next time."""
        with self._lock:
            forgotten = self._known.pop(key, None)
        if forgotten is not None:
            log.info("%s; its features are read again", why)

    def clear(self) -> None:
        with self._lock:
            self._known.clear()


KNOWN = KnownServers()  # this process's


def features_from_openapi(http: HttpClient) -> ServerFeatures | None:
    """What the server's OpenAPI schema says it supports; None when it shows no schema."""
    try:
        doc = http.get("/openapi.json")
    except (TransientProviderError, AuthError):
        raise
    except ProviderError:  # hidden (404) or refused: fall back to probing
        return None
    if not isinstance(doc, dict):
        return None
    routes = doc.get("paths")
    if not isinstance(routes, dict):
        return None
    paths = routes.get("/memories", {})
    if not isinstance(paths, dict) or "post" not in paths:
        return None
    try:
        body = paths["post"]["requestBody"]["content"]["application/json"]["schema"]
        create = _resolve(doc, body)
    except (KeyError, TypeError):
        return None
    infer = "infer" in (create.get("properties") or {})
    parameters = paths.get("get", {}).get("parameters") or []
    named = {p.get("name") for p in parameters if isinstance(p, dict)}
    return ServerFeatures(
        infer=infer,
        top_k="top_k" in named,
        how="its OpenAPI schema",
        show_expired="show_expired" in named,
        entities="get" in (routes.get("/entities") or {}),
        search="post" in (routes.get("/search") or {}),
    )


def features_from_probes(http: HttpClient, get_all: Callable[[int], list[Any]]) -> ServerFeatures:
    """What probes that cannot write show the server supports."""
    probe = http.request(
        "POST",
        "/memories",
        json={"messages": [], "infer": "memsync-probe"},
        idempotent=True,
        accept=(400, 422),  # cannot write: no scope id, no messages
    )
    infer: bool | None = None
    if probe.status_code == 422:
        infer = _complains_about(probe, "infer")
    elif probe.status_code == 400:
        infer = False
    sample = get_all(1)
    return ServerFeatures(infer=infer, top_k=len(sample) <= 1, how="probing the server")


def _resolve(doc: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow one local ``$ref`` (FastAPI puts request models under components/schemas)."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part]
    if not isinstance(node, Mapping):
        raise TypeError(ref)
    return node


def _complains_about(response: httpx.Response, field: str) -> bool:
    """Whether a FastAPI 422 names ``field`` among the invalid parts of the body."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return False
    return isinstance(detail, list) and any(
        isinstance(e, dict) and field in (e.get("loc") or []) for e in detail
    )
