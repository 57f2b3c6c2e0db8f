"""One request to the status page: access checks, routing, and the response with its headers.

Access is the token (or its cookie), the CSRF token for a change, and a loopback host name;
a user's error comes back as one plain sentence.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.memory import give_back
from memsync.config.address import is_loopback
from memsync.orchestration.ui.api import GET_API, POST_API
from memsync.orchestration.ui.auth import same
from memsync.staging import StagingStore

if TYPE_CHECKING:
    from memsync.orchestration.ui.server import UiServer

log = logging.getLogger("memsync.ui")

PAGES = ("/", "/history", "/conflicts", "/memory", "/cutover")
METRICS_PATH = "/metrics"  # Prometheus's text format; the page's token or the metrics token
ASSETS = {"/static/app.css": "text/css", "/static/app.js": "text/javascript"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
IDLE_TIMEOUT = 120.0  # seconds a connection may sit idle between requests
MAX_BODY = 65536  # bytes of a POST body kept; a longer one is refused
DRAIN_LIMIT = 1 << 20  # a body up to this long is read and dropped, so its connection stays usable


class Handler(BaseHTTPRequestHandler):
    server: UiServer
    server_version = "memsync-ui"
    sys_version = ""
    # Keep-alive, as browsers expect (every response says its length); an idle connection
    # is closed after IDLE_TIMEOUT, and at once when the server stops.
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT
    body_read = False  # whether this POST's body was read whole
    raw_body = b""  # this POST's body, read before anything is decided about it
    body_too_long = False  # past MAX_BODY: read and dropped, and refused

    def do_GET(self) -> None:
        with self.server.answering(self.connection):
            self._get()
        give_back()  # a look over thousands of scopes freed what it read
        self.close_connection = self.close_connection or self.server.stopping.is_set()

    def do_POST(self) -> None:
        self._read_body()
        with self.server.answering(self.connection):
            self._post()
        # A body left unread would be taken for the next request on this connection.
        self.close_connection = (
            self.close_connection or not self.body_read or self.server.stopping.is_set()
        )

    # routing -------------------------------------------------------------------------------

    def _get(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if not self._host_allowed():
            return
        given = query["token"][0] if query.get("token") else None
        if given is not None and url.path in PAGES:
            if not same(given, self.server.token):
                self._forbidden("this link's token is wrong; open the URL `memsync ui` prints")
                return
            rest = urlencode([(k, v) for k, v in parse_qsl(url.query) if k != "token"])
            self._login_redirect(url.path + (f"?{rest}" if rest else ""))
            return
        if url.path == METRICS_PATH and (self._authenticated() or self._scraper()):
            body, content_type = self.server.metrics.render(self.headers.get("Accept"))
            self._send(HTTPStatus.OK, content_type, body)
            return
        if not self._authenticated():
            self._forbidden("open the URL `memsync ui` prints (it carries the access token)")
            return
        if url.path in PAGES:
            self._send_shell()
        elif url.path in ASSETS:
            self._send_asset(url.path)
        elif url.path in GET_API:
            self._api(lambda: GET_API[url.path](self, query))
        else:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})

    def _post(self) -> None:
        url = urlsplit(self.path)
        if not self._host_allowed():
            return
        if not self._authenticated():
            self._forbidden("open the URL `memsync ui` prints (it carries the access token)")
            return
        if not same(self.headers.get("X-CSRF-Token"), self.server.csrf):
            self._send_json(
                HTTPStatus.FORBIDDEN,
                {"error": "refused: a change needs the page's CSRF token; reload the page"},
            )
            return
        origin = self.headers.get("Origin")
        if origin and urlsplit(origin).netloc != self.headers.get("Host"):
            self._send_json(HTTPStatus.FORBIDDEN, {"error": "refused: a request from another site"})
            return
        if url.path not in POST_API:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no such action: {url.path}"})
            return
        body = self._json_body()
        if body is None:
            return
        self._api(lambda: POST_API[url.path](self, body))

    # access --------------------------------------------------------------------------------

    def _host_allowed(self) -> bool:
        """On loopback, only loopback host names (a rebound DNS name never reaches the page)."""
        if not self.server.loopback:
            return True
        host = urlsplit(f"//{self.headers.get('Host', '')}").hostname or ""
        if is_loopback(host):
            return True
        self._forbidden("the status page answers on its loopback address only")
        return False

    def _authenticated(self) -> bool:
        header = self.headers.get("Authorization", "")
        if header.lower().startswith("token ") and same(header[6:].strip(), self.server.token):
            return True
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        morsel = cookie.get(self.server.cookie_name)
        return morsel is not None and same(morsel.value, self.server.token)

    def _scraper(self) -> bool:
        """The metrics token, as Prometheus sends it (``Authorization: Bearer ...``)."""
        scheme, _, given = self.headers.get("Authorization", "").partition(" ")
        return scheme.lower() in ("bearer", "token") and same(
            given.strip(), self.server.metrics_token
        )

    def _login_redirect(self, path: str) -> None:
        """Trade the URL's token for a cookie, and drop it from the address bar."""
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header(
            "Set-Cookie",
            f"{self.server.cookie_name}={self.server.token}; Path=/; HttpOnly; SameSite=Strict",
        )
        self.send_header("Location", path)
        self.send_header("Content-Length", "0")
        self._common_headers()
        self.end_headers()

    def _forbidden(self, why: str) -> None:
        page = (
            "<!doctype html><meta charset=utf-8><title>memsync: no access</title>"
            f"<p>403: {_escape(why)}.</p>"
        ).encode()
        self._send(HTTPStatus.FORBIDDEN, "text/html; charset=utf-8", page)

    # responses -----------------------------------------------------------------------------

    def _api(self, produce: Callable[[], Any]) -> None:
        try:
            self._send_json(HTTPStatus.OK, produce())
        except LockHeld as exc:
            self._send_json(HTTPStatus.CONFLICT, {"error": f"busy: {exc}", "busy": True})
        except MemsyncError as exc:
            self._send_json(HTTPStatus.CONFLICT, {"error": str(exc)})
        except sqlite3.Error as exc:
            self._send_json(
                HTTPStatus.SERVICE_UNAVAILABLE,
                {"error": f"staging database: {exc}; try again in a moment"},
            )
        except Exception:
            log.exception("status page: %s %s failed", self.command, self.path)
            self._send_json(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                {"error": "memsync hit an internal error; the details are in its log"},
            )

    def _read_body(self) -> None:
        """Read the body first, whatever the answer will be: a refused POST whose body
        stayed in the socket would be taken for the next request, and closing over unread
        bytes resets the connection under the answer. A body past MAX_BODY is read and
        dropped (refused as too long); one past DRAIN_LIMIT is left, and its connection
        closes."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        self.body_read = 0 <= length <= DRAIN_LIMIT
        self.body_too_long = not 0 <= length <= MAX_BODY
        self.raw_body = b""
        remaining = length if self.body_read else 0
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, MAX_BODY))
            if not chunk:
                self.body_read = False  # the client hung up mid-body
                break
            remaining -= len(chunk)
            if not self.body_too_long:
                self.raw_body += chunk

    def _json_body(self) -> dict[str, Any] | None:
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self._send_json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send JSON"})
            return None
        if self.body_too_long:
            self._send_json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "the body is too long"})
            return None
        try:
            body = json.loads(self.raw_body or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(HTTPStatus.BAD_REQUEST, {"error": "the body is not a JSON object"})
            return None
        return body

    def _send_shell(self) -> None:
        html = _asset("index.html").replace("{{csrf}}", self.server.csrf)
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", html.encode())

    def _send_asset(self, path: str) -> None:
        name = path.rsplit("/", 1)[1]
        self._send(HTTPStatus.OK, f"{ASSETS[path]}; charset=utf-8", _asset(name).encode())

    def _send_json(self, status: HTTPStatus, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False, default=str).encode()
        self._send(status, "application/json; charset=utf-8", body)

    def _send(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.command == "POST" and not self.body_read:
            # Refused before its body was read: this connection closes after the answer
            # (do_POST), and the client must know, or it sends its next request into it.
            self.send_header("Connection", "close")
        self._common_headers()
        self.end_headers()
        self.wfile.write(body)

    def _common_headers(self) -> None:
        if self.command == "POST" and not self.body_read:
            # A body too long to read: this connection closes after the answer; say so.
            self.send_header("Connection", "close")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")

    def log_message(self, format: str, *args: Any) -> None:
        # The query string can carry the token: log the method and path only.
        log.debug("%s %s", self.command, urlsplit(self.path).path)

    # the API -------------------------------------------------------------------------------

    def store(self) -> StagingStore:
        return StagingStore.open(self.server.paths.database, create=False, reading=True)


def _asset(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
