"""Moving memories in and out: export, import, restore (a backup, or a past state) and migrate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import click

from memsync.base.errors import MemsyncError
from memsync.base.output import print_json, progress_bar, stderr
from memsync.base.pmm import Format
from memsync.base.records import Record
from memsync.cli.common import App, pass_app
from memsync.orchestration.migrate import migrate as run_migration
from memsync.orchestration.portability import Strategy, export_at, export_provider, import_into


@click.command("export")
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


@click.command("import")
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
    (with line numbers); exits 1 when any record was rejected or failed. Into a provider
    synced per scope (a team), each record goes to the scope its scope_key names.

    \b
    Example:
      memsync import alice.pmm.jsonl --into mnem --dry-run
    """
    limit = max_content_bytes or app.config.pmm.max_content_bytes
    with progress_bar(f"importing into {target}") as tick:
        report = import_into(
            file,
            app.config,
            target,
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


@click.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--into", "target", help="With FILE: the provider to restore the backup into.")
@click.option(
    "--strategy",
    type=click.Choice(["skip_duplicates", "overwrite"]),
    default="skip_duplicates",
    show_default=True,
)
@click.option("--provider", "provider_name", help="Without FILE: the provider to reconstruct.")
@click.option("--at", "at", help="Without FILE: the time to reconstruct it at (ISO-8601).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Without FILE: where to write the PMM file (standard output by default).",
)
@pass_app
def restore(
    app: App,
    file: Path | None,
    target: str | None,
    strategy: str,
    provider_name: str | None,
    at: str | None,
    output: Path | None,
) -> None:
    """Restore a backup into a provider, or reconstruct a provider at a past time.

    A team's backup (a provider synced per scope) restores each memory into its own scope.

    \b
    Examples:
      memsync restore ~/.local/share/memsync/backups/mem0/2026-11-30T0900.pmm.jsonl --into mem0
      memsync restore --provider mem0 --at 2026-11-29T18:00:00Z -o mem0-yesterday.pmm.jsonl
    """
    if file is not None:
        if not target:
            raise MemsyncError("restore FILE needs --into NAME (the provider to restore into)")
        with progress_bar(f"restoring into {target}") as tick:
            report = import_into(
                file,
                app.config,
                target,
                strategy=cast(Strategy, strategy),
                max_content_bytes=app.config.pmm.max_content_bytes,
                progress=tick,
            )
        click.echo(
            f"restored {report.imported} new, {report.updated} replaced into {target}; "
            f"{len(report.skipped_duplicate)} already there, {len(report.skipped_empty)} empty, "
            f"{len(report.rejected)} rejected"
        )
        for rejected in report.rejected[:50]:
            click.echo(f"  {rejected.location}: {rejected.reason}")
        for failure in report.failed[:50]:
            click.echo(f"  failed {failure['id']}: {failure['error']}")
        raise SystemExit(0 if report.ok else 1)
    if not provider_name or not at:
        raise MemsyncError("restore needs FILE --into NAME, or --provider NAME --at TIME")
    with app.store() as store:
        count = export_at(store, provider_name, at, output or sys.stdout)
    stderr.print(f"{count} memories of {provider_name} as they stood at {at}", markup=False)


@click.command()
@click.option("--from", "source", required=True, help="The provider to copy from (e.g. mem0).")
@click.option("--to", "target", required=True, help="The provider to copy into (e.g. mnem).")
@click.option("--dry-run", is_flag=True, help="Report what would be imported; write nothing.")
@click.option(
    "--history/--no-history",
    default=None,
    help="Bring each memory's past from Mem0's history into the new mnem store (default: the "
    "target's import_history, on unless set off).",
)
@click.option(
    "--history-budget",
    type=click.FloatRange(min=1.0, max=1000.0),
    default=None,
    help="With history, the store at most this many times its size without it (default: the "
    "target's history_budget, 4).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def migrate(
    app: App,
    source: str,
    target: str,
    dry_run: bool,
    history: bool | None,
    history_budget: float | None,
    as_json: bool,
) -> None:
    """One-shot copy of every memory of one provider into another (ADR-0024 semantics).

    Pages through the whole source (no silent cap), skips empty memories and reports them by
    id, namespaces ids (`mem0:{id}` in mnem), keeps provenance, and imports nothing twice.
    A mnem target that does not exist yet is made when its provider has `create = true`.
    Into a new mnem store (no commit yet) each memory's past comes along from Mem0's history,
    every version at its own time, unless --no-history (docs/migrating-from-mem0.md).
    Exits 1 when the source listing was partial or a write failed.

    \b
    Example:
      memsync migrate --from mem0 --to mnem --dry-run
    """
    gone = _seen_deleted(app, source)
    with progress_bar(f"migrating {source} -> {target}"):
        report = run_migration(
            app.provider(source),
            app.provider(target),
            dry_run=dry_run,
            history=history,
            history_budget=history_budget,
            gone=gone,
        )
    if as_json:
        print_json(report.as_dict())
    else:
        verb = "would import" if dry_run else "imported"
        count = report.planned if dry_run else report.imported
        click.echo(
            f"{source} -> {target}: listed {report.listed}, {verb} {count}, "
            f"{report.already_present} already there, {len(report.skipped)} skipped, "
            f"{len(report.failed)} failed"
        )
        for skip in report.skipped[:50]:
            click.echo(f"  skipped {skip.id}: {skip.reason}")
        for failure in report.failed[:50]:
            click.echo(f"  failed {failure.id}: {failure.reason}")
        if not report.complete:
            click.echo(f"  partial: {report.partial_reason}")
        if report.history is not None:
            for line in report.history.lines():
                click.echo(line)
    raise SystemExit(0 if report.ok else 1)


def _seen_deleted(app: App, source: str) -> list[Record]:
    """SOURCE's memories memsync's journal saw before they were deleted there (none without a
    staging database yet): where a deleted memory's past belongs."""
    if not app.paths.database.exists():
        return []
    with app.store(create=False) as store:
        return store.journal.last_seen(source)
