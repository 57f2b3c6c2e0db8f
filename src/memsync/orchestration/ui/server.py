"""The status page's HTTP server: Python's own threading http.server, no framework.

A handful of routes (five page paths that share one HTML shell, its two assets, a JSON API),
served to one person on loopback: the standard library does this with nothing to pin or
update. Every request is checked for the access token; every change (a POST) also for the
CSRF token. Each API call opens its own connection to the staging database, reads the config
afresh (so a reload or a broken edit shows at once) and answers JSON; any error a user can
cause comes back as one plain sentence, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.paths import Paths
from memsync.config import load_config
from memsync.config.address import check_exposure, is_loopback, url_for
from memsync.engine.conflicts import choose_winner
from memsync.engine.report import SyncOptions
from memsync.orchestration.runner import run_sync
from memsync.orchestration.status import cycle_history, page_status, scope_page
from memsync.orchestration.ui.auth import METRICS_TOKEN_FILE, csrf_token, load_or_create_token, same
from memsync.orchestration.ui.data import conflict_views, find_memories, memory_timeline
from memsync.orchestration.ui.metrics import Metrics
from memsync.orchestration.verify import verify_pair
from memsync.staging import StagingStore

log = logging.getLogger("memsync.ui")

PAGES = ("/", "/history", "/conflicts", "/memory", "/cutover")
METRICS_PATH = "/metrics"  # Prometheus's text format; the page's token or the metrics token
ASSETS = {"/static/app.css": "text/css", "/static/app.js": "text/javascript"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
RESOLVE_LOCK_WAIT = 30.0  # as `memsync resolve`: wait this long for a cycle already running
STOP_GRACE = 5.0  # seconds a stop waits for requests in flight (a verify, a resolve's cycle)
IDLE_TIMEOUT = 120.0  # seconds a connection may sit idle between requests
MAX_BODY = 65536  # bytes of a POST body kept; a longer one is refused
DRAIN_LIMIT = 1 << 20  # a body up to this long is read and dropped, so its connection stays usable


class UiServer(ThreadingHTTPServer):
    """Serves the status page for one memsync instance (its paths).

    A stop is prompt whatever the browsers do: connections they hold open (keep-alive, or
    opened ahead and never used) are shut down, and ``stop`` says whether a request was still
    running after its grace, so the caller can exit without waiting on it.
    """

    daemon_threads = True

    def __init__(
        self,
        paths: Paths,
        host: str,
        port: int,
        *,
        allow_remote: bool = False,
        metrics: Metrics | None = None,
    ) -> None:
        try:
            check_exposure(host, allow_remote=allow_remote)
        except ValueError as exc:
            raise MemsyncError(str(exc)) from None
        self.paths = paths
        self.metrics = metrics or Metrics(paths)  # the daemon passes the one its cycles feed
        self.metrics_token = load_or_create_token(paths, METRICS_TOKEN_FILE)
        self.lock_wait = RESOLVE_LOCK_WAIT
        self.stopping = threading.Event()  # a cycle the page started stops with the server
        self._connections: set[socket.socket] = set()  # open, idle or answering
        self._answering: set[socket.socket] = set()  # with a request in progress
        self._busy = threading.Condition()
        self.token = load_or_create_token(paths)
        self.csrf = csrf_token(self.token)
        self.loopback = is_loopback(host)
        self.address_family = _family(host)
        try:
            super().__init__((host, port), Handler)
        except OSError as exc:
            raise MemsyncError(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another address "
                "with --listen HOST:PORT (if the daemon serves the page, `memsync ui --url` "
                "prints its link)"
            ) from None
        self.cookie_name = f"memsync_ui_{self.server_address[1]}"

    @property
    def base_url(self) -> str:
        return url_for(str(self.server_address[0]), int(self.server_address[1]))

    @property
    def url_with_token(self) -> str:
        return f"{self.base_url}/?token={self.token}"

    def start_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="memsync-ui", daemon=True)
        thread.start()
        return thread

    def stop(self, grace: float = STOP_GRACE) -> bool:
        """Stop serving and drop every connection; False if a request still ran after GRACE.

        Call it from another thread than ``serve_forever``'s, once that runs (``shutdown``).
        """
        self.stopping.set()
        self.shutdown()
        self.server_close()
        with self._busy:
            for connection in self._connections - self._answering:
                with contextlib.suppress(OSError):  # the peer may have closed it already
                    connection.shutdown(socket.SHUT_RDWR)  # its thread sees EOF and ends
        return self.wait_answered(grace)

    def wait_answered(self, timeout: float) -> bool:
        """Wait up to TIMEOUT for the requests in progress; False if one still runs."""
        with self._busy:
            return self._busy.wait_for(lambda: not self._answering, timeout=timeout)

    # connections and requests, counted for the stop ---------------------------------------

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._busy:
            if self.stopping.is_set():
                self.shutdown_request(request)
                return
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._busy:
            self._connections.discard(request)
        super().shutdown_request(request)

    @contextlib.contextmanager
    def answering(self, connection: socket.socket) -> Iterator[None]:
        """While a request on CONNECTION is answered (a stop gives it its grace)."""
        with self._busy:
            self._answering.add(connection)
        try:
            yield
        finally:
            with self._busy:
                self._answering.discard(connection)
                self._busy.notify_all()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One log line, not a traceback on stderr (the daemon's log is one line an event)."""
        if self.stopping.is_set() or isinstance(sys.exc_info()[1], OSError):
            log.debug("status page: a connection ended early", exc_info=True)
        else:
            log.warning("status page: a request failed", exc_info=True)


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


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
        return StagingStore.open(self.server.paths.database, create=False)


def _status(handler: Handler, query: dict[str, list[str]]) -> dict[str, Any]:
    return page_status(handler.server.paths)


def _scopes(handler: Handler, query: dict[str, list[str]]) -> dict[str, Any]:
    """A page of one team provider's scopes: ?provider=NAME&offset=N&limit=N&attention=1."""
    provider = (query.get("provider") or [""])[0]
    if not provider:
        raise MemsyncError("/api/scopes needs ?provider=NAME")
    try:
        offset = int((query.get("offset") or ["0"])[0])
        limit = min(500, int((query.get("limit") or ["50"])[0]))
    except ValueError:
        raise MemsyncError("offset and limit are whole numbers") from None
    attention = (query.get("attention") or ["0"])[0] in ("1", "true")
    return scope_page(
        handler.server.paths, provider, offset=offset, limit=limit, attention=attention
    )


def _history(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return cycle_history(store)


def _conflicts(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return conflict_views(store)


def _search(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return find_memories(store, (query.get("q") or [""])[0])


def _timeline(handler: Handler, query: dict[str, list[str]]) -> list[dict[str, Any]]:
    with handler.store() as store:
        return memory_timeline(store, (query.get("id") or [""])[0])


def _resolve(handler: Handler, body: dict[str, Any]) -> dict[str, Any]:
    """What `memsync resolve ID --keep NAME` does: record the winner, then run a cycle."""
    paths = handler.server.paths
    conflict_id, keep = body.get("id"), body.get("keep")
    if not isinstance(conflict_id, int) or not isinstance(keep, str):
        raise MemsyncError("resolve needs a conflict id and the provider to keep")
    config = load_config(paths.config_file)
    with StagingStore.open(paths.database, create=False) as store:
        choose_winner(store, conflict_id, keep)
    try:
        report = run_sync(
            paths,
            config,
            SyncOptions(stop=handler.server.stopping),
            lock_wait=handler.server.lock_wait,
        )
    except LockHeld as exc:
        handler.server.metrics.cycle_not_run("busy")
        return {
            "message": f"conflict #{conflict_id}: keeping {keep}'s version; {exc}; the choice "
            "is recorded and the next cycle applies it",
            "exit_code": None,
            "busy": True,
        }
    handler.server.metrics.cycle_ended(report.run_id, per_scope=config.metrics.per_scope)
    return {
        "message": f"conflict #{conflict_id}: kept {keep}'s version",
        "exit_code": report.exit_code,
        "cycle": report.as_dict(),
    }


def _verify(handler: Handler, body: dict[str, Any]) -> dict[str, Any]:
    """What `memsync verify A B` does, its result kept for the readiness view."""
    a, b = body.get("a"), body.get("b")
    if not isinstance(a, str) or not isinstance(b, str):
        raise MemsyncError("verify needs two provider names")
    config = load_config(handler.server.paths.config_file)
    return verify_pair(config, handler.server.paths.database, a, b).as_dict()


GET_API: dict[str, Callable[[Handler, dict[str, list[str]]], Any]] = {
    "/api/status": _status,
    "/api/scopes": _scopes,
    "/api/history": _history,
    "/api/conflicts": _conflicts,
    "/api/memory/search": _search,
    "/api/memory/history": _timeline,
}
POST_API: dict[str, Callable[[Handler, dict[str, Any]], Any]] = {
    "/api/resolve": _resolve,
    "/api/verify": _verify,
}


def _asset(name: str) -> str:
    return resources.files("memsync.orchestration.ui").joinpath("static", name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
