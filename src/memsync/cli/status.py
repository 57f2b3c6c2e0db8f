"""What memsync knows: status, verify, the change journal (log) and one memory's history."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import click

from memsync.base.output import print_json, print_table
from memsync.base.scopes import Scope
from memsync.cli.common import App, parse_scope, pass_app
from memsync.config.scoping import scoped_config_keys
from memsync.engine.journal import follow_entries, memory_history
from memsync.engine.verify import VerifyReport
from memsync.orchestration.scopes.views import log_in_scope, scope_provider_names
from memsync.orchestration.status import render_status, status_report
from memsync.orchestration.verify import ScopedVerifyReport, verify_every_scope, verify_in_scope


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--scope", "scope", callback=parse_scope, help="Only one scope's providers, e.g. user_id=alice."
)
@pass_app
def status(app: App, as_json: bool, scope: Scope | None) -> None:
    """What memsync knows: config, staging database, each provider's mirror."""
    report = status_report(app.paths, scope)
    if as_json:
        print_json(report)
    else:
        render_status(report)


# --- verify --------------------------------------------------------------------------------


@click.command("verify")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--scope",
    "scope",
    callback=parse_scope,
    help="With wildcard scopes: the scope to verify (user_id=alice).",
)
@pass_app
def verify_command(app: App, a: str, b: str, as_json: bool, scope: Scope | None) -> None:
    """Prove providers A and B hold the same memories (text and user metadata, in scope).

    Every copy counts. A text both held before memsync linked them and then received from
    each other (held twice each, in step) is reported as duplicated. A difference memsync's
    own handling makes (an expired memory it forgot in a store without expiry, a memory
    Mem0's Dream merged or superseded) is listed apart as explained and fails nothing.
    Exits 0 when they are reconciled, 1 with the list of differences otherwise.

    With wildcard scopes and no --scope, every scope is verified: a line for each one that
    does not hold (and each one that does, up to 20 scopes), a total, exit 0 only when every
    scope holds; --json gives each scope's report.
    """
    for name in (a, b):
        app.config.provider(name)
    if scope is None and scoped_config_keys(app.config.providers):
        scoped = verify_every_scope(app.config, app.paths.database, a, b)
        if as_json:
            print_json(scoped.as_dict())
        else:
            _print_scoped_verify(scoped)
        raise SystemExit(0 if scoped.reconciled else 1)
    report = verify_in_scope(app.config, app.paths.database, a, b, scope)
    if as_json:
        print_json(report.as_dict())
    else:
        _print_verify(report)
    raise SystemExit(0 if report.reconciled else 1)


def _print_verify(report: VerifyReport) -> None:
    click.echo(f"{report.a}: {report.count_a} memories, {report.b}: {report.count_b} memories")
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
    for item in report.explained[:100]:
        times = f" (x{item.count})" if item.count > 1 else ""
        click.echo(f"explained, only in {item.only_in}{times}: {item.content!r}: {item.reason}")
    if len(report.explained) > 100:
        click.echo(f"... and {len(report.explained) - 100} more explained (use --json)")


QUIET_OVER = 20  # with more scopes than this, those that hold are counted, not listed


def _print_scoped_verify(scoped: ScopedVerifyReport) -> None:
    quiet = len(scoped.scopes) > QUIET_OVER
    for outcome in scoped.scopes:
        label, report = outcome.scope.label, outcome.report
        if report is None:
            click.echo(f"{label}: could not verify: {outcome.error}")
            continue
        counts = f"{report.a}: {report.count_a}, {report.b}: {report.count_b}"
        explained = sum(e.count for e in report.explained)
        note = f"; {explained} explained" if explained else ""
        if report.reconciled:
            if not quiet:
                click.echo(f"{label}: reconciled ({counts}{note})")
        else:
            what = f"{report.difference_count} difference(s)"
            if report.duplicated:
                what += f", {len(report.duplicated)} duplicated"
            click.echo(f"{label}: {what} ({counts}{note})")
    totals = scoped.totals()
    click.echo(
        f"{totals['scopes']} scope(s): {totals['reconciled']} reconciled, "
        f"{totals['differing']} with differences, {totals['errors']} could not be verified"
        + (f"; {totals['explained']} explained" if totals["explained"] else "")
        + (
            " (each one that holds is counted, not listed: --json lists every scope)"
            if quiet
            else ""
        )
    )
    for line in scoped.unfound.values():
        click.echo(f"{line}: those never looked at are not verified, so the team is not reconciled")
    if not scoped.reconciled and not scoped.unfound:
        click.echo(
            f"`memsync verify {scoped.a} {scoped.b} --scope KEY=VALUE` lists one scope's "
            "differences"
        )


# --- journal -------------------------------------------------------------------------------

LOG_COLUMNS = ("seq", "at", "provider", "kind", "memory", "content")


@click.command("log")
@click.option("--provider", help="Only this provider's changes.")
@click.option("--since", help="Only changes at or after this time (ISO-8601).")
@click.option("--limit", type=int, default=200, show_default=True)
@click.option(
    "--scope", "scope", callback=parse_scope, help="Only one scope's changes, e.g. user_id=alice."
)
@click.option("--json", "as_json", is_flag=True, help="JSON (with --follow: one object a line).")
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="Keep printing entries as they are journalled, like journalctl -f; Ctrl-C stops.",
)
@pass_app
def log_command(
    app: App,
    provider: str | None,
    since: str | None,
    limit: int,
    scope: Scope | None,
    as_json: bool,
    follow: bool,
) -> None:
    """The change journal: what memsync saw added, changed, removed and wrote.

    \b
    Examples:
      memsync log --provider mem0 --since 2026-11-30T09:00:00Z
      memsync log --follow --scope user_id=alice
    """
    if follow:
        _follow(app, provider, since, limit, scope, as_json)
        return
    with app.store() as store:
        entries = log_in_scope(store, scope, provider=provider, since=since, limit=limit)
    if as_json:
        print_json(entries)
        return
    print_table(
        "",
        LOG_COLUMNS,
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


def _follow(
    app: App,
    provider: str | None,
    since: str | None,
    limit: int,
    scope: Scope | None,
    as_json: bool,
) -> None:
    """`log --follow`: the newest entries, then each new one as one line (tab-separated, or
    a JSON object with --json), flushed as it comes; Ctrl-C exits 0, as journalctl -f does."""
    out = sys.stdout
    # Ctrl-C stops it even where the shell that started it left SIGINT ignored (a script's
    # `memsync log -f &`): Python then never installs its own handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with app.store() as store:
            names = scope_provider_names(store, scope, provider) if scope else None
            if not as_json:
                out.write("\t".join(LOG_COLUMNS) + "\n")
            for batch in follow_entries(
                store, provider=provider, since=since, limit=limit, providers=names
            ):
                for entry in batch:
                    out.write(_json_line(entry) if as_json else _log_line(entry))
                out.flush()
    except KeyboardInterrupt:
        return
    except BrokenPipeError:  # `memsync log -f | head`: the reader is gone; so are we
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        raise SystemExit(0) from None


def _log_line(entry: dict[str, Any]) -> str:
    fields = (
        entry["seq"] or "",
        entry["at"],
        entry["provider"],
        _kind(entry),
        entry["link_id"],
        _preview(entry["content"]),
    )
    return "\t".join(str(field) for field in fields) + "\n"


def _json_line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, default=str) + "\n"


def _kind(entry: dict[str, object]) -> str:
    """The journal kind; an adoption says what it was paired with."""
    if entry["kind"] != "adopted":
        return str(entry["kind"])
    if entry.get("from_provider"):
        return f"adopted (same text as {entry['from_provider']} {entry['from_provider_id']})"
    return "adopted"


@click.command()
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
