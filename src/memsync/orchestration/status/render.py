"""`memsync status` for a person: the report drawn as lines and a table (never a secret)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from memsync.base.output import print_table, stdout
from memsync.engine.unsynced import describe, lag_of
from memsync.orchestration.status.cycle_state import cycle_state_text
from memsync.orchestration.status.times import short_duration, short_time


def render_status(report: dict[str, Any]) -> None:
    config = report["config"]
    if config["ok"]:
        stdout.print(f"config: {config['path']} (active: {config.get('active')})", markup=False)
    else:
        stdout.print(f"config: {config['error']}", markup=False)
    daemon = report["daemon"]
    if daemon.get("running"):
        stdout.print(
            f"daemon: running (pid {daemon['pid']}, since {daemon['since']})", markup=False
        )
    else:
        stdout.print("daemon: not running", markup=False)
    database = report["database"]
    if database.get("error"):
        stdout.print(f"database: {database['error']}", markup=False)
    elif not database["exists"]:
        stdout.print("database: none yet (run `memsync sync`)", markup=False)
    backups = report.get("backups", {})
    rows = []
    for name, info in sorted(report["providers"].items()):
        cycle = info.get("last_cycle") or {}
        backup = backups.get(name) or {}
        took = short_duration(cycle.get("duration_s"))
        rows.append(
            (
                name + _scope_note(info),
                info.get("type", "?"),
                info.get("direction", "?"),
                _mirrored(info),
                f"{short_time(cycle.get('finished_at'))}" + (f" ({took})" if took else ""),
                cycle_state_text(cycle),
                _counts(cycle),
                f"{short_time(backup['at'])} ({backup['count']} kept)" if backup else "none",
            )
        )
    print_table(
        "providers",
        ("name", "type", "dir", "mirrored", "last cycle", "state", "+/~/-", "last backup"),
        rows,
    )
    for name, info in sorted(report["providers"].items()):
        lag = lag_of(info.get("last_cycle"))
        if lag is not None and lag.level != "behind":
            stdout.print(describe(name, info["last_cycle"], lag), markup=False)
    for name, info in sorted(report["providers"].items()):
        if line := _excluded_line(name, info):
            stdout.print(line, markup=False)
        if line := _outside_line(name, info):
            stdout.print(line, markup=False)
    for _name, info in sorted(report["providers"].items()):
        hooks = info.get("webhooks")
        if hooks and hooks["state"] == "silent":
            stdout.print(f"[yellow]WARNING {escape(hooks['line'])}[/yellow]")
        elif hooks:
            stdout.print(hooks["line"], markup=False)
    for _name, disk in sorted(report.get("disk", {}).items()):
        if disk.get("warning"):
            stdout.print(f"[yellow]WARNING {escape(disk['warning'])}[/yellow]")
        else:
            stdout.print(disk["line"], markup=False)
    for _name, found in sorted(report.get("discovery", {}).items()):
        if found.get("warning"):
            stdout.print(f"[yellow]WARNING {escape(found['warning'])}[/yellow]")
        elif found.get("line"):
            stdout.print(found["line"], markup=False)
    outbox = report["outbox"]
    stdout.print(
        f"outbox: {outbox['pending']} pending, {outbox['failed']} failing, {outbox['dead']} dead",
        markup=False,
    )
    for action in outbox.get("dead_actions", []):
        stdout.print(
            f"  dead #{action['id']}: {action['kind']} {action['link_id']} in {action['provider']} "
            f"after {action['attempts']} attempts: {action['last_error']}",
            markup=False,
        )
    stdout.print(f"conflicts: {report['conflicts']['open']} open", markup=False)
    for name, count in sorted(report.get("rollbacks", {}).items()):
        stdout.print(
            f"rolled back in {name}: {count} memor{'y' if count == 1 else 'ies'} older than "
            f"memsync saw there (restored? writes lost?); nothing copied until settled: "
            f"`memsync conflicts`, `memsync resolve --rolled-back {name} --keep NAME`",
            markup=False,
        )
    _render_verify(report.get("verify") or {})
    backup = report["last_backup"]
    stdout.print(
        f"last backup: {backup['path']}" if backup else "last backup: none yet", markup=False
    )
    cycle = report.get("cycle") or {}
    if cycle.get("running"):
        stdout.print(f"a sync cycle is running now (pid {cycle.get('pid')})", markup=False)


def _excluded_line(name: str, info: dict[str, Any]) -> str | None:
    """What a provider's exclude leaves alone, and the copies made before it (base/exclude)."""
    cycle = info.get("last_cycle") or {}
    count = int(cycle.get("excluded") or 0)
    if not count:
        return None
    rule = f" ({info['exclude']})" if info.get("exclude") else ""
    line = f"{name}: {count} record{'s' if count != 1 else ''} excluded{rule}"
    copies = cycle.get("excluded_copies") or {}
    if copies:
        held = ", ".join(f"{other} {n}" for other, n in copies.items())
        line += (
            f"; copies made before the exclude stay: {held} (memsync no longer updates or "
            "deletes them: delete them there if unwanted)"
        )
    return line


def _outside_line(name: str, info: dict[str, Any]) -> str | None:
    """Nodes a mnem store holds outside its layout's namespaces: not memsync's, never synced."""
    count = (info.get("last_cycle") or {}).get("outside")
    if not isinstance(count, int) or not count:
        return None
    return (
        f"{name}: {count} node{'s' if count != 1 else ''} outside the layout's namespaces "
        "(not memsync's: neither copied nor deleted)"
    )


def _mirrored(info: dict[str, Any]) -> str:
    """What the store serves, and apart, what it hides (expired, retired; kept, not deleted)."""
    served = str(info.get("records", 0))
    by_reason = info.get("hidden_by") or {}
    if not info.get("hidden"):
        return served
    parts = [f"+{n} {why}" for why, n in sorted(by_reason.items())] or [f"+{info['hidden']}"]
    return f"{served} ({', '.join(parts)}, hidden)"


def _render_verify(summary: dict[str, Any]) -> None:
    """Each linked pair's newest verify; one that does not hold is marked FAILED (red)."""
    interval = summary.get("interval")
    pairs = [p for p in summary.get("pairs", []) if p.get("at")]
    if interval is None and not pairs:
        return
    every = (
        f"every {short_duration(interval)}"
        if interval
        else "by hand only ([verify] interval unset)"
    )
    stdout.print(f"verify: {every}", markup=False)
    for pair in summary.get("pairs", []):
        names = f"{pair['a']} ↔ {pair['b']}"
        if not pair.get("at"):
            stdout.print(f"  {names}: never verified", markup=False)
        elif pair.get("error"):
            stdout.print(
                f"  [red]FAILED[/red] {names}: could not verify at {short_time(pair['at'])}: "
                f"{escape(pair['error'])}"
            )
        elif not pair.get("reconciled"):
            stdout.print(
                f"  [red]FAILED[/red] {names}: {pair.get('differences', 0)} difference(s) at "
                f"{short_time(pair['at'])}; "
                f"`memsync verify {escape(pair['a'])} {escape(pair['b'])}`"
            )
        else:
            since = pair.get("changes_since") or 0
            later = f", {since} change(s) since" if since else ""
            stdout.print(f"  {names}: reconciled at {short_time(pair['at'])}{later}", markup=False)


def _scope_note(info: dict[str, Any]) -> str:
    """' (N scopes)' for a provider holding more than one scope, or a wildcard one."""
    count = info.get("scope_count", len(info.get("scopes") or {}))
    if "scope_count" not in info and count <= 1:
        return ""
    return f" ({count} scope{'s' if count != 1 else ''})"


def _counts(cycle: dict[str, Any]) -> str:
    if not cycle:
        return ""
    return f"{cycle.get('added', 0)}/{cycle.get('changed', 0)}/{cycle.get('removed', 0)}"
