"""Scopes as status, log and verify show them: folded into their provider, or one scope alone.

Staging knows a wildcard provider by one name per scope (``mem0[user_id=alice]``). ``status``
folds those into the configured provider with a scope count and summed figures; ``status
--scope``, ``log --scope`` and ``verify --scope`` pick one scope's names instead.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.scopes import Scope, scoped_name, split_scoped_name
from memsync.config import Config
from memsync.config.scoping import (
    fixed_keys,
    is_template,
    scoped_config_keys,
    scoped_in_store,
    store_per_scope,
    wildcard_keys,
)
from memsync.engine.journal import log_entries
from memsync.orchestration.scopes.binding import ScopeBinder
from memsync.orchestration.scopes.discovery import discover_scopes
from memsync.orchestration.scopes.report import scope_noun
from memsync.providers import Provider, build_provider
from memsync.staging import StagingStore
from memsync.staging.providers import EARLIEST, SUMMED, CycleGroup

WORST_FIRST = ("refused", "error", "busy", "partial", "ok", "skipped")


def fold_scopes(report: dict[str, Any]) -> None:
    """Replace each provider's per-scope rows by one row: its scopes (label -> records),
    scope count, records and worst state."""
    providers: dict[str, Any] = report["providers"]
    grouped: dict[str, list[dict[str, Any]]] = {}
    for name in list(providers):
        split = split_scoped_name(name)
        if split is None or split[0] not in providers:
            continue
        row = providers.pop(name)
        row["scope_label"] = split[1].label
        grouped.setdefault(split[0], []).append(row)
    for base, rows in grouped.items():
        entry = providers[base]
        entry["scopes"] = {r["scope_label"]: r.get("records", 0) for r in rows}
        entry["scope_count"] = len(rows)
        entry["records"] = sum(r.get("records", 0) for r in rows)
        entry["hidden"] = sum(r.get("hidden", 0) for r in rows)
        rolled_back = sum(r.get("rolled_back", 0) for r in rows)
        if rolled_back:
            entry["rolled_back"] = rolled_back
        entry["hidden_scopes"] = {r["scope_label"]: r["hidden"] for r in rows if r.get("hidden")}
        entry["last_cycle"] = _folded_cycle([r["last_cycle"] for r in rows if r.get("last_cycle")])


def _folded_cycle(cycles: list[dict[str, Any]]) -> dict[str, Any] | None:
    folding = FoldedCycles()
    for cycle in cycles:
        folding.add(cycle)
    return folding.result()


class FoldedCycles:
    """A team's last cycles folded into its provider's, one cycle at a time: at thousands of
    scopes, status and the page read each scope's cycle and let it go (issue 40: 15,000 of
    them held at once were most of a 1.5 s ``/api/status`` and a 60 MB peak)."""

    def __init__(self) -> None:
        self.count = 0
        self.states: Counter[str] = Counter()
        self.finished_at = ""
        self.duration_s = 0.0
        self.complete = True
        self.run_id = 0
        self.sums = dict.fromkeys(SUMMED, 0)
        self.behind: dict[str, str] = {}
        self.outside: int | None = None
        self.copies: Counter[str] = Counter()
        self.troubled = 0
        self.first_trouble: tuple[int, dict[str, Any]] | None = None  # (its row, its why)

    def add(self, cycle: dict[str, Any], row: int | None = None) -> None:
        """One scope's last cycle; ROW orders the scopes (the first one in trouble is named),
        by default the order cycles are added in."""
        self.count += 1
        self.states[str(cycle.get("state", ""))] += 1
        self.finished_at = max(self.finished_at, str(cycle.get("finished_at") or ""))
        self.duration_s = max(self.duration_s, cycle.get("duration_s") or 0.0)
        self.complete = self.complete and bool(cycle.get("complete"))
        self.run_id = max(self.run_id, int(cycle.get("run_id") or 0))
        for key in SUMMED:
            self.sums[key] += int(cycle.get(key) or 0)
        for key in EARLIEST:
            if cycle.get(key):
                held = str(cycle[key])
                self.behind[key] = min(self.behind.get(key, held), held)
        if isinstance(cycle.get("outside"), int):
            self.outside = max(self.outside or 0, cycle["outside"])
        copies = cycle.get("excluded_copies") or {}
        self.copies.update({split_base(k): v for k, v in copies.items()})
        if cycle.get("state") not in ("ok", "skipped"):
            self.troubled += 1
            at = self.count if row is None else row
            if self.first_trouble is None or at < self.first_trouble[0]:
                why = {k: cycle.get(k) for k in ("refused", "error", "partial_reason")}
                self.first_trouble = (at, why)

    def add_group(self, group: CycleGroup, duration_s: float) -> None:
        """GROUP's cycles, summed by staging (``cycle_groups``): plain ones, none in trouble
        and no copies kept out, so what ``add`` would have made of each of them."""
        self.count += group.cycles
        self.states[group.state] += group.cycles
        self.finished_at = max(self.finished_at, group.finished_at or "")
        self.duration_s = max(self.duration_s, duration_s)
        self.complete = self.complete and group.complete
        self.run_id = max(self.run_id, group.run_id)
        for key in SUMMED:
            self.sums[key] += group.sums[key]
        for key, held in group.earliest.items():
            self.behind[key] = min(self.behind.get(key, held), held)
        if group.outside is not None:
            self.outside = max(self.outside or 0, group.outside)

    def result(self) -> dict[str, Any] | None:
        if not self.count:
            return None
        states = self.states
        worst = min(states, key=lambda s: WORST_FIRST.index(s) if s in WORST_FIRST else 0)
        folded: dict[str, Any] = {
            "state": worst,
            "states": dict(states),
            "finished_at": self.finished_at or None,
            "duration_s": self.duration_s,
            "complete": self.complete,
            "run_id": self.run_id,
            **self.sums,
        }
        for key in EARLIEST:  # the scope furthest behind
            if key in self.behind:
                folded[key] = self.behind[key]
        if self.outside is not None:  # one store's count, which each of its scopes reports
            folded["outside"] = self.outside
        if self.copies:
            folded["excluded_copies"] = dict(self.copies)
        if self.first_trouble is not None:
            first = self.first_trouble[1]
            what = ", ".join(f"{n} {s}" for s, n in sorted(states.items()) if s != "ok")
            folded["error"] = (
                f"{self.troubled} of {self.count} scopes need attention ({what}); "
                f"first: {first['refused'] or first['error'] or first['partial_reason']}"
            )
            if worst == "refused":
                folded["refused"] = folded["error"]
            if worst == "partial":
                folded["partial_reason"] = folded["error"]
        return folded


@dataclass
class _ScopeRow:
    label: str
    position: int  # rows in the order staging first named them, as ``fold_scopes`` takes them
    records: int = 0
    hidden: int = 0
    rolled_back: int = 0


class ScopeFold:
    """``fold_scopes`` for one configured provider, filled as staging is read: each scope is
    a few numbers, and its last cycle is folded in and let go."""

    def __init__(self) -> None:
        self.rows: dict[str, _ScopeRow] = {}  # by staging name, in the order first seen
        self.cycles = FoldedCycles()

    def row(self, name: str, label: str) -> _ScopeRow:
        """The row of staging NAME, whose scope's label is LABEL."""
        found = self.rows.get(name)
        if found is None:
            found = self.rows[name] = _ScopeRow(label, len(self.rows))
        return found

    def cycle(self, name: str, label: str, cycle: dict[str, Any]) -> None:
        self.cycles.add(cycle, row=self.row(name, label).position)

    def into(self, entry: dict[str, Any]) -> None:
        """The folded row, as ``fold_scopes`` writes it."""
        rows = list(self.rows.values())
        entry["scopes"] = {r.label: r.records for r in rows}
        entry["scope_count"] = len(rows)
        entry["records"] = sum(r.records for r in rows)
        entry["hidden"] = sum(r.hidden for r in rows)
        rolled_back = sum(r.rolled_back for r in rows)
        if rolled_back:
            entry["rolled_back"] = rolled_back
        entry["hidden_scopes"] = {r.label: r.hidden for r in rows if r.hidden}
        entry["last_cycle"] = self.cycles.result()


def split_base(name: str) -> str:
    """The configured provider a staging name belongs to (``mem0[user_id=a]`` -> ``mem0``)."""
    split = split_scoped_name(name)
    return name if split is None else split[0]


def only_scope(report: dict[str, Any], scope: Scope) -> None:
    """Keep only the rows of one scope (``status --scope``)."""
    providers: dict[str, Any] = report["providers"]
    kept = {}
    for name, entry in providers.items():
        split = split_scoped_name(name)
        if split is not None and split[1] == scope:
            base = providers.get(split[0], {})
            kept[name] = {
                **entry,
                "type": base.get("type", "?"),
                "direction": base.get("direction", "?"),
            }
    if not kept:
        raise MemsyncError(
            f"no scope {scope.label} in staging yet; `memsync status` lists how many scopes each "
            "provider has, and `memsync sync` discovers new ones"
        )
    report["providers"] = kept
    report["scope"] = scope.as_dict()


def scope_provider_names(
    store: StagingStore, scope: Scope, provider: str | None = None
) -> list[str]:
    """The staging names of one scope's providers (or of one provider in it)."""
    if provider is not None:
        return [scoped_name(provider, scope)]
    names = []
    for name in store.providers.scoped_names():
        split = split_scoped_name(name)
        if split is not None and split[1] == scope:
            names.append(name)
    if not names:
        raise MemsyncError(f"no scope {scope.label} in staging yet; run `memsync sync` first")
    return names


def provider_in_scope(config: Config, name: str, scope: Scope | None) -> Provider:
    """Provider NAME, bound to ``scope`` when the config has wildcard scopes."""
    keys = scoped_config_keys(config.providers)
    if not keys:
        if scope is not None:
            raise MemsyncError("--scope: no provider in the config has a wildcard scope")
        return build_provider(name, config)
    if scope is None:
        example = ",".join(f"{k}=VALUE" for k in keys)
        raise MemsyncError(f"providers.{name} is synced per scope; name one with --scope {example}")
    if scope.keys != keys:
        raise MemsyncError(
            f"--scope {scope.label}: the config's scopes are keyed by {', '.join(keys)}"
        )
    base = build_provider(name, config)
    return ScopeBinder(config, {name: base}).bind(name, base, scope)


def check_scoped(config: Config, name: str, provider: Provider) -> str | None:
    """What ``memsync check`` says of a provider synced per scope (None: its own check says
    it, a store with a namespace per scope counting them)."""
    entry = config.providers[name]
    keys = scoped_config_keys(config.providers)
    if not keys:
        return None
    if is_template(entry):  # a store per scope, none of its own to open: it says where
        return provider.check()
    if not provider.discovers_scopes or scoped_in_store(entry):
        return None
    found = discover_scopes(provider, keys, fixed_keys(entry))
    noun = scope_noun(keys)
    how = f" through {found.source}" if found.source else ""
    if not found.complete:
        raise IncompleteDiscovery(
            f"{len(found.scopes)} {noun} found, more may exist"
            + (f" ({found.note})" if found.note else "")
            + f"; {found.advice}"
        )
    also = f"; {found.note}" if found.note else ""
    return f"reachable, {len(found.scopes)} {noun} discovered{how}{also}"


class IncompleteDiscovery(MemsyncError):
    """A wildcard provider's discovery could not be shown to have seen every scope."""


def refuse_unscoped(config: Config, name: str, command: str) -> None:
    """A command that works on one scope cannot take a wildcard provider or a store template."""
    entry = config.provider(name)
    if wildcard_keys(entry) or store_per_scope(entry):
        keys = ", ".join(scoped_config_keys(config.providers))
        raise MemsyncError(
            f"providers.{name} is synced per scope ({keys}"
            f"); `memsync {command}` works on one provider with one scope: give it a config "
            "naming that scope, or use the per-scope pmm-dir backup"
        )


def log_in_scope(
    store: StagingStore,
    scope: Scope | None,
    *,
    provider: str | None = None,
    since: str | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """The change journal (``log_entries``), with SCOPE only that scope's providers' changes."""
    if scope is None:
        return log_entries(store, provider=provider, since=since, limit=limit)
    names = scope_provider_names(store, scope, provider)
    return log_entries(store, providers=names, since=since, limit=limit)
