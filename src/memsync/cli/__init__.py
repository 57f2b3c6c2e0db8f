"""The ``memsync`` command line: thin click commands over the library.

Errors a user can cause print one line (``memsync: error: ...``) and exit non-zero; only bugs
show a traceback. This module holds the group and its global options; each family of commands
lives in a module of its own (``cli/sync.py``, ``cli/status.py``...), added to the group here.

A command's module is imported when that command runs (``LazyCommands``): ``memsync sync``
does not import what ``daemon``, ``ui`` or ``migrate`` need, and ``memsync --version`` imports
none of them. ``bench_first_sync`` prints that start-up time.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path

import click

from memsync import __version__
from memsync.base.paths import resolve_paths
from memsync.cli.common import App, MemsyncGroup

log = logging.getLogger("memsync")

# Every command: its name, then the module of ``memsync.cli`` and the name it has there.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("onboarding", "init"),
    "check": ("onboarding", "check"),
    "export": ("portability", "export_command"),
    "import": ("portability", "import_command"),
    "restore": ("portability", "restore"),
    "migrate": ("portability", "migrate"),
    "status": ("status", "status"),
    "verify": ("status", "verify_command"),
    "log": ("status", "log_command"),
    "history": ("status", "history"),
    "sync": ("sync", "sync"),
    "switch": ("sync", "switch"),
    "conflicts": ("sync", "conflicts"),
    "resolve": ("sync", "resolve"),
    "repair": ("sync", "repair"),
    "daemon": ("daemon", "daemon"),
    "backup": ("daemon", "backup"),
    "service": ("daemon", "service"),
    "ui": ("ui", "ui"),
    "mcp": ("mcp", "mcp"),
}


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands, each imported from its module the first time it is looked up.

    Listing the names (``--help``'s order, a test's set) imports nothing; ``commands[name]``
    (what click's ``get_command`` does) imports that command's module alone.
    """

    def __init__(self, where: dict[str, tuple[str, str]]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, attribute = self._where[name]
            command = getattr(importlib.import_module(f"memsync.cli.{module}"), attribute)
            assert isinstance(command, click.Command) and command.name == name, (name, command)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._where.setdefault(name, ("", ""))

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


@click.group(
    cls=MemsyncGroup,
    commands=LazyCommands(COMMANDS),
    context_settings={"help_option_names": ["-h", "--help"]},
)
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
