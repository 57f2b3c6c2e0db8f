"""The ``memsync`` command line: thin click commands over the library.

Errors a user can cause print one line (``memsync: error: ...``) and exit non-zero; only bugs
show a traceback. This module holds the group and its global options; each family of commands
lives in a module of its own (``cli/sync.py``, ``cli/status.py``...), added to the group here.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from memsync import __version__
from memsync.cli import daemon, onboarding, portability, status, sync, ui
from memsync.cli.common import App, MemsyncGroup
from memsync.paths import resolve_paths

log = logging.getLogger("memsync")


@click.group(cls=MemsyncGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file to use instead of the default (see `memsync status`).",
)
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.version_option(__version__, prog_name="memsync")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None, verbose: int) -> None:
    """Keep AI-agent memory stores (Mem0, mnem, Hindsight, Cognee, PMM files) in sync.

    \b
    Start here:
      memsync init          write a starter config
      memsync check         validate it and reach every provider
      memsync sync          run one sync cycle
      memsync status        what happened, what is pending
    """
    os.umask(0o077)  # everything memsync creates is private to its user
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    if verbose < 2:
        # Mem0 warns about optional extras (spaCy, fastembed) memsync never uses.
        logging.getLogger("mem0").setLevel(logging.ERROR)
    ctx.obj = App(resolve_paths(config_path))


for _command in (
    onboarding.init,
    onboarding.check,
    portability.export_command,
    portability.import_command,
    portability.restore,
    portability.migrate,
    status.status,
    status.verify_command,
    status.log_command,
    status.history,
    sync.sync,
    sync.switch,
    sync.conflicts,
    sync.resolve,
    sync.repair,
    daemon.daemon,
    daemon.backup,
    daemon.service,
    ui.ui,
):
    main.add_command(_command)
