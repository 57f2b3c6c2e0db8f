"""What the status page polls: the report with a team's scopes a page at a time, and the runs."""

from __future__ import annotations

import json
from typing import Any

from memsync.base.paths import Paths
from memsync.base.scopes import split_scoped_name
from memsync.orchestration.scopes.views import WORST_FIRST, split_base
from memsync.orchestration.status.collect import collect_status, status_report
from memsync.orchestration.status.cycle_state import cycle_state
from memsync.orchestration.status.times import seconds_between
from memsync.staging import StagingStore

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


def cycle_history(store: StagingStore, limit: int = 60) -> list[dict[str, Any]]:
    """The newest finished runs, oldest first: duration and each provider's +/~/- counts (a
    team's scopes summed into their provider, its worst state shown)."""
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
                "duration_s": seconds_between(run.started_at, run.finished_at),
                "dry_run": bool(summary.get("dry_run")),
                "providers": providers,
            }
        )
    return history
