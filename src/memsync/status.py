"""``memsync status``: one picture of config, daemon, providers, outbox, conflicts and backups.

Collected as plain data (the --json output) first, then rendered for a person. Never prints a
secret: only provider names, types and counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memsync.config import load_config
from memsync.errors import MemsyncError
from memsync.output import print_table, stdout
from memsync.paths import Paths
from memsync.staging import StagingStore


def collect_status(paths: Paths) -> dict[str, Any]:
    report: dict[str, Any] = {
        "config": {"path": str(paths.config_file), "ok": False, "error": None},
        "database": {"path": str(paths.database), "exists": paths.database.exists()},
        "daemon": _daemon(paths),
        "providers": {},
        "outbox": {"pending": 0, "failed": 0, "dead": 0},
        "conflicts": {"open": 0},
        "last_run": None,
        "last_backup": _last_backup(paths.backups_dir),
    }
    configured: dict[str, Any] = {}
    try:
        config = load_config(paths.config_file)
        report["config"]["ok"] = True
        report["config"]["active"] = config.sync.active
        configured = {
            name: {"type": entry.type, "direction": entry.direction}
            for name, entry in config.providers.items()
        }
    except MemsyncError as exc:
        report["config"]["error"] = str(exc)
    for name, info in configured.items():
        report["providers"][name] = {**info, "records": 0, "last_cycle": None}
    if paths.database.exists():
        try:
            with StagingStore.open(paths.database, create=False) as store:
                _from_store(store, report)
        except MemsyncError as exc:
            report["database"]["error"] = str(exc)
    return report


def _from_store(store: StagingStore, report: dict[str, Any]) -> None:
    conn = store.conn
    for row in conn.execute("SELECT provider, COUNT(*) AS n FROM records GROUP BY provider"):
        entry = report["providers"].setdefault(row["provider"], {"configured": False})
        entry["records"] = row["n"]
    for row in conn.execute("SELECT name, last_cycle FROM providers"):
        entry = report["providers"].setdefault(row["name"], {"configured": False})
        entry["last_cycle"] = json.loads(row["last_cycle"]) if row["last_cycle"] else None
    for row in conn.execute(
        "SELECT state, COUNT(*) AS n FROM outbox WHERE state IN ('pending', 'failed', 'dead') "
        "GROUP BY state"
    ):
        report["outbox"][row["state"]] = row["n"]
    report["outbox"]["dead_actions"] = [
        dict(r)
        for r in conn.execute(
            "SELECT id, provider, kind, link_id, attempts, last_error FROM outbox "
            "WHERE state = 'dead' ORDER BY id LIMIT 20"
        )
    ]
    report["conflicts"]["open"] = conn.execute(
        "SELECT COUNT(*) FROM conflicts WHERE state = 'open'"
    ).fetchone()[0]
    run = conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    if run:
        report["last_run"] = {
            "id": run["id"],
            "started_at": run["started_at"],
            "finished_at": run["finished_at"],
            "status": run["status"],
        }


def _daemon(paths: Paths) -> dict[str, Any]:
    from memsync.lock import read_daemon_info

    return read_daemon_info(paths)


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
    rows = []
    for name, info in sorted(report["providers"].items()):
        cycle = info.get("last_cycle") or {}
        rows.append(
            (
                name,
                info.get("type", "?"),
                info.get("direction", "?"),
                info.get("records", 0),
                cycle.get("finished_at", "never"),
                _cycle_state(cycle),
                _counts(cycle),
            )
        )
    print_table(
        "providers",
        ("name", "type", "direction", "mirrored", "last cycle", "state", "added/changed/removed"),
        rows,
    )
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
    backup = report["last_backup"]
    stdout.print(
        f"last backup: {backup['path']}" if backup else "last backup: none yet", markup=False
    )


def _cycle_state(cycle: dict[str, Any]) -> str:
    if not cycle:
        return ""
    parts = [cycle.get("state", "")]
    if cycle.get("busy"):
        parts.append("store busy")
    if cycle.get("partial_reason"):
        parts.append(f"partial: {cycle['partial_reason']}")
    if cycle.get("refused"):
        parts.append(f"refused: {cycle['refused']}")
    if cycle.get("error"):
        parts.append(f"error: {cycle['error']}")
    return "; ".join(p for p in parts if p)


def _counts(cycle: dict[str, Any]) -> str:
    if not cycle:
        return ""
    return f"{cycle.get('added', 0)}/{cycle.get('changed', 0)}/{cycle.get('removed', 0)}"
