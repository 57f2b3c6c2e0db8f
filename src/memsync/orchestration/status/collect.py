"""The status report as plain data (`status --json`), from the config, the locks and staging.

Config, daemon, providers, outbox, conflicts, backups, cutover readiness, and what the stores
take on disk (``disk``: bytes and growth a day, per provider with store files).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memsync.base.dream import Dream
from memsync.base.errors import MemsyncError
from memsync.base.exclude import Exclusion
from memsync.base.lock import cycle_lock, is_locked, read_daemon_info
from memsync.base.paths import Paths
from memsync.base.records import is_expired
from memsync.base.scopes import Scope, split_scoped_name
from memsync.config import Config, load_config
from memsync.orchestration.backups import newest_backups
from memsync.orchestration.disk import disk_growth
from memsync.orchestration.scopes.report import discovery_line, incomplete_discoveries
from memsync.orchestration.scopes.views import ScopeFold, fold_scopes, only_scope
from memsync.orchestration.status.cutover import NO_OUTBOX, cutover_readiness, verify_summary
from memsync.orchestration.status.cycle_state import cycle_state
from memsync.orchestration.status.times import seconds_between
from memsync.orchestration.status.webhooks import webhook_entry
from memsync.providers import not_served
from memsync.staging import StagingStore


def collect_status(paths: Paths, *, fold: bool = False) -> dict[str, Any]:
    """The status report; ``fold``: each configured wildcard provider's scopes folded into it
    (``fold_scopes``) as staging is read, so a team's thousands of scopes are never held
    whole (``status_report``, the page)."""
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
            "outbox": dict(NO_OUTBOX),
        }
    folds = _Folds(configured if fold else ())
    report["disk"] = {}  # per provider with store files: bytes on disk, growth a day
    if paths.database.exists():
        try:
            with StagingStore.open(paths.database, create=False, reading=True) as store:
                _from_store(store, report, folds)
                if config is not None:
                    report["cutover"] = cutover_readiness(store, config)
                    report["verify"] = verify_summary(report["cutover"], config)
                    report["disk"] = _disk(store, config)
        except MemsyncError as exc:
            report["database"]["error"] = str(exc)
    elif config is not None:
        report["disk"] = _disk(None, config)
    if fold:
        folds.into(report)
        fold_scopes(report)  # scopes of providers the config no longer names
    return report


def _disk(store: StagingStore | None, config: Config) -> dict[str, Any]:
    return {name: growth.as_dict() for name, growth in disk_growth(store, config).items()}


def status_report(paths: Paths, scope: Scope | None = None) -> dict[str, Any]:
    """``collect_status`` as `memsync status` shows it: a wildcard provider's scopes folded
    into it, or with SCOPE, that one scope's providers alone."""
    if scope is None:
        return collect_status(paths, fold=True)
    report = collect_status(paths)
    only_scope(report, scope)
    return report


class _Folds:
    """The scopes of each configured provider, folded as staging is read (``ScopeFold``)."""

    def __init__(self, configured: Iterable[str]) -> None:
        self.by_base = {name: ScopeFold() for name in configured}
        self._split: dict[str, tuple[ScopeFold, str] | None] = {}
        self._labels: dict[str, str] = {}  # a scope as staging names spell it -> its label
        self._rows: dict[str, Any] = {}

    def of(self, name: str) -> tuple[ScopeFold, str] | None:
        """The fold a staging NAME goes into, and its scope's label; None: a row of its own.
        A configured provider's name with a scope in brackets is folded (as staging's
        ``cycle_groups`` sums it); a scope that does not parse keeps its spelling as label."""
        if not self.by_base:
            return None
        if name not in self._split:
            base, _, spelled = name.partition("[")
            fold = self.by_base.get(base)
            if fold is None or len(spelled) < 2 or not spelled.endswith("]"):
                self._split[name] = None
                return None
            label = self._labels.get(spelled)
            if label is None:
                split = split_scoped_name(name)  # each scope parsed once, not once a provider
                label = spelled[:-1] if split is None else split[1].label
                self._labels[spelled] = label
            self._split[name] = (fold, label)
        return self._split[name]

    def row(self, name: str) -> Any:
        """NAME's scope row in its fold (made the first time), or None: a row of its own."""
        if name in self._rows:  # a scope is met once per table status reads
            return self._rows[name]
        found = self.of(name)
        row = self._rows[name] = None if found is None else found[0].row(name, found[1])
        return row

    def into(self, report: dict[str, Any]) -> None:
        for base, fold in self.by_base.items():
            if fold.rows:
                fold.into(report["providers"][base])


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
            "outbox": dict(NO_OUTBOX),
        }
    entry: dict[str, Any] = report["providers"][name]
    return entry


def _hidden(dated: Any) -> str | None:
    """Why a store does not serve these records although memsync keeps them, if it does not
    ("expired", "retired": the store type's own rule, ``providers.not_served``)."""
    dream = Dream.of({"lifecycle_state": dated.lifecycle_state, "replaced_by": dated.replaced_by})
    return not_served(dated.type, expired=is_expired(dated.expiration_date), dream=dream)


def _from_store(store: StagingStore, report: dict[str, Any], folds: _Folds) -> None:
    counts = store.status_counts
    for count in counts.records_by_scope():
        row = folds.row(count.provider)
        if row is not None:
            row.records += count.records
            continue
        entry = _provider_entry(report, count.provider)
        entry["records"] += count.records
        entry["scopes"][count.scope_key] = count.records
    for dated in counts.maybe_hidden_by_scope():
        # Hidden is not deleted: the mirror keeps such a memory, its store no longer serves
        # it. Counted apart, so "records" is what the store serves.
        why = _hidden(dated)
        if why is None:
            continue
        row = folds.row(dated.provider)
        if row is not None:
            row.records -= dated.records
            row.hidden += dated.records
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
    for group in store.providers.cycle_groups(folds.by_base):
        longest = max((durations.get(run) or 0.0 for run in group.run_ids), default=0.0)
        folds.by_base[group.base].cycles.add_group(group, longest)
    for name, last_cycle, summed in store.providers.folded_last_cycles(folds.by_base):
        if summed:  # in its group above
            folds.row(name)
            continue
        cycle = json.loads(last_cycle) if last_cycle else None
        if cycle is not None:
            cycle["duration_s"] = durations.get(cycle.get("run_id"))
        folded = folds.of(name)
        if folded is not None:
            fold, label = folded
            if cycle is not None:
                fold.cycle(name, label, cycle)
            else:
                fold.row(name, label)
            continue
        entry = _provider_entry(report, name)
        entry["last_cycle"] = cycle
        entry["state"] = cycle_state(cycle, name=name)
    for outbox in counts.outbox_needing_work():
        report["outbox"][outbox.state] += outbox.actions
        if folds.row(outbox.provider) is None:  # a scope's own outbox is not folded
            _provider_entry(report, outbox.provider)["outbox"][outbox.state] = outbox.actions
    report["outbox"]["dead_actions"] = [action._asdict() for action in counts.dead_actions(20)]
    report["conflicts"]["open"] = store.conflicts.count_open()
    report["rollbacks"] = store.rollbacks.counts()
    for name, count in report["rollbacks"].items():
        row = folds.row(name)
        if row is not None:
            row.rolled_back = count
            continue
        _provider_entry(report, name)["rolled_back"] = count
    report["discovery"] = last_discovery(store, report["providers"])
    running = bool(report["daemon"].get("running"))
    for registration in store.webhooks.all():
        if registration.provider in report["providers"]:
            entry = _provider_entry(report, registration.provider)
            entry["webhooks"] = webhook_entry(registration, daemon_running=running)
    run = store.runs.latest()
    if run:
        report["last_run"] = {
            "id": run.id,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "status": run.status,
            "duration_s": seconds_between(run.started_at, run.finished_at),
        }


def last_discovery(store: StagingStore, configured: dict[str, Any]) -> dict[str, Any]:
    """What the newest run's discovery found per configured wildcard source, each with the
    warning a person must read while it is not complete ("N users found, more may exist")."""
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


def _run_durations(store: StagingStore) -> dict[int, float | None]:
    """How long each provider's last cycle (the whole run it was part of) took, in seconds."""
    return {
        run.id: seconds_between(run.started_at, run.finished_at)
        for run in store.runs.spans_of_last_cycles()
    }


def _daemon(paths: Paths) -> dict[str, Any]:

    return read_daemon_info(paths)


def _cycle_lock(paths: Paths) -> dict[str, Any]:
    """Whether a sync cycle (the daemon's or a manual one) holds the cycle lock right now."""
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
