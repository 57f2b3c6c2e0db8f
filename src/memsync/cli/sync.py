"""Commands that run a sync cycle, or steer the next one, and print its report: sync, switch,
conflicts, resolve, repair."""

from __future__ import annotations

import atexit
import gc

import click

from memsync.base.output import print_json, progress_bar
from memsync.cli.common import App, pass_app
from memsync.engine.conflicts import choose_winner, list_conflicts, settle_rollbacks
from memsync.engine.report import CycleReport, SyncOptions
from memsync.orchestration.repair import rebuild_staging
from memsync.orchestration.runner import run_sync
from memsync.orchestration.scopes.report import ScopedCycleReport
from memsync.orchestration.switch import SwitchRefused, switch_active


def _print_cycle(report: CycleReport) -> None:
    """The report on stdout; each failure on one line, once (``engine/failures.py``)."""
    verb = "would write" if report.dry_run else "wrote"
    scoped = report if isinstance(report, ScopedCycleReport) else None
    hidden = scoped.quiet_names() if scoped else set()
    for name, outcome in report.providers.items():
        if outcome.state == "skipped" or name in hidden:
            continue
        if outcome.state in ("error", "busy") and outcome.error:
            continue  # its failure line says it
        mirror = outcome.mirror
        line = f"{name}: {outcome.state}"
        if mirror:
            line += (
                f", listed {mirror.listed} (+{mirror.added} ~{mirror.changed} -{mirror.removed})"
            )
            if mirror.skipped:
                line += f", skipped {len(mirror.skipped)}"
        if mirror and mirror.rolled_back:
            line += f", rolled back {mirror.rolled_back}"
        if mirror and mirror.undated:
            line += f", {mirror.undated} undated"  # versions mnem's log walk did not reach
        if outcome.adopted:
            line += f", {'would adopt' if report.dry_run else 'adopted'} {outcome.adopted}"
        if outcome.written or outcome.failed:
            line += f", {verb} {outcome.written}"
            if outcome.failed:
                line += f", {outcome.failed} failed"
        click.echo(line)
        if mirror and mirror.partial_reason:
            click.echo(f"  partial: {mirror.partial_reason} (no deletes inferred)")
        if mirror and mirror.refused:
            click.echo(f"  REFUSED: {mirror.refused}")
        for skip in (mirror.skipped if mirror else [])[:20]:
            click.echo(f"  skipped {skip.id}: {skip.reason}")
        for history_line in outcome.history.lines() if outcome.history else []:
            click.echo(f"  {history_line}")  # a new store that began with Mem0's past
    for failure in report.provider_failures():
        click.echo(failure.line())
    if report.dry_run:
        click.echo(f"plan: {report.planned_total} action(s); nothing was written")
        for action in report.planned[:50]:
            click.echo(
                f"  {action.action} {action.memory} in {action.provider}"
                + (f" (from {action.source})" if action.source else "")
            )
        if report.planned_total > 50:
            click.echo(f"  ... and {report.planned_total - 50} more (--json lists up to 1000)")
    for conflict in report.conflicts:
        if conflict.rolled_back and conflict.state == "open":
            others = [p for p in conflict.providers if p != conflict.rolled_back]
            keep_other = f", `--keep {others[0]}` writes the newer one back" if others else ""
            click.echo(
                f"conflict #{conflict.id} on {conflict.link_id}: rolled back in "
                f"{conflict.rolled_back} (it went back to an older state than memsync saw "
                f"there); nothing copied. `memsync resolve {conflict.id} --keep "
                f"{conflict.rolled_back}` takes that everywhere{keep_other}"
            )
        elif conflict.state == "open":
            click.echo(
                f"conflict #{conflict.id} on {conflict.link_id} between "
                f"{', '.join(conflict.providers)}: open; `memsync resolve "
                f"{conflict.id} --keep NAME`"
            )
        else:
            click.echo(
                f"conflict on {conflict.link_id}: {conflict.winner} won "
                f"({conflict.policy}); the other version is kept in the journal"
            )
    if report.waiting:
        click.echo(f"{report.waiting} action(s) waiting for retry or dead (see `memsync status`)")
    if report.interrupted:
        click.echo("interrupted: the action in flight finished; the rest runs next cycle")
    for line in scoped.scope_lines() if scoped else []:
        click.echo(line)


@click.command()
@click.option("--provider", "only", multiple=True, help="Sync only this provider (repeatable).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan; change nothing (not even what memsync records of the providers).",
)
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

    Exits 0 when every provider is reconciled, 1 when a write failed, a store was busy or a
    conflict is open (a rollback too), 5 when a provider could not be read or reached (each
    failure is printed once, on one line), 6 when a safety gate refused deletes or rollbacks.

    \b
    --json prints: providers.NAME.{state, listed, added, changed, removed, rolled_back,
    undated, skipped[{id, reason}], complete, partial_reason, refused, refused_by, written,
    failed, adopted}, actions[{action (create, update, delete, adopt), memory, provider, from}],
    replayed{create, update, delete},
    failures[{provider, action, link_id, error, dead}],
    provider_failures[{provider, reason, scopes, exit_code, line}], conflicts[{id, link_id,
    providers, policy, winner, state, rolled_back}], refusals{NAME: why}, exit_code.
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
    atexit.unregister(_no_last_collection)  # once, however many times it ran in one process
    atexit.register(_no_last_collection)
    raise SystemExit(report.exit_code)


def _no_last_collection() -> None:
    """At exit: the cycle closed every store it opened, and what is left is garbage the exit
    frees anyway; Python's last full collection would walk all of it first (0.3 s after a
    first sync of 10k memories). Run at exit, not when the command returns, so that a caller
    running the command in its own process (tests) keeps its collector."""
    gc.freeze()


# --- switch --------------------------------------------------------------------------------


@click.command()
@click.argument("name")
@pass_app
def switch(app: App, name: str) -> None:
    """Make NAME the active backend (re-centre the star).

    Runs a cycle around the current active backend first so nothing pending is lost (it
    writes whatever is still pending, and says so as it starts), rewrites `[sync] active` in
    the config, then runs a cycle around NAME. Links survive: no memory is duplicated or lost.
    """
    try:
        switched = switch_active(app.paths, app.config, name, announce=_announce_step)
    except SwitchRefused as refused:
        _print_cycle(refused.before)
        raise
    if switched.after is None:
        click.echo(f"{name} is already the active backend")
        return
    _print_cycle(switched.after)
    click.echo(f"switched: {name} is now the active backend (was {switched.previous})")
    raise SystemExit(switched.after.exit_code)


def _announce_step(line: str) -> None:
    click.echo(line)


# --- conflicts -----------------------------------------------------------------------------


@click.command()
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
        kind = (
            f"rolled back in {row['rolled_back']}"
            if row.get("rolled_back")
            else f"policy {row['policy']}"
        )
        click.echo(
            f"#{row['id']} {row['link_id']} [{row['state']}, {kind}]"
            + (f" kept {row['winner']}" if row["winner"] else "")
        )
        for provider, version in row["versions"].items():
            if version.get("gone"):
                click.echo(f"  {provider}: (gone from {provider}: lost when it went back in time)")
                continue
            click.echo(f"  {provider}: {version['content']!r} (updated {version['updated_at']})")


@click.command()
@click.argument("conflict_id", type=int, required=False)
@click.option("--keep", "keep", required=True, help="The provider whose version wins.")
@click.option(
    "--rolled-back",
    "rolled_back",
    metavar="NAME",
    help="Settle every memory NAME went back in time on (instead of one CONFLICT_ID).",
)
@click.option("--no-sync", is_flag=True, help="Record the choice; apply it at the next cycle.")
@pass_app
def resolve(
    app: App, conflict_id: int | None, keep: str, rolled_back: str | None, no_sync: bool
) -> None:
    """Settle a conflict: keep NAME's version everywhere (the other stays in the journal).

    \b
    A store that went back in time (a restore, lost writes) holds its memories as rolled back:
      memsync resolve --rolled-back server --keep server   # its older versions everywhere
      memsync resolve --rolled-back server --keep mnem     # mnem's newer ones back into it
    """
    if (conflict_id is None) == (rolled_back is None):
        raise click.UsageError("give one CONFLICT_ID, or --rolled-back NAME")
    with app.store() as store:
        if rolled_back is not None:
            settled = settle_rollbacks(store, rolled_back, keep, policy=app.config.sync.conflict)
        else:
            assert conflict_id is not None
            choose_winner(store, conflict_id, keep)
    if rolled_back is not None:
        left = (
            f"; {len(settled.left)} left open ({keep} holds none of them)" if settled.left else ""
        )
        click.echo(
            f"{settled.settled} rolled-back memories in {rolled_back}: "
            f"keeping {keep}'s version{left}"
        )
    else:
        click.echo(f"conflict #{conflict_id}: keeping {keep}'s version")
    if not no_sync:
        report = run_sync(app.paths, app.config, SyncOptions())
        _print_cycle(report)
        raise SystemExit(report.exit_code)


# --- repair --------------------------------------------------------------------------------


@click.command()
@pass_app
def repair(app: App) -> None:
    """Rebuild the staging database from the providers (after corruption or loss).

    The old file is kept beside the new one as staging.db.corrupt-TIME. Links come back from
    the origin markers memsync wrote into every provider, so nothing is duplicated. What only
    the old database knew (the journal, deletes not yet replayed) is gone.
    """
    report = rebuild_staging(
        app.paths,
        app.config,
        on_set_aside=lambda aside: click.echo(f"moved the old database to {aside}"),
    )
    _print_cycle(report)
    click.echo("rebuilt the staging database from the providers")
    raise SystemExit(report.exit_code)
