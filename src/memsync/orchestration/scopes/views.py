"""Scopes as status, log and verify show them: folded into their provider, or one scope alone.

Staging knows a wildcard provider by one name per scope (``mem0[user_id=alice]``). ``status``
folds those into the configured provider with a scope count and summed figures; ``status
--scope``, ``log --scope`` and ``verify --scope`` pick one scope's names instead.
"""

from __future__ import annotations

from collections import Counter
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
    if not cycles:
        return None
    states = Counter(str(c.get("state", "")) for c in cycles)
    worst = min(states, key=lambda s: WORST_FIRST.index(s) if s in WORST_FIRST else 0)
    folded: dict[str, Any] = {
        "state": worst,
        "states": dict(states),
        "finished_at": max(str(c.get("finished_at") or "") for c in cycles) or None,
        "duration_s": max((c.get("duration_s") or 0.0) for c in cycles),
        "complete": all(c.get("complete") for c in cycles),
        "run_id": max(int(c.get("run_id") or 0) for c in cycles),
    }
    for key in ("added", "changed", "removed", "listed", "written", "failed", "excluded"):
        folded[key] = sum(int(c.get(key) or 0) for c in cycles)
    for key in ("synced_at", "unsynced_since", "busy_since"):  # the scope furthest behind
        held = [str(c[key]) for c in cycles if c.get(key)]
        if held:
            folded[key] = min(held)
    outside = [c["outside"] for c in cycles if isinstance(c.get("outside"), int)]
    if outside:  # one store's count, which each of its scopes reports: not a sum
        folded["outside"] = max(outside)
    copies: Counter[str] = Counter()
    for cycle in cycles:
        copies.update({split_base(k): v for k, v in (cycle.get("excluded_copies") or {}).items()})
    if copies:
        folded["excluded_copies"] = dict(copies)
    troubled = [c for c in cycles if c.get("state") not in ("ok", "skipped")]
    if troubled:
        what = ", ".join(f"{n} {s}" for s, n in sorted(states.items()) if s != "ok")
        first = troubled[0]
        folded["error"] = f"{len(troubled)} of {len(cycles)} scopes need attention ({what}); " + (
            f"first: {first.get('refused') or first.get('error') or first.get('partial_reason')}"
        )
        if worst == "refused":
            folded["refused"] = folded["error"]
        if worst == "partial":
            folded["partial_reason"] = folded["error"]
    return folded


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
