"""The status page's HTTP server: Python's own threading http.server, no framework.

A handful of routes (five page paths that share one HTML shell, its two assets, a JSON API),
served to one person on loopback: the standard library does this with nothing to pin or
update. Every request is checked for the access token; every change (a POST) also for the
CSRF token. Each API call opens its own connection to the staging database, reads the config
afresh (so a reload or a broken edit shows at once) and answers JSON; any error a user can
cause comes back as one plain sentence, never a traceback.

This module holds the server: its connections and a prompt stop; ``handler`` answers a
request (access, routing, responses) and ``api`` holds the JSON routes.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths
from memsync.config.address import check_exposure, is_loopback, url_for
from memsync.orchestration.ui.auth import METRICS_TOKEN_FILE, csrf_token, load_or_create_token
from memsync.orchestration.ui.handler import Handler
from memsync.orchestration.ui.metrics import Metrics

log = logging.getLogger("memsync.ui")

RESOLVE_LOCK_WAIT = 30.0  # as `memsync resolve`: wait this long for a cycle already running
STOP_GRACE = 5.0  # seconds a stop waits for requests in flight (a verify, a resolve's cycle)


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
