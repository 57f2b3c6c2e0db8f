"""Test doubles: in-process servers that follow a provider's documented HTTP contract.

``ASGIBridge`` serves an ASGI app to a *sync* ``httpx.Client`` (``httpx.ASGITransport`` is
async-only): each request runs the app to completion in a fresh event loop, honouring the
client's read timeout, so memsync's real request/response code runs without sockets.
``Faults`` is an ASGI middleware that makes a double misbehave on demand (429 with
Retry-After, 5xx, a stall past the timeout, a dropped connection, malformed or truncated JSON)
and records every request so tests can assert what was sent. A fault built with
``after_acting=True`` lets the double do the work first and then loses or spoils the answer
(the write happened; the client cannot know).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class DropConnection(Exception):
    """Raised by a double to close the connection without answering (a reset)."""


class ASGIBridge(httpx.BaseTransport):
    """A sync httpx transport that runs an ASGI app in-process, one event loop per request."""

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        self.app = app
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        timeout = (request.extensions.get("timeout") or {}).get("read")
        return anyio.run(self._serve, request, body, timeout)

    async def _serve(
        self, request: httpx.Request, body: bytes, timeout: float | None
    ) -> httpx.Response:
        url = request.url
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": self.client,
        }
        sent_body = False

        async def receive() -> Message:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await anyio.sleep_forever()
            return {"type": "http.disconnect"}  # pragma: no cover

        status: int | None = None
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []

        async def send(message: Message) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            with anyio.fail_after(timeout) if timeout else nullcontext():
                await self.app(scope, receive, send)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None
        except DropConnection:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        except Exception:
            if status is None:
                raise
        if status is None:
            raise httpx.RemoteProtocolError("the app sent no response", request=request)
        return httpx.Response(status, headers=headers, content=b"".join(chunks), request=request)


FaultKind = Literal["status", "stall", "reset", "malformed", "truncated"]


@dataclass
class Fault:
    """One way to misbehave. Build with the class methods."""

    kind: FaultKind
    status: int = 500
    retry_after: str | None = None
    seconds: float = 0.0
    after_acting: bool = False  # the double does the request's work, then the fault
    body: Any = None  # the error body; {"detail": "injected fault"} when None

    @classmethod
    def error(
        cls,
        status: int = 500,
        retry_after: str | None = None,
        body: Any = None,
        *,
        after_acting: bool = False,
    ) -> Fault:
        return cls(
            "status", status=status, retry_after=retry_after, body=body, after_acting=after_acting
        )

    @classmethod
    def bad_gateway(cls, code: str = "upstream_unavailable") -> Fault:
        """A proxy's 502 as hosted gateways send it: a code and a request id to quote."""
        return cls.error(
            502,
            body={"error": "Bad gateway", "code": code, "request_id": "req_0123456789abcdef"},
        )

    @classmethod
    def rate_limit(cls, retry_after: str | None = "1") -> Fault:
        return cls("status", status=429, retry_after=retry_after)

    @classmethod
    def stall(cls, seconds: float = 1.0, *, after_acting: bool = False) -> Fault:
        """Answer only after ``seconds``: past the client's timeout, this is a timeout."""
        return cls("stall", seconds=seconds, after_acting=after_acting)

    @classmethod
    def reset(cls, *, after_acting: bool = False) -> Fault:
        return cls("reset", after_acting=after_acting)

    @classmethod
    def malformed(cls) -> Fault:
        """200 with a JSON content type and a body that is not JSON."""
        return cls("malformed")

    @classmethod
    def truncated(cls) -> Fault:
        """The real answer, cut in half (a proxy that dropped the end)."""
        return cls("truncated")


@dataclass
class Seen:
    """A request as the double received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class _Plan:
    fault: Fault
    method: str | None
    path: str | None
    remaining: int
    match: Callable[[str, str], bool] | None = None


@dataclass
class Faults:
    """Planned misbehaviour plus a log of requests; wrap an app with ``Faults.wrap``."""

    plans: list[_Plan] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    # Seconds every request waits before it is served: a network round trip (or a server
    # that checks each key with bcrypt). Requests in flight at once wait at the same time.
    latency: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def inject(
        self,
        fault: Fault,
        *,
        method: str | None = None,
        path: str | None = None,
        times: int = 1,
        match: Callable[[str, str], bool] | None = None,
    ) -> None:
        """Misbehave on the next ``times`` requests matching method, path prefix and
        ``match(method, path)`` (asked only while the plan has faults left)."""
        self.plans.append(_Plan(fault, method, path, times, match))

    def clear(self) -> None:
        self.plans.clear()

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        return [
            s
            for s in self.seen
            if (method is None or s.method == method) and (path is None or s.path.startswith(path))
        ]

    def _take(self, method: str, path: str) -> Fault | None:
        with self._lock:  # clients may send from several threads at once
            return self._take_locked(method, path)

    def _take_locked(self, method: str, path: str) -> Fault | None:
        for plan in self.plans:
            if plan.remaining <= 0:
                continue
            if plan.method not in (None, method):
                continue
            if plan.path is not None and not path.startswith(plan.path):
                continue
            if plan.match is not None and not plan.match(method, path):
                continue
            plan.remaining -= 1
            return plan.fault
        return None

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            body = await _read_body(receive)
            self.seen.append(_seen(scope, body))
            fault = self._take(scope["method"], scope["path"])
            replay = _replay(body)
            if self.latency > 0:
                await anyio.sleep(self.latency)
            if fault is not None and fault.after_acting:
                await app(scope, replay, _discard)  # the work is done; its answer is lost
                replay = _replay(body)
                if fault.kind == "stall":
                    await anyio.sleep(fault.seconds)  # the client times out meanwhile
                    await _respond(send, 200, {"detail": "too late"})
                    return
            if fault is None:
                await app(scope, replay, send)
            elif fault.kind == "status":
                payload = fault.body if fault.body is not None else {"detail": "injected fault"}
                await _respond(send, fault.status, payload, fault.retry_after)
            elif fault.kind == "stall":
                await anyio.sleep(fault.seconds)
                await app(scope, replay, send)
            elif fault.kind == "reset":
                raise DropConnection
            elif fault.kind == "malformed":
                await _respond_raw(send, 200, b'{"results": [{"id": "abc", "memory": ')
            else:
                await _truncated(app, scope, replay, send)

        return middleware


async def _discard(message: Message) -> None:
    """An ASGI send that drops the answer."""


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    done = False

    async def receive() -> Message:
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        return {"type": "http.disconnect"}  # pragma: no cover

    return receive


def _seen(scope: Scope, body: bytes) -> Seen:
    from urllib.parse import parse_qs

    try:
        decoded: Any = json.loads(body) if body else None
    except ValueError:
        decoded = body
    return Seen(
        method=scope["method"],
        path=scope["path"],
        query=parse_qs(scope["query_string"].decode("latin-1")),
        headers={k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
        body=decoded,
    )


async def _respond(send: Send, status: int, payload: Any, retry_after: str | None = None) -> None:
    extra = [(b"retry-after", retry_after.encode())] if retry_after is not None else []
    await _respond_raw(send, status, json.dumps(payload).encode(), extra)


async def _respond_raw(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _truncated(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    started: Message = {}
    chunks: list[bytes] = []

    async def capture(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, capture)
    body = b"".join(chunks)
    await _respond_raw(send, started.get("status", 200), body[: max(1, len(body) // 2)])
