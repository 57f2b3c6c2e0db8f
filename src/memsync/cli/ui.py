"""`memsync ui`: serve the status page, or print the daemon's link to it."""

from __future__ import annotations

import logging
import os
import signal
import sys

import click

from memsync.base.errors import MemsyncError
from memsync.base.signal_inbox import SignalInbox, blocked_in_new_threads
from memsync.cli.common import App, pass_app
from memsync.config.address import DEFAULT_LISTEN, parse_listen, url_for
from memsync.orchestration.ui.auth import load_or_create_token
from memsync.orchestration.ui.server import UiServer

STOPS = (signal.SIGINT, signal.SIGTERM)


@click.command()
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Where to serve the page (default: [ui] listen, else 127.0.0.1:8767).",
)
@click.option("--url", "url_only", is_flag=True, help="Print the link only (the daemon serves).")
@pass_app
def ui(app: App, listen: str | None, url_only: bool) -> None:
    """Serve the status page (overview, history, conflicts, cutover) until Ctrl-C.

    Loopback only unless [ui] allow_remote = true; opening it needs the token in the URL
    printed here (kept in the state directory, 0600). When the daemon serves the page
    ([ui] listen), `memsync ui --url` prints its link. Ctrl-C (SIGINT) stops it with exit
    130, SIGTERM with exit 0, even while a browser holds the page open.
    """
    try:
        settings = app.config.ui
    except MemsyncError:
        settings = None  # the page itself says what is wrong with the config
    address = listen or (settings.listen if settings else None) or DEFAULT_LISTEN
    try:
        host, port = parse_listen(address)
    except ValueError as exc:
        raise MemsyncError(f"--listen: {exc}") from None
    if url_only:
        click.echo(f"{url_for(host, port)}/?token={load_or_create_token(app.paths)}")
        return
    server = UiServer(app.paths, host, port, allow_remote=bool(settings and settings.allow_remote))
    # The page is served from a thread; the main thread only waits for a stop signal, so a
    # signal never lands inside the server's own code (KeyboardInterrupt mid-request).
    with SignalInbox(STOPS) as inbox:
        with blocked_in_new_threads(STOPS):
            server.start_in_thread()
        click.echo(
            f"memsync status page on {server.base_url}\n"
            f"open it (the link carries the access token):\n    {server.url_with_token}\n"
            "Ctrl-C stops it"
        )
        received: list[signal.Signals] = []
        while not received:
            received = inbox.wait(None)
        finished = server.stop()
    code = 130 if received[0] == signal.SIGINT else 0
    if not finished:
        # A request (a verify, a resolve's cycle) is still running: its work so far is
        # recorded, and waiting for it at interpreter exit could take minutes.
        logging.getLogger("memsync.ui").warning("a request was still running; exiting without it")
        logging.shutdown()
        sys.stdout.flush()
        os._exit(code)
    raise SystemExit(code)
