"""The ``memsync`` command line: thin click commands over the library.

Errors a user can cause print one line (``memsync: error: ...``) and exit non-zero; only bugs
show a traceback. This module holds the group and its global options; each family of commands
lives in a module of its own (``cli/sync.py``, ``cli/status.py``...), named to the group here.

The group is click's lazy group ("Lazily Loading Subcommands" in click's docs): a command's
module is imported when that command runs, so command modules import the library at the top
and ``memsync sync`` does not import what ``daemon``, ``ui`` or ``migrate`` need. ``memsync
--help`` lists each command from the summary recorded here, so it imports none of them, and
``memsync --version`` neither. ``bench_first_sync`` prints that start-up time.
"""

from __future__ import annotations

import errno
import importlib
import logging
import os
import sqlite3
import sys
from gettext import gettext
from pathlib import Path
from typing import Any, NamedTuple

import click

from memsync import __version__
from memsync.base import output
from memsync.base.errors import MemsyncError, StagingError
from memsync.base.paths import resolve_paths

log = logging.getLogger("memsync")


class LazyCommand(NamedTuple):
    """Where a command is defined, and the summary ``memsync --help`` lists it with."""

    module: str  # a module of ``memsync.cli``
    attribute: str  # the command's name in it
    summary: str  # the first paragraph of its docstring (tests/test_cli_structure.py checks)


COMMANDS: dict[str, LazyCommand] = {
    "init": LazyCommand(
        "onboarding",
        "init",
        "Write a commented starter config (refuses to overwrite one without --force).",
    ),
    "check": LazyCommand("onboarding", "check", "Validate the config and reach each provider."),
    "export": LazyCommand(
        "portability", "export_command", "Export a provider's memories as a PMM file."
    ),
    "import": LazyCommand(
        "portability",
        "import_command",
        "Import a PMM file (JSON or JSONL, gzipped or not) into a provider.",
    ),
    "restore": LazyCommand(
        "portability",
        "restore",
        "Restore a backup into a provider, or reconstruct a provider at a past time.",
    ),
    "migrate": LazyCommand(
        "portability",
        "migrate",
        "One-shot copy of every memory of one provider into another (ADR-0024 semantics).",
    ),
    "status": LazyCommand(
        "status",
        "status",
        "What memsync knows: config, staging database, each provider's mirror.",
    ),
    "verify": LazyCommand(
        "status",
        "verify_command",
        "Prove providers A and B hold the same memories (text and user metadata, in scope).",
    ),
    "log": LazyCommand(
        "status",
        "log_command",
        "The change journal: what memsync saw added, changed, removed and wrote.",
    ),
    "history": LazyCommand(
        "status",
        "history",
        "Every version of one memory seen in any provider (MEMORY: a memory or provider id).",
    ),
    "sync": LazyCommand("sync", "sync", "Run one sync cycle: mirror, plan, replay."),
    "switch": LazyCommand("sync", "switch", "Make NAME the active backend (re-centre the star)."),
    "conflicts": LazyCommand(
        "sync",
        "conflicts",
        "List conflicts: memories changed on two sides since the last sync.",
    ),
    "resolve": LazyCommand(
        "sync",
        "resolve",
        "Settle a conflict: keep NAME's version everywhere (the other stays in the journal).",
    ),
    "repair": LazyCommand(
        "sync",
        "repair",
        "Rebuild the staging database from the providers (after corruption or loss).",
    ),
    "daemon": LazyCommand(
        "daemon",
        "daemon",
        "Run in the foreground: sync every [sync] interval, back up every [backup] interval.",
    ),
    "backup": LazyCommand(
        "backup", "backup", "Take a PMM backup of each provider's mirrored memories now."
    ),
    "service": LazyCommand(
        "service",
        "service",
        "Install, remove or inspect the systemd user service that runs `memsync daemon`.",
    ),
    "ui": LazyCommand(
        "ui",
        "ui",
        "Serve the status page (overview, history, conflicts, cutover) until Ctrl-C.",
    ),
    "mcp": LazyCommand(
        "mcp",
        "mcp",
        "Serve a mnem store to an agent over MCP (stdio): mnem-mcp's tools, never locked out.",
    ),
    "webhook": LazyCommand(
        "webhook",
        "webhook",
        "Register, list or remove the Platform's webhook that sends its changes to the daemon.",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported from their modules on first use (click's
    documented lazy group), listed in ``--help`` by their recorded summaries."""

    def __init__(self, *args: Any, lazy_subcommands: dict[str, LazyCommand], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = lazy_subcommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy_subcommands])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy_subcommands:
            return super().get_command(ctx, cmd_name)
        where = self.lazy_subcommands[cmd_name]
        module = importlib.import_module(f"memsync.cli.{where.module}")
        command = getattr(module, where.attribute)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise ValueError(f"memsync.cli.{where.module}.{where.attribute} is not {cmd_name!r}")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's Commands section, each lazy command shortened from its summary as click
        shortens a docstring (a stand-in command's ``get_short_help_str``): nothing imported."""
        commands = [(name, self._stand_in(ctx, name)) for name in self.list_commands(ctx)]
        shown = [(name, command) for name, command in commands if command and not command.hidden]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)
        with formatter.section(gettext("Commands")):
            formatter.write_dl(
                [(name, command.get_short_help_str(limit)) for name, command in shown]
            )

    def _stand_in(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_subcommands:
            return click.Command(name, help=self.lazy_subcommands[name].summary)
        return super().get_command(ctx, name)


class MemsyncGroup(LazyGroup):
    """memsync's group: lazy, and turning a MemsyncError into one line on stderr and its exit
    code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemsyncError as exc:
            _say(f"memsync: error: {exc}")
            sys.exit(exc.exit_code)
        except sqlite3.OperationalError as exc:
            # SQLite rolled the transaction back: the database is intact, the write is not.
            hint = (
                "free some space and run the command again"
                if "full" in str(exc) or "I/O" in str(exc)
                else "run the command again; if it persists, `memsync repair` rebuilds it"
            )
            _say(f"memsync: error: staging database: {exc}; {hint}")
            sys.exit(StagingError.exit_code)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            _say(
                f"memsync: error: {exc.strerror}: {exc.filename or 'a file'}; nothing was "
                "replaced (files are written whole or not at all); free some space and retry",
            )
            sys.exit(1)
        except KeyboardInterrupt:
            _say("memsync: interrupted")
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)


def _say(message: str) -> None:
    """One line on stderr, as every error is printed (rich is imported only when one is)."""
    output.stderr.print(message, markup=False)


@click.group(
    cls=MemsyncGroup,
    lazy_subcommands=COMMANDS,
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
    ctx.obj = resolve_paths(config_path)  # a command's App is made from them (cli/common.py)
