"""The ``memsync`` command line: thin click commands over the library.

Errors a user can cause print one line (``memsync: error: ...``) and exit non-zero; only bugs
show a traceback.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import click

from memsync import __version__
from memsync.config import Config, load_config
from memsync.errors import MemsyncError, ProviderUnavailable, StagingError
from memsync.files import write_private_text
from memsync.output import print_json, progress_bar, stderr
from memsync.paths import Paths, resolve_paths
from memsync.pmm import Format
from memsync.portability import Strategy, export_provider, import_file
from memsync.providers import Provider, build_provider
from memsync.staging import StagingStore
from memsync.starter import STARTER_CONFIG

log = logging.getLogger("memsync")


@dataclass
class App:
    """What every command needs: paths, and the config and staging store on first use."""

    paths: Paths
    _config: Config | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.paths.config_file)
        return self._config

    def provider(self, name: str) -> Provider:
        from memsync.scope_views import refuse_unscoped

        context = click.get_current_context(silent=True)
        command = (context.info_name if context else None) or "this command"
        refuse_unscoped(self.config, name, command)
        return build_provider(name, self.config)

    def store(self, *, create: bool = True) -> StagingStore:
        self.paths.ensure()
        return StagingStore.open(self.paths.database, create=create)


class MemsyncGroup(click.Group):
    """Turns MemsyncError into one line on stderr and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemsyncError as exc:
            stderr.print(f"memsync: error: {exc}", markup=False)
            sys.exit(exc.exit_code)
        except sqlite3.OperationalError as exc:
            # SQLite rolled the transaction back: the database is intact, the write is not.
            hint = (
                "free some space and run the command again"
                if "full" in str(exc) or "I/O" in str(exc)
                else "run the command again; if it persists, `memsync repair` rebuilds it"
            )
            stderr.print(f"memsync: error: staging database: {exc}; {hint}", markup=False)
            sys.exit(StagingError.exit_code)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            stderr.print(
                f"memsync: error: {exc.strerror}: {exc.filename or 'a file'}; nothing was "
                "replaced (files are written whole or not at all); free some space and retry",
                markup=False,
            )
            sys.exit(1)
        except KeyboardInterrupt:
            stderr.print("memsync: interrupted", markup=False)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)


pass_app = click.make_pass_decorator(App)


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


# --- init / check --------------------------------------------------------------------------


@main.command()
@click.option("--force", is_flag=True, help="Overwrite an existing config file.")
@pass_app
def init(app: App, force: bool) -> None:
    """Write a commented starter config (refuses to overwrite one without --force)."""
    path = app.paths.config_file
    if path.exists() and not force:
        raise MemsyncError(f"{path} already exists; edit it, or pass --force to replace it")
    write_private_text(path, STARTER_CONFIG)
    click.echo(f"wrote {path}\nedit it, then run `memsync check`")


@main.command()
@pass_app
def check(app: App) -> None:
    """Validate the config and reach each provider.

    Exits 0 when every provider answered, 1 when one did not (each is listed with why).
    """
    from memsync.scope_views import check_scoped
    from memsync.scopes import is_template

    config = app.config
    click.echo(f"config: {app.paths.config_file}: ok ({len(config.providers)} providers)")
    failures = 0
    for name, entry in config.providers.items():
        marker = " (active)" if name == config.sync.active else ""
        try:
            provider = build_provider(name, config)
            if is_template(entry):  # a template names no store of its own to open
                detail = check_scoped(config, name, provider) or ""
            else:
                with provider:
                    detail = check_scoped(config, name, provider) or provider.check()
        except ProviderUnavailable as exc:
            failures += 1
            click.echo(f"{name} [{entry.type}]{marker}: not available: {exc}")
            continue
        except MemsyncError as exc:
            failures += 1
            click.echo(f"{name} [{entry.type}]{marker}: FAILED: {exc}")
            continue
        click.echo(f"{name} [{entry.type}]{marker}: {detail}")
    if failures:
        raise SystemExit(1)


# --- export / import -----------------------------------------------------------------------


@main.command("export")
@click.option("--provider", "provider_name", required=True, help="Provider to export.")
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (atomically); standard output when omitted.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stderr.")
@pass_app
def export_command(
    app: App, provider_name: str, fmt: str, output: Path | None, as_json: bool
) -> None:
    """Export a provider's memories as a PMM file.

    \b
    Example:
      memsync export --provider mem0 -o alice.pmm.jsonl
    """
    with (
        app.provider(provider_name) as provider,
        progress_bar(f"exporting {provider_name}") as tick,
    ):
        report = export_provider(
            provider,
            output=output or sys.stdout,
            fmt=cast(Format, fmt),
            progress=tick,
        )
    if as_json:
        stderr.print_json(data=report.as_dict())
    else:
        where = f" to {output}" if output else ""
        stderr.print(f"exported {report.count} memories from {provider_name}{where}", markup=False)
        for skip in report.skipped:
            stderr.print(f"  skipped {skip.id}: {skip.reason}", markup=False)
    if not report.complete:
        raise MemsyncError(
            f"the listing of {provider_name} was partial ({report.partial_reason}); "
            "the export may miss memories — run it again"
        )


@main.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--into", "target", required=True, help="Provider to import into.")
@click.option(
    "--strategy",
    type=click.Choice(["skip_duplicates", "overwrite"]),
    default="skip_duplicates",
    show_default=True,
    help="skip_duplicates skips a record whose id or content already exists in the "
    "same scope; overwrite replaces memories with the same id.",
)
@click.option("--dry-run", is_flag=True, help="Report what would be imported; write nothing.")
@click.option(
    "--max-content-bytes",
    type=click.IntRange(min=1),
    help="Reject records with more content than this (default from [pmm]).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def import_command(
    app: App,
    file: Path,
    target: str,
    strategy: str,
    dry_run: bool,
    max_content_bytes: int | None,
    as_json: bool,
) -> None:
    """Import a PMM file (JSON or JSONL, gzipped or not) into a provider.

    Reports what was imported, skipped as duplicate, skipped as empty (by id) and rejected
    (with line numbers); exits 1 when any record was rejected or failed.

    \b
    Example:
      memsync import alice.pmm.jsonl --into mnem --dry-run
    """
    limit = max_content_bytes or app.config.pmm.max_content_bytes
    with app.provider(target) as provider, progress_bar(f"importing into {target}") as tick:
        report = import_file(
            file,
            provider,
            strategy=cast(Strategy, strategy),
            dry_run=dry_run,
            max_content_bytes=limit,
            progress=tick,
        )
    if as_json:
        print_json(report.as_dict())
    else:
        verb = "would import" if dry_run else "imported"
        click.echo(f"{verb} {report.imported} new, {report.updated} replaced into {target}")
        click.echo(f"skipped as duplicate: {len(report.skipped_duplicate)}")
        click.echo(
            f"skipped as empty: {len(report.skipped_empty)}"
            + (f" ({', '.join(report.skipped_empty[:20])})" if report.skipped_empty else "")
        )
        click.echo(f"rejected: {len(report.rejected)}")
        for rejected in report.rejected[:50]:
            click.echo(f"  {rejected.location}: {rejected.reason}")
        if len(report.rejected) > 50:
            click.echo(f"  ... and {len(report.rejected) - 50} more (use --json for all)")
        for failure in report.failed[:50]:
            click.echo(f"  failed {failure['id']}: {failure['error']}")
    if not report.ok:
        raise SystemExit(1)


# --- status --------------------------------------------------------------------------------


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--scope", "scope", help="Only one scope's providers, e.g. user_id=alice.")
@pass_app
def status(app: App, as_json: bool, scope: str | None) -> None:
    """What memsync knows: config, staging database, each provider's mirror."""
    from memsync.scope_views import fold_scopes, only_scope
    from memsync.scopes import Scope
    from memsync.status import collect_status, render_status

    report = collect_status(app.paths)
    if scope is not None:
        only_scope(report, Scope.parse(scope))
    else:
        fold_scopes(report)
    if as_json:
        print_json(report)
    else:
        render_status(report)


@main.command()
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
    ([ui] listen), `memsync ui --url` prints its link.
    """
    from memsync.ui.address import DEFAULT_LISTEN, parse_listen, url_for
    from memsync.ui.auth import load_or_create_token
    from memsync.ui.server import UiServer

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
    click.echo(
        f"memsync status page on {server.base_url}\n"
        f"open it (the link carries the access token):\n    {server.url_with_token}\n"
        "Ctrl-C stops it"
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()


# The command modules add themselves to `main` when imported.
from memsync.cli import daemon, sync  # noqa: E402, F401
