"""``memsync status``: one picture of config, daemon, providers, outbox, conflicts and backups.

Collected as plain data (the --json output) first, then rendered for a person. Never prints a
secret: only provider names, types and counts.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.markup import escape

from memsync.base.dream import MERGED, Dream
from memsync.base.errors import MemsyncError
from memsync.base.exclude import Exclusion
from memsync.base.output import print_table, stdout
from memsync.base.paths import Paths
from memsync.base.records import is_expired, parse_instant
from memsync.base.scopes import Scope
from memsync.config import Config, load_config
from memsync.engine.conflicts import list_conflicts
from memsync.engine.unsynced import describe, duration, lag_of
from memsync.orchestration.backups import newest_backups
from memsync.staging import StagingStore


def collect_status(paths: Paths) -> dict[str, Any]:
    report: dict[str, Any] = {
        "config": {"path": str(paths.config_file), "ok": False, "error": None},
        "database": {"path": str(paths.database), "exists": paths.database.exists()},
        "daemon": _daemon(paths),
        "cycle": _cycle_lock(paths),
        "providers": {},
        "outbox": {"pending": 0, "failed": 0, "dead": 0},
        "conflicts": {"open": 0},
        "rollbacks": {},  # provider -> memories it went back in time on, not settled yet
        "last_run": None,
        "discovery": {},  # per wildcard source, from the newest run that discovered scopes
        "last_backup": _last_backup(paths.backups_dir),
        "backups": newest_backups(paths.backups_dir),
    }
    configured: dict[str, Any] = {}
    config: Config | None = None
    try:
        config = load_config(paths.config_file)
        report["config"]["ok"] = True
        report["config"]["active"] = config.sync.active
        configured = {
            name: {"type": entry.type, "direction": entry.direction}
            | ({"exclude": Exclusion.of(entry).describe()} if Exclusion.of(entry) else {})
            for name, entry in config.providers.items()
        }
    except MemsyncError as exc:
        report["config"]["error"] = str(exc)
    report["cutover"] = []
    report["verify"] = {"interval": None, "pairs": [], "failing": 0}
    for name, info in configured.items():
        report["providers"][name] = {
            **info,
            "records": 0,
            "hidden": 0,
            "scopes": {},
            "last_cycle": None,
            "state": None,
            "outbox": dict(_NO_OUTBOX),
        }
    if paths.database.exists():
        try:
            with StagingStore.open(paths.database, create=False) as store:
                _from_store(store, report)
                if config is not None:
                    report["cutover"] = cutover_readiness(store, config)
                    report["verify"] = verify_summary(report["cutover"], config)
        except MemsyncError as exc:
            report["database"]["error"] = str(exc)
    return report


_NO_OUTBOX = {"pending": 0, "failed": 0, "dead": 0}


def _provider_entry(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The report's entry for NAME; one the config no longer names is marked so."""
    if name not in report["providers"]:
        report["providers"][name] = {
            "configured": False,
            "records": 0,
            "hidden": 0,
            "scopes": {},
            "last_cycle": None,
            "state": None,
            "outbox": dict(_NO_OUTBOX),
        }
    entry: dict[str, Any] = report["providers"][name]
    return entry


# Stores that stop serving a memory once its date has passed: Mem0 hides it from default
# reads, mnem and Hindsight hold memsync's tombstone. Cognee cannot hold expiry (it keeps
# serving them) and a PMM backup keeps everything.
HIDES_EXPIRED = frozenset({"mem0-oss", "mem0-server", "mem0-platform", "mnem", "hindsight"})


def _hidden(dated: Any) -> str | None:
    """Why a store does not serve these records although memsync keeps them, if it does not:
    "expired", or "retired" (by Dream: mnem holds memsync's tombstone of a superseded or
    merged memory, the Platform hides a merged one from default reads)."""
    if dated.type in HIDES_EXPIRED and is_expired(dated.expiration_date):
        return "expired"
    dream = Dream.of({"lifecycle_state": dated.lifecycle_state, "replaced_by": dated.replaced_by})
    if dated.type == "mnem" and dream.retired:
        return "retired"
    if dated.type == "mem0-platform" and dream.lifecycle_state == MERGED:
        return "retired"
    return None


def _from_store(store: StagingStore, report: dict[str, Any]) -> None:
    counts = store.status_counts
    for count in counts.records_by_scope():
        entry = _provider_entry(report, count.provider)
        entry["records"] += count.records
        entry["scopes"][count.scope_key] = count.records
    for dated in counts.maybe_hidden_by_scope():
        # Hidden is not deleted: the mirror keeps such a memory, its store no longer serves
        # it. Counted apart, so "records" is what the store serves.
        why = _hidden(dated)
        if why is None:
            continue
        entry = _provider_entry(report, dated.provider)
        entry["records"] -= dated.records
        entry["scopes"][dated.scope_key] -= dated.records
        entry["hidden"] = entry.get("hidden", 0) + dated.records
        by_reason = entry.setdefault("hidden_by", {})
        by_reason[why] = by_reason.get(why, 0) + dated.records
        hidden = entry.setdefault("hidden_scopes", {})
        hidden[dated.scope_key] = hidden.get(dated.scope_key, 0) + dated.records
    durations = _run_durations(store)
    for name, last_cycle in store.providers.last_cycles():
        entry = _provider_entry(report, name)
        cycle = json.loads(last_cycle) if last_cycle else None
        if cycle is not None:
            cycle["duration_s"] = durations.get(cycle.get("run_id"))
        entry["last_cycle"] = cycle
        entry["state"] = cycle_state(cycle, name=name)
    for outbox in counts.outbox_needing_work():
        _provider_entry(report, outbox.provider)["outbox"][outbox.state] = outbox.actions
        report["outbox"][outbox.state] += outbox.actions
    report["outbox"]["dead_actions"] = [action._asdict() for action in counts.dead_actions(20)]
    report["conflicts"]["open"] = store.conflicts.count_open()
    report["rollbacks"] = store.rollbacks.counts()
    for name, count in report["rollbacks"].items():
        _provider_entry(report, name)["rolled_back"] = count
    report["discovery"] = last_discovery(store, report["providers"])
    run = store.runs.latest()
    if run:
        report["last_run"] = {
            "id": run.id,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "status": run.status,
            "duration_s": _duration(run.started_at, run.finished_at),
        }


def last_discovery(store: StagingStore, configured: dict[str, Any]) -> dict[str, Any]:
    """What the newest run's discovery found per configured wildcard source, each with the
    warning a person must read while it is not complete ("N users found, more may exist")."""
    from memsync.orchestration.scopes.report import discovery_line, incomplete_discoveries

    found = store.runs.latest_discovery()
    if found is None:
        return {}
    run_id, finished_at, raw = found
    sources = {
        name: dict(entry)
        for name, entry in json.loads(raw).items()
        if name in configured and configured[name].get("configured", True)
    }
    warnings = incomplete_discoveries(sources)
    for name, entry in sources.items():
        entry["run_id"], entry["at"] = run_id, finished_at
        entry["warning"] = warnings.get(name)
        entry["line"] = warnings.get(name) or discovery_line(name, entry)
    return sources


def cycle_history(store: StagingStore, limit: int = 60) -> list[dict[str, Any]]:
    """The newest finished runs, oldest first: duration and each provider's +/~/- counts (a
    team's scopes summed into their provider, its worst state shown)."""
    from memsync.orchestration.scopes.views import WORST_FIRST, split_base

    history = []
    for run in reversed(store.runs.newest_finished(limit)):
        summary = json.loads(run.summary) if run.summary else {}
        providers: dict[str, dict[str, Any]] = {}
        for name, outcome in (summary.get("providers") or {}).items():
            if outcome.get("state") == "skipped":
                continue
            row = providers.setdefault(
                split_base(name),
                {"state": None, "added": 0, "changed": 0, "removed": 0, "written": 0},
            )
            for key in ("added", "changed", "removed", "written"):
                row[key] += outcome.get(key, 0)
            states = [s for s in (row["state"], outcome.get("state")) if s]
            row["state"] = min(
                states, key=lambda s: WORST_FIRST.index(s) if s in WORST_FIRST else 0
            )
        history.append(
            {
                "id": run.id,
                "started_at": run.started_at,
                "finished_at": run.finished_at,
                "status": run.status,
                "duration_s": _duration(run.started_at, run.finished_at),
                "dry_run": bool(summary.get("dry_run")),
                "providers": providers,
            }
        )
    return history


def last_verify(store: StagingStore, a: str, b: str) -> dict[str, Any] | None:
    """The newest `verify` of A and B (either order), with how many changes came since."""
    found = store.verify_results.latest(a, b)
    if found is None:
        return None
    return {
        "at": found.at,
        "reconciled": found.reconciled,
        "count": {found.a: found.count_a, found.b: found.count_b},
        "differences": found.differences,
        "error": found.error,
        "changes_since": store.journal.count_since(a, b, found.journal_seq),
    }


def cutover_readiness(store: StagingStore, config: Config) -> list[dict[str, Any]]:
    """For the active backend and each other provider: is it safe to `memsync switch` to it?"""
    active = config.sync.active
    waiting = list_conflicts(store)
    pairs = []
    for other in config.providers:
        if other == active:
            continue
        outbox = dict(_NO_OUTBOX)
        for state, actions in store.status_counts.outbox_between(active, other).items():
            outbox["pending" if state == "running" else state] += actions
        conflicts = [c["id"] for c in waiting if active in c["versions"] or other in c["versions"]]
        verified = last_verify(store, active, other)
        checks = [
            _check("verify", *_verify_verdict(verified)),
            _check("outbox", outbox["pending"] + outbox["failed"] == 0, _outbox_text(outbox)),
            _check("dead letters", outbox["dead"] == 0, f"{outbox['dead']} dead"),
            _check("conflicts", not conflicts, f"{len(conflicts)} open"),
        ]
        pairs.append(
            {
                "a": active,
                "b": other,
                "verify": verified,
                "outbox": outbox,
                "conflicts": conflicts,
                "checks": checks,
                "safe": all(c["ok"] for c in checks),
                "switch": switch_plan(active, other, config.providers[other].direction),
            }
        )
    return pairs


def verify_summary(pairs: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    """The newest verify of each linked pair (scheduled or by hand), and how many fail."""
    results = []
    for pair in pairs:
        found = pair.get("verify") or {}
        failing = bool(found) and (bool(found.get("error")) or not found.get("reconciled"))
        results.append({"a": pair["a"], "b": pair["b"], **found, "failing": failing})
    return {
        "interval": config.verify.interval,
        "pairs": results,
        "failing": sum(1 for r in results if r["failing"]),
    }


def _check(name: str, ok: bool, text: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "text": text}


def _verify_verdict(verified: dict[str, Any] | None) -> tuple[bool, str]:
    if verified is None:
        return False, "never verified"
    if verified["error"]:
        return False, f"could not verify: {verified['error']}"
    if not verified["reconciled"]:
        return False, f"{verified['differences']} difference(s) at {_when(verified['at'])}"
    if verified["changes_since"]:
        since = verified["changes_since"]
        return False, f"reconciled at {_when(verified['at'])}, {since} change(s) since"
    return True, f"reconciled at {_when(verified['at'])}"


def _outbox_text(outbox: dict[str, int]) -> str:
    return f"{outbox['pending']} pending, {outbox['failed']} failing"


def switch_plan(active: str, target: str, direction: str = "both") -> list[str]:
    """What `memsync switch TARGET` does, step by step (sync/switch.py), for a person."""
    steps = [
        f"run one sync cycle around {active} (the active backend now), so nothing pending is lost;"
        " stop if it does not finish cleanly",
        f'set [sync] active = "{target}" in the config file (comments and layout kept)',
        f"run one sync cycle around {target}; links survive, so no memory is duplicated or lost",
    ]
    if direction != "both":
        steps.append(
            f'{target} is configured with direction = "{direction}"; as the active backend it '
            "sends and receives all the same (the active backend always does both)"
        )
    return steps


def _run_durations(store: StagingStore) -> dict[int, float | None]:
    """How long each provider's last cycle (the whole run it was part of) took, in seconds."""
    return {
        run.id: _duration(run.started_at, run.finished_at) for run in store.runs.of_last_cycles()
    }


def _duration(started: str | None, finished: str | None) -> float | None:
    start, end = parse_instant(started), parse_instant(finished)
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _daemon(paths: Paths) -> dict[str, Any]:
    from memsync.base.lock import read_daemon_info

    return read_daemon_info(paths)


def _cycle_lock(paths: Paths) -> dict[str, Any]:
    """Whether a sync cycle (the daemon's or a manual one) holds the cycle lock right now."""
    from memsync.base.lock import cycle_lock, is_locked

    lock = cycle_lock(paths)
    if not is_locked(lock.path):
        return {"running": False}
    return {"running": True, "pid": lock.holder().get("pid")}


def _last_backup(directory: Path) -> dict[str, Any] | None:
    if not directory.is_dir():
        return None
    files = sorted(
        (p for p in directory.rglob("*.pmm.jsonl*") if p.is_file()),
        key=lambda p: p.stat().st_mtime,
    )
    if not files:
        return None
    newest = files[-1]
    return {"path": str(newest), "bytes": newest.stat().st_size, "count": len(files)}


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
        took = _took(cycle.get("duration_s"))
        rows.append(
            (
                name + _scope_note(info),
                info.get("type", "?"),
                info.get("direction", "?"),
                _mirrored(info),
                f"{_when(cycle.get('finished_at'))}" + (f" ({took})" if took else ""),
                _cycle_state(cycle),
                _counts(cycle),
                f"{_when(backup['at'])} ({backup['count']} kept)" if backup else "none",
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
    every = f"every {_took(interval)}" if interval else "by hand only ([verify] interval unset)"
    stdout.print(f"verify: {every}", markup=False)
    for pair in summary.get("pairs", []):
        names = f"{pair['a']} ↔ {pair['b']}"
        if not pair.get("at"):
            stdout.print(f"  {names}: never verified", markup=False)
        elif pair.get("error"):
            stdout.print(
                f"  [red]FAILED[/red] {names}: could not verify at {_when(pair['at'])}: "
                f"{escape(pair['error'])}"
            )
        elif not pair.get("reconciled"):
            stdout.print(
                f"  [red]FAILED[/red] {names}: {pair.get('differences', 0)} difference(s) at "
                f"{_when(pair['at'])}; `memsync verify {escape(pair['a'])} {escape(pair['b'])}`"
            )
        else:
            since = pair.get("changes_since") or 0
            later = f", {since} change(s) since" if since else ""
            stdout.print(f"  {names}: reconciled at {_when(pair['at'])}{later}", markup=False)


def _scope_note(info: dict[str, Any]) -> str:
    """' (N scopes)' for a provider holding more than one scope, or a wildcard one."""
    count = info.get("scope_count", len(info.get("scopes") or {}))
    if "scope_count" not in info and count <= 1:
        return ""
    return f" ({count} scope{'s' if count != 1 else ''})"


def _when(instant: str | None) -> str:
    """A UTC time, short: the time alone today, date and minute before."""
    moment = parse_instant(instant)
    if moment is None:
        return "never"
    moment = moment.astimezone(UTC)
    if moment.date() == datetime.now(UTC).date():
        return moment.strftime("%H:%M:%SZ")
    return moment.strftime("%Y-%m-%d %H:%MZ")


def _took(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


def cycle_state(cycle: dict[str, Any] | None, *, name: str = "") -> dict[str, Any] | None:
    """A provider's last cycle as one of ok, partial, busy, refused or error, with why, and
    how long it has gone unsynced (``unsynced``: level, since, for, and a line to show)."""
    if not cycle:
        return None
    found = _plain_state(cycle)
    lag = lag_of(cycle)
    if lag is not None:
        found["unsynced"] = {**lag.as_dict(), "text": describe(name or "provider", cycle, lag)}
    if found["kind"] == "busy":
        found["since"] = cycle.get("busy_since")
    return found


def _plain_state(cycle: dict[str, Any]) -> dict[str, Any]:
    state = cycle.get("state", "")
    if cycle.get("refused"):
        return {"kind": "refused", "gate": cycle["refused"], "text": _cycle_state(cycle)}
    if state == "ok" and not cycle.get("partial_reason"):
        return {"kind": "ok", "complete": bool(cycle.get("complete")), "text": _cycle_state(cycle)}
    if state == "partial" or cycle.get("partial_reason"):
        reason = cycle.get("partial_reason") or "listing incomplete"
        return {"kind": "partial", "reason": reason, "text": _cycle_state(cycle)}
    if state == "busy" or cycle.get("busy"):
        return {"kind": "busy", "reason": cycle.get("error"), "text": _cycle_state(cycle)}
    return {"kind": state or "error", "reason": cycle.get("error"), "text": _cycle_state(cycle)}


def _cycle_state(cycle: dict[str, Any]) -> str:
    """ok, complete | partial: why | deletes refused: why | store busy: why | error: why."""
    if not cycle:
        return ""
    state = cycle.get("state", "")
    if state == "ok":
        return "ok, complete" if cycle.get("complete") else "ok"
    if cycle.get("refused"):
        gate = "rollbacks" if cycle.get("refused_by") == "rollbacks" else "deletes"
        return f"{gate} refused: {cycle['refused']}"
    if state == "partial" or cycle.get("partial_reason"):
        return f"partial: {cycle.get('partial_reason') or 'listing incomplete'}"
    if state == "busy" or cycle.get("busy"):
        lag = lag_of(cycle)
        since = (
            f" since {_when(cycle['busy_since'])} (not synced for {duration(lag.seconds)})"
            if cycle.get("busy_since") and lag
            else ""
        )
        return f"store busy{since}" + (f": {cycle['error']}" if cycle.get("error") else "")
    return f"{state}: {cycle['error']}" if cycle.get("error") else state


def _counts(cycle: dict[str, Any]) -> str:
    if not cycle:
        return ""
    return f"{cycle.get('added', 0)}/{cycle.get('changed', 0)}/{cycle.get('removed', 0)}"


def status_report(paths: Paths, scope: Scope | None = None) -> dict[str, Any]:
    """``collect_status`` as `memsync status` shows it: a wildcard provider's scopes folded
    into it, or with SCOPE, that one scope's providers alone."""
    from memsync.orchestration.scopes.views import fold_scopes, only_scope

    report = collect_status(paths)
    if scope is not None:
        only_scope(report, scope)
    else:
        fold_scopes(report)
    return report


SCOPES_SHOWN = 50  # a team's scopes the page draws at once; the rest come a page at a time


def page_status(paths: Paths) -> dict[str, Any]:
    """What the status page polls: ``status_report`` (a team folded into its provider), each
    provider's per-scope figures cut to its first ``SCOPES_SHOWN`` scopes. A thousand scopes
    made 2 MB every five seconds and a table of 3,000 rows; ``scope_page`` serves the rest."""
    report = status_report(paths)
    for name, entry in report["providers"].items():
        if "scope_count" in entry and entry.get("state") is None:
            entry["state"] = cycle_state(entry.get("last_cycle"), name=name)
        scopes: dict[str, int] = entry.get("scopes") or {}
        if len(scopes) <= SCOPES_SHOWN:
            continue
        shown = sorted(scopes)[:SCOPES_SHOWN]
        entry["scopes"] = {label: scopes[label] for label in shown}
        hidden = entry.get("hidden_scopes") or {}
        entry["hidden_scopes"] = {label: hidden[label] for label in shown if label in hidden}
    return report


def scope_page(
    paths: Paths, provider: str, *, offset: int = 0, limit: int = SCOPES_SHOWN, attention: bool
) -> dict[str, Any]:
    """One page of a team provider's scopes, in label order: each scope's figures, state and
    outbox; ``attention``: only the scopes whose last cycle was not ok or whose writes fail."""
    from memsync.base.scopes import split_scoped_name

    report = collect_status(paths)
    rows = []
    for name, entry in report["providers"].items():
        split = split_scoped_name(name)
        if split is None or split[0] != provider:
            continue
        cycle = entry.get("last_cycle") or {}
        outbox = entry.get("outbox") or {}
        state = cycle_state(entry.get("last_cycle"), name=name)
        needs = (state or {}).get("kind") != "ok" or outbox.get("failed") or outbox.get("dead")
        if attention and not needs:
            continue
        rows.append(
            {
                "scope": split[1].label,
                "records": entry.get("records", 0),
                "hidden": entry.get("hidden", 0),
                "state": state,
                "finished_at": cycle.get("finished_at"),
                "added": cycle.get("added", 0),
                "changed": cycle.get("changed", 0),
                "removed": cycle.get("removed", 0),
                "outbox": outbox,
            }
        )
    rows.sort(key=lambda row: str(row["scope"]))
    offset = max(0, offset)
    return {
        "provider": provider,
        "total": len(rows),
        "offset": offset,
        "limit": limit,
        "scopes": rows[offset : offset + max(1, limit)],
    }
