"""`memsync daemon`: sync and back up on their intervals, in the foreground, under systemd."""

from __future__ import annotations

import logging
import os
import sys

import click

from memsync.base.errors import MemsyncError
from memsync.cli.common import App, pass_app
from memsync.orchestration.daemon.logging import setup_daemon_logging
from memsync.orchestration.daemon.service import run_daemon

log = logging.getLogger("memsync.daemon")


@click.command()
@pass_app
def daemon(app: App) -> None:
    """Run in the foreground: sync every [sync] interval, back up every [backup] interval.

    Meant to run under systemd (`memsync service install --enable`), which it tells when it
    is ready, what it last did, and that it is alive. Reloads the config when the file changes
    or on SIGHUP (a broken config is logged and the running one kept); SIGTERM finishes the
    action in flight and exits. Logs one line an event on stderr.

    Exits 2 when the config is invalid at start, 7 when another daemon is running.
    """
    level = min(logging.INFO, logging.getLogger().getEffectiveLevel())
    redactor = setup_daemon_logging(level)
    try:
        result = run_daemon(app.paths, redactor=redactor)
    except MemsyncError as exc:
        log.error("%s", exc)
        raise SystemExit(exc.exit_code) from None
    if result.jobs_left_running:
        # A job thread ignored the stop: exit now rather than wait on it at interpreter exit.
        logging.shutdown()
        sys.stderr.flush()
        os._exit(result.exit_code)
    raise SystemExit(result.exit_code)
