"""Sync commands: sync, switch, verify, conflicts, resolve, log, history, restore, repair."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from memsync.cli import App, main, pass_app
from memsync.config import parse_config
from memsync.config_edit import set_active
from memsync.errors import MemsyncError
from memsync.files import write_private_text
from memsync.output import print_json, print_table, progress_bar, stderr
from memsync.pmm import Header, write_pmm_file, write_pmm_stream
from memsync.portability import import_file
from memsync.records import utc_now_iso
from memsync.staging.aside import set_aside
from memsync.sync.conflicts import choose_winner, list_conflicts
from memsync.sync.engine import CycleReport, SyncOptions
from memsync.sync.journal import log_entries, memory_history, records_at
from memsync.sync.runner import run_sync
from memsync.sync.scoped import ScopedCycleReport
from memsync.sync.verify import verify_and_record


def _print_cycle(report: CycleReport) -> None:
    verb = "would write" if report.dry_run else "wrote"
    scoped = report if isinstance(report, ScopedCycleReport) else None
    hidden = scoped.quiet_names() if scoped else set()
    for name, outcome in report.providers.items():
        if outcome.state == "skipped" or name in hidden:
            continue
        mirror = outcome.mirror
        line = f"{name}: {outcome.state}"
        if mirror:
            line += (
                f", listed {mirror.listed} (+{mirror.added} ~{mirror.changed} -{mirror.removed})"
            )
            if mirror.skipped:
                line += f", skipped {len(mirror.skipped)}"
        if outcome.adopted:
            line += f", {'would adopt' if report.dry_run else 'adopted'} {outcome.adopted}"
        if outcome.written or outcome.failed:
            line += f", {verb} {outcome.written}"
            if outcome.failed:
                line += f", {outcome.failed} failed"
        if outcome.error:
            line += f": {outcome.error}"
        click.echo(line)
        if mirror and mirror.partial_reason:
            click.echo(f"  partial: {mirror.partial_reason} (no deletes inferred)")
        if mirror and mirror.refused:
            click.echo(f"  REFUSED: {mirror.refused}")
        for skip in (mirror.skipped if mirror else [])[:20]:
            click.echo(f"  skipped {skip.id}: {skip.reason}")
    if report.dry_run:
        click.echo(f"plan: {report.planned_total} action(s); nothing was written")
        for action in report.planned[:50]:
            click.echo(
                f"  {action['action']} {action['memory']} in {action['provider']}"
                + (f" (from {action['from']})" if action["from"] else "")
            )
        if report.planned_total > 50:
            click.echo(f"  ... and {report.planned_total - 50} more (--json lists up to 1000)")
    for conflict in report.conflicts:
        if conflict["state"] == "open":
            click.echo(
                f"conflict #{conflict['id']} on {conflict['link_id']} between "
                f"{', '.join(conflict['providers'])}: open; `memsync resolve "
                f"{conflict['id']} --keep NAME`"
            )
        else:
            click.echo(
                f"conflict on {conflict['link_id']}: {conflict['winner']} won "
                f"({conflict['policy']}); the other version is kept in the journal"
            )
    for failure in report.failures[:20]:
        state = "parked as dead" if failure["dead"] else "will retry"
        click.echo(
            f"failed: {failure['action']} {failure['link_id']} in {failure['provider']}: "
            f"{failure['error']} ({state})"
        )
    if report.waiting:
        click.echo(f"{report.waiting} action(s) waiting for retry or dead (see `memsync status`)")
    if report.interrupted:
        click.echo("interrupted: the action in flight finished; the rest runs next cycle")
    for line in scoped.scope_lines() if scoped else []:
        click.echo(line)


@main.command()
@click.option("--provider", "only", multiple=True, help="Sync only this provider (repeatable).")
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing to any provider.")
@click.option("--json", "as_json", is_flag=True, help="Print the cycle report as JSON.")
@click.option("--force-delete", is_flag=True, help="Confirm deletes a safety gate refused.")
@click.option("--full", is_flag=True, help="List incremental providers in full this time.")
@click.option("--retry-dead", is_flag=True, help="Retry actions parked as dead.")
@click.option(
    "--wait",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds to wait for a cycle already running (the daemon's).",
)
@pass_app
def sync(
    app: App,
    only: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
    force_delete: bool,
    full: bool,
    retry_dead: bool,
    wait: float,
) -> None:
    """Run one sync cycle: mirror, plan, replay.

    Exits 0 when every provider is reconciled, 1 when something failed, was busy or is in an
    open conflict, 6 when a safety gate refused deletes.

    \b
    --json prints: providers.NAME.{state, listed, added, changed, removed,
    skipped[{id, reason}], complete, partial_reason, refused, written, failed, adopted},
    actions[{action (create, update, delete, adopt), memory, provider, from}],
    replayed{create, update, delete},
    failures[{provider, action, link_id, error, dead}], conflicts[{id, link_id,
    providers, policy, winner, state}], refusals{NAME: why}, exit_code.
    With wildcard scopes, providers are named NAME[KEY=VALUE] and the report adds
    scopes{KEY=VALUE: {scope, state, discovered, providers, error}} and
    discovery{NAME: {state, scopes, complete, note, error}}.

    \b
    Example:
      memsync sync --dry-run
    """
    for name in only:
        app.config.provider(name)
    options = SyncOptions(
        only=list(only) or None,
        dry_run=dry_run,
        force_delete=force_delete,
        full=full,
        retry_dead=retry_dead,
    )
    with progress_bar("syncing"):
        report = run_sync(app.paths, app.config, options, lock_wait=wait)
    if as_json:
        print_json(report.as_dict())
    else:
        _print_cycle(report)
    raise SystemExit(report.exit_code)


# --- switch --------------------------------------------------------------------------------


@main.command()
@click.argument("name")
@pass_app
def switch(app: App, name: str) -> None:
    """Make NAME the active backend (re-centre the star).

    Runs a cycle around the current active backend first so nothing pending is lost, rewrites
    `[sync] active` in the config, then runs a cycle around NAME. Links survive: no memory is
    duplicated or lost.
    """
    config = app.config
    config.provider(name)
    if config.sync.active == name:
        click.echo(f"{name} is already the active backend")
        return
    before = run_sync(app.paths, config, SyncOptions())
    if before.exit_code != 0:
        _print_cycle(before)
        raise MemsyncError(
            f"the last cycle around {config.sync.active} did not finish cleanly; fix that first "
            "(nothing was switched)"
        )
    path = app.paths.config_file
    text = set_active(path.read_text(encoding="utf-8"), name)
    new_config = parse_config(text, source=str(path), base_dir=path.parent)
    write_private_text(path, text)
    after = run_sync(app.paths, new_config, SyncOptions())
    _print_cycle(after)
    click.echo(f"switched: {name} is now the active backend (was {config.sync.active})")
    raise SystemExit(after.exit_code)


# --- verify --------------------------------------------------------------------------------


@main.command("verify")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--scope", "scope", help="With wildcard scopes: the scope to verify (user_id=alice).")
@pass_app
def verify_command(app: App, a: str, b: str, as_json: bool, scope: str | None) -> None:
    """Prove providers A and B hold the same memories (text and user metadata, in scope).

    Every copy counts. A text both held before memsync linked them and then received from
    each other (held twice each, in step) is reported as duplicated. Exits 0 when they are
    reconciled, 1 with the list of differences otherwise.
    """
    from memsync.scope_views import provider_in_scope
    from memsync.scopes import Scope

    chosen = Scope.parse(scope) if scope is not None else None
    first = provider_in_scope(app.config, a, chosen)
    second = provider_in_scope(app.config, b, chosen)
    report = verify_and_record(first, second, app.paths.database)
    if as_json:
        print_json(report.as_dict())
    else:
        click.echo(
            f"{first.name}: {report.count_a} memories, {second.name}: {report.count_b} memories"
        )
        if report.reconciled:
            click.echo("reconciled: both hold the same memories")
        for diff in report.differences[:100]:
            times = f" (x{diff.count})" if diff.count > 1 else ""
            meta = f" {json.dumps(diff.metadata, ensure_ascii=False)}" if diff.metadata else ""
            click.echo(f"only in {diff.only_in}{times}: {diff.content!r}{meta}")
        if len(report.differences) > 100:
            click.echo(f"... and {len(report.differences) - 100} more (use --json)")
        for dup in report.duplicated[:100]:
            counts = ", ".join(f"{n} x{c}" for n, c in dup.copies.items())
            click.echo(
                f"duplicated ({counts}): {dup.content!r}: each side held it as its own and "
                "got the other's copy too"
            )
        if len(report.duplicated) > 100:
            click.echo(f"... and {len(report.duplicated) - 100} more duplicated (use --json)")
    raise SystemExit(0 if report.reconciled else 1)


# --- conflicts -----------------------------------------------------------------------------


@main.command()
@click.option("--all", "show_all", is_flag=True, help="Include conflicts already settled.")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def conflicts(app: App, show_all: bool, as_json: bool) -> None:
    """List conflicts: memories changed on two sides since the last sync."""
    with app.store() as store:
        rows = list_conflicts(store, include_settled=show_all)
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("no conflicts")
        return
    for row in rows:
        click.echo(
            f"#{row['id']} {row['link_id']} [{row['state']}, policy {row['policy']}]"
            + (f" kept {row['winner']}" if row["winner"] else "")
        )
        for provider, version in row["versions"].items():
            click.echo(f"  {provider}: {version['content']!r} (updated {version['updated_at']})")


@main.command()
@click.argument("conflict_id", type=int)
@click.option("--keep", "keep", required=True, help="The provider whose version wins.")
@click.option("--no-sync", is_flag=True, help="Record the choice; apply it at the next cycle.")
@pass_app
def resolve(app: App, conflict_id: int, keep: str, no_sync: bool) -> None:
    """Settle a conflict: keep NAME's version everywhere (the other stays in the journal)."""
    with app.store() as store:
        choose_winner(store, conflict_id, keep)
    click.echo(f"conflict #{conflict_id}: keeping {keep}'s version")
    if not no_sync:
        report = run_sync(app.paths, app.config, SyncOptions())
        _print_cycle(report)
        raise SystemExit(report.exit_code)


# --- journal -------------------------------------------------------------------------------


@main.command("log")
@click.option("--provider", help="Only this provider's changes.")
@click.option("--since", help="Only changes at or after this time (ISO-8601).")
@click.option("--limit", type=int, default=200, show_default=True)
@click.option("--scope", "scope", help="Only one scope's changes, e.g. user_id=alice.")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def log_command(
    app: App,
    provider: str | None,
    since: str | None,
    limit: int,
    scope: str | None,
    as_json: bool,
) -> None:
    """The change journal: what memsync saw added, changed, removed and wrote."""
    from memsync.scope_views import scope_provider_names
    from memsync.scopes import Scope

    with app.store() as store:
        if scope is None:
            entries = log_entries(store, provider=provider, since=since, limit=limit)
        else:
            names = scope_provider_names(store, Scope.parse(scope), provider)
            entries = log_entries(store, providers=names, since=since, limit=limit)
    if as_json:
        print_json(entries)
        return
    print_table(
        "",
        ("seq", "at", "provider", "kind", "memory", "content"),
        [
            (
                e["seq"] or "",
                e["at"],
                e["provider"],
                _kind(e),
                e["link_id"],
                _preview(e["content"]),
            )
            for e in entries
        ],
    )


def _kind(entry: dict[str, object]) -> str:
    """The journal kind; an adoption says what it was paired with."""
    if entry["kind"] != "adopted":
        return str(entry["kind"])
    if entry.get("from_provider"):
        return f"adopted (same text as {entry['from_provider']} {entry['from_provider_id']})"
    return "adopted"


@main.command()
@click.argument("memory")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def history(app: App, memory: str, as_json: bool) -> None:
    """Every version of one memory seen in any provider (MEMORY: a memory or provider id)."""
    with app.store() as store:
        entries = memory_history(store, memory)
    if as_json:
        print_json(entries)
        return
    print_table(
        entries[0]["link_id"],
        ("seq", "at", "provider", "kind", "provider id", "content"),
        [
            (
                e["seq"] or "",
                e["at"],
                e["provider"],
                _kind(e),
                e["provider_id"],
                _preview(e["content"]),
            )
            for e in entries
        ],
    )


def _preview(text: str | None, width: int = 60) -> str:
    if text is None:
        return ""
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


@main.command()
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

    \b
    Examples:
      memsync restore ~/.local/share/memsync/backups/mem0/2026-11-30T0900.pmm.jsonl --into mem0
      memsync restore --provider mem0 --at 2026-11-29T18:00:00Z -o mem0-yesterday.pmm.jsonl
    """
    if file is not None:
        if not target:
            raise MemsyncError("restore FILE needs --into NAME (the provider to restore into)")
        with app.provider(target) as provider, progress_bar(f"restoring into {target}") as tick:
            report = import_file(
                file,
                provider,
                strategy=strategy,  # type: ignore[arg-type]
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
        raise SystemExit(0 if report.ok else 1)
    if not provider_name or not at:
        raise MemsyncError("restore needs FILE --into NAME, or --provider NAME --at TIME")
    with app.store() as store:
        header = Header(
            source_provider=provider_name,
            scope={"provider": provider_name, "at": at},
            exported_at=utc_now_iso(),
        )
        records = records_at(store, provider_name, at)
        if output:
            count = write_pmm_file(output, header, records)
        else:
            count = write_pmm_stream(sys.stdout, header, records)
    stderr.print(f"{count} memories of {provider_name} as they stood at {at}", markup=False)


# --- repair --------------------------------------------------------------------------------


@main.command()
@pass_app
def repair(app: App) -> None:
    """Rebuild the staging database from the providers (after corruption or loss).

    The old file is kept beside the new one as staging.db.corrupt-TIME. Links come back from
    the origin markers memsync wrote into every provider, so nothing is duplicated. What only
    the old database knew (the journal, deletes not yet replayed) is gone.
    """
    aside = set_aside(app.paths.database)
    if aside is not None:
        click.echo(f"moved the old database to {aside}")
    report = run_sync(app.paths, app.config, SyncOptions(full=True))
    _print_cycle(report)
    click.echo("rebuilt the staging database from the providers")
    raise SystemExit(report.exit_code)


# --- migrate -------------------------------------------------------------------------------


@main.command()
@click.option("--from", "source", required=True, help="The provider to copy from (e.g. mem0).")
@click.option("--to", "target", required=True, help="The provider to copy into (e.g. mnem).")
@click.option("--dry-run", is_flag=True, help="Report what would be imported; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def migrate(app: App, source: str, target: str, dry_run: bool, as_json: bool) -> None:
    """One-shot copy of every memory of one provider into another (ADR-0024 semantics).

    Pages through the whole source (no silent cap), skips empty memories and reports them by
    id, namespaces ids (`mem0:{id}` in mnem), keeps provenance, and imports nothing twice.
    Exits 1 when the source listing was partial or a write failed.

    \b
    Example:
      memsync migrate --from mem0 --to mnem --dry-run
    """
    from memsync.migrate import migrate as run_migration

    with progress_bar(f"migrating {source} -> {target}"):
        report = run_migration(app.provider(source), app.provider(target), dry_run=dry_run)
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
    raise SystemExit(0 if report.ok else 1)
