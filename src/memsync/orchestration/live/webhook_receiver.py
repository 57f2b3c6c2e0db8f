"""The daemon's webhook listener: one route, ``POST /hooks/<provider>/<secret>``, nothing else.

A listener of its own (``[webhooks] listen``), not the status page's server: the store calls it
from the internet through the user's proxy or tunnel, and exposing the page's server for that
would expose its API (resolve, verify) behind its token alone and defeat its loopback host
check; here a wrong path or secret is a 404 like any unknown path, with nothing behind it.
The Platform documents no signature, so the secret is in the URL (256 random bits per
provider, in a private file, compared in constant time); requests are never logged (the URL
holds it). An event is answered 204 at once and handled later by the live loop, as the Platform
asks ("process events asynchronously"): the listener only reads and queues.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.config.address import url_for
from memsync.providers.pushed import NotAnEvent, PushedChanges, PushedEvent

log = logging.getLogger("memsync.webhooks")

MAX_BODY = 65536  # an event is a few hundred bytes; a longer body is refused
DRAIN_LIMIT = 1 << 20  # ...read and dropped up to this size, so its sender hears why
IDLE_TIMEOUT = 30.0


class WebhookReceiver(ThreadingHTTPServer):
    """Receives the events of the providers ``routes`` names (provider -> its pushed changes),
    each at the secret ``secret(provider)`` gives (None: not registered, 404)."""

    daemon_threads = True

    def __init__(
        self,
        host: str,
        port: int,
        *,
        routes: dict[str, PushedChanges],
        secret: Callable[[str], str | None],
        on_event: Callable[[str, PushedEvent], None],
        on_refused: Callable[[str | None, str], None],
    ) -> None:
        self.routes = routes
        self.secret = secret
        self.on_event = on_event
        self.on_refused = on_refused
        try:
            super().__init__((host, port), _Handler)
        except OSError as exc:
            raise MemsyncError(
                f"cannot listen for webhooks on {host}:{port} ({exc.strerror or exc}); pick "
                "another [webhooks] listen address"
            ) from None
        self.host = host
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return url_for(self.host, int(self.server_address[1]))

    def start_in_thread(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name="webhooks", daemon=True)
        self._thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Never the default traceback on stderr: one line, without the request."""
        log.warning("webhook listener: a request failed unexpectedly; the probe covers it")

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    server: WebhookReceiver
    server_version = "memsync"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        """Never: the path holds the secret."""

    def do_POST(self) -> None:
        provider = self._provider()
        if provider is None:
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            if 0 < length <= DRAIN_LIMIT:
                self.rfile.read(length)  # read and dropped, so the client hears the answer
            self._answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, provider, "too long")
            return
        body = self.rfile.read(length)
        try:
            event = self.server.routes[provider].parse(body)
        except NotAnEvent as exc:
            self._answer(HTTPStatus.BAD_REQUEST, provider, str(exc))
            return
        self.server.on_event(provider, event)  # held (a queue's append) before the 204 says so
        self._answer(HTTPStatus.NO_CONTENT)

    def do_GET(self) -> None:
        self._answer(HTTPStatus.NOT_FOUND, None, "not a webhook route")

    do_PUT = do_DELETE = do_HEAD = do_PATCH = do_GET

    def _provider(self) -> str | None:
        """The provider this POST is for, when its path and secret are right; else a 404."""
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        if len(parts) != 3 or parts[0] != "hooks" or parts[1] not in self.server.routes:
            self._answer(HTTPStatus.NOT_FOUND, None, "not a webhook route")
            return None
        expected = self.server.secret(parts[1])
        if expected is None or not hmac.compare_digest(parts[2].encode(), expected.encode()):
            self._answer(HTTPStatus.NOT_FOUND, parts[1], "a wrong secret")
            return None
        return parts[1]

    def _answer(
        self, status: HTTPStatus, provider: str | None = None, refused: str | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        if refused is not None:  # an unread body must not become the next request
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if refused is not None:
            self.server.on_refused(provider, refused)


__all__ = ["MAX_BODY", "WebhookReceiver"]
