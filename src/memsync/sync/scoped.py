"""One cycle over wildcard scopes: discover them, then sync each scope as a cycle of its own.

A layer above the engine, which stays unaware of scopes. Each cycle:

1. **discover** the scopes of every source that can (``providers.discovery``), and add the
   scopes staging knows from earlier cycles;
2. for each scope, **bind** every provider to it — ``mem0`` becomes ``mem0[user_id=alice]``,
   a mnem path template becomes that scope's store, a pmm-dir its scope's file — and run the
   engine on those alone (``build_engine(scoped=True)``), so links never cross scopes;
3. record one run for all of them, and report each scope.

A scope staging knows but discovery no longer finds is not "delete everything": it is synced
like any other, its source lists nothing, and the mirror's gate refuses to infer deletes from
an empty listing of a provider that held memories. The report says it is no longer found.

Handles are released between scopes (the engine closes what it opened at the end of each
scope's cycle), so one mnem store is open at a time; a Mem0 library store is opened once for
discovery and shared by every scope's binding.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from memsync.config import Config
from memsync.errors import MemsyncError, ProviderBusy
from memsync.providers.base import Listing, Provider, WriteOp, WriteResult
from memsync.providers.discovery import Discovery, discover_scopes
from memsync.records import Outgoing, Record, utc_now_iso
from memsync.scopes import (
    MEM0_TYPES,
    HostileScope,
    Scope,
    fill_template,
    fixed_keys,
    is_template,
    scoped_config_keys,
    scoped_name,
    split_scoped_name,
)
from memsync.staging import StagingStore
from memsync.sync.cycle import end_shared_run, finish_run, start_shared_run
from memsync.sync.from_config import build_engine, topology_of
from memsync.sync.report import (
    MAX_LISTED,
    CycleReport,
    ProviderOutcome,
    ProviderState,
    SyncOptions,
)

log = logging.getLogger(__name__)


@dataclass
class ScopeOutcome:
    """How one scope's cycle went, for `sync --json` and the log."""

    scope: Scope
    providers: list[str] = field(default_factory=list)
    state: ProviderState = ProviderState.OK
    discovered: bool = True  # False: known from an earlier cycle, no longer discovered
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope.as_dict(),
            "state": str(self.state),
            "discovered": self.discovered,
            "providers": self.providers,
            "error": self.error,
        }


@dataclass
class ScopedCycleReport(CycleReport):
    """A cycle report whose providers are scoped names, with each scope's outcome."""

    scopes: dict[str, ScopeOutcome] = field(default_factory=dict)
    discovery: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        code = super().exit_code
        if code == 0 and any(s.state == ProviderState.ERROR for s in self.scopes.values()):
            return 1
        return code

    def quiet_names(self, *, shown: int = 20) -> set[str]:
        """Provider names a person need not read: those of ok scopes, when there are many."""
        if len(self.scopes) <= shown:
            return set()
        return {n for s in self.scopes.values() if s.state == ProviderState.OK for n in s.providers}

    def scope_lines(self) -> list[str]:
        """What a person reads about the scopes: discovery, each scope in trouble, a count."""
        lines = []
        for name, found in self.discovery.items():
            if found.get("error"):
                lines.append(f"{name}: {found['state']}: {found['error']}")
            else:
                note = f" (partial: {found['note']})" if found.get("note") else ""
                lines.append(f"{name}: discovered {found['scopes']} scope(s){note}")
        for label, scope in self.scopes.items():
            if scope.state not in (ProviderState.OK, ProviderState.SKIPPED):
                error = scope.error or ""
                if error.startswith(f"scope {label}: "):
                    error = error[len(f"scope {label}: ") :]
                lines.append(f"scope {label}: {scope.state}: {error}".rstrip(": "))
        counts = Counter(s.state for s in self.scopes.values())
        lines.append(
            f"scopes: {len(self.scopes)} ("
            + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
            + ")"
        )
        return lines

    def as_dict(self) -> dict[str, Any]:
        data = super().as_dict()
        data["exit_code"] = self.exit_code
        data["scopes"] = {label: s.as_dict() for label, s in self.scopes.items()}
        data["discovery"] = self.discovery
        return data


class Unavailable(Provider):
    """A provider bound to a scope whose store could not be opened this cycle (busy, down).

    It keeps the real provider's identity (so the mirror is not reset) and fails on open
    with the original error, so each scope reports it without waiting on it again.
    """

    def __init__(self, inner: Provider, error: MemsyncError) -> None:
        super().__init__(inner.name)
        self.inner = inner
        self.error = error
        self.type = inner.type  # type: ignore[misc]
        self.family = inner.family  # type: ignore[misc]
        self.capabilities = inner.capabilities  # type: ignore[misc]

    def open(self) -> None:
        raise self.error

    def identity(self) -> str:
        return self.inner.identity()

    def scope_key(self) -> str:
        return self.inner.scope_key()

    def listing(self, cursor: str | None = None) -> Listing:
        raise self.error

    def get(self, provider_id: str) -> Record | None:
        raise self.error

    def create(self, item: Any) -> Record:
        raise self.error

    def update(self, provider_id: str, item: Any) -> Record:
        raise self.error

    def delete(self, provider_id: str) -> None:
        raise self.error


class InScope(Provider):
    """A provider bound to one scope, whose memories staging keys by scope as well as origin.

    Staging keeps one agreed version per memory key (``link_state``), shared by every
    provider. Two scopes may well hold memories with the same origin: agents writing their
    own mnem stores name nodes alike (``profile``), foreign PMM files number their records
    from 1. Keyed by origin alone, alice deleting her ``profile`` would mark bob's deleted.
    So inside staging each key carries its scope (``[user_id=alice]mnem:profile``), and the
    scope is taken off again at the provider's edge: stores see the origin markers they
    always did, and a memory's key never crosses scopes.
    """

    def __init__(self, inner: Provider, scope: Scope) -> None:
        super().__init__(inner.name)
        self.inner = inner
        self.prefix = f"[{scope.label}]"
        self.type = inner.type  # type: ignore[misc]
        self.family = inner.family  # type: ignore[misc]
        self.capabilities = inner.capabilities  # type: ignore[misc]

    def _outside(self, item: Outgoing) -> Outgoing:
        if not item.origin.startswith(self.prefix):
            return item
        return dataclasses.replace(item, origin=item.origin[len(self.prefix) :])

    def open(self) -> None:
        self.inner.open()

    def close(self) -> None:
        self.inner.close()

    def identity(self) -> str:
        return self.inner.identity()

    def scope_key(self) -> str:
        return self.inner.scope_key()

    def describe_scope(self) -> dict[str, Any]:
        return self.inner.describe_scope()

    def origin_of(self, record: Record) -> str:
        return self.prefix + self.inner.origin_of(record)

    def check(self) -> str:
        return self.inner.check()

    def listing(self, cursor: str | None = None) -> Listing:
        return self.inner.listing(cursor)

    def get(self, provider_id: str) -> Record | None:
        return self.inner.get(provider_id)

    def create(self, item: Outgoing) -> Record:
        return self.inner.create(self._outside(item))

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self.inner.update(provider_id, self._outside(item))

    def delete(self, provider_id: str) -> None:
        self.inner.delete(provider_id)

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        asked = {op.key: op for op in ops}
        outside = [
            dataclasses.replace(op, item=self._outside(op.item)) if op.item is not None else op
            for op in ops
        ]
        for result in self.inner.write_many(outside):
            yield WriteResult(asked[result.op.key], record=result.record, error=result.error)


class ScopeBinder:
    """Builds the providers of one scope from the configured (wildcard) ones."""

    def __init__(self, config: Config, bases: Mapping[str, Provider]) -> None:
        self.config = config
        self.bases = dict(bases)
        self.keys = scoped_config_keys(config.providers)
        self.unavailable: dict[str, MemsyncError] = {}

    def bind_all(self, scope: Scope) -> dict[str, Provider]:
        """Every provider bound to ``scope``; HostileScope when a template refuses its keys."""
        bound: dict[str, Provider] = {}
        for name, base in self.bases.items():
            provider: Provider = InScope(self.bind(name, base, scope), scope)
            if name in self.unavailable:
                provider = Unavailable(provider, self.unavailable[name])
            bound[provider.name] = provider
        return bound

    def bind(self, name: str, base: Provider, scope: Scope) -> Provider:
        entry = self.config.providers[name]
        scoped = scoped_name(name, scope)
        if entry.type in MEM0_TYPES:
            values = {**fixed_keys(entry), **scope.as_dict()}
            own = getattr(base, "bound_to", None)  # a provider class may bind itself
            if callable(own):
                bound: Provider = own(scoped, values)
                return bound
            return self._bind_mem0(name, scoped, base, values)
        if is_template(entry):
            from memsync.providers.mnem_on_demand import OnDemandMnemProvider

            assert entry.type == "mnem"
            return OnDemandMnemProvider(
                scoped,
                fill_template(entry.path, scope, provider=name),
                create=entry.create,
                config_name=name,
                scope_label=scope.label,
                branch=entry.branch,
                scope_key=scope.pmm_key,
                busy_timeout=entry.busy_timeout,
                sdk=getattr(base, "sdk", None),
            )
        if entry.type == "pmm-dir":
            from memsync.providers.pmm_dir import PmmDirProvider

            return PmmDirProvider(
                scoped,
                entry.path,
                scope_key=scope.pmm_key,
                max_content_bytes=self.config.pmm.max_content_bytes,
            )
        raise MemsyncError(f"providers.{name}: a {entry.type} provider cannot be bound to a scope")

    def _bind_mem0(
        self, name: str, scoped: str, base: Provider, values: dict[str, str]
    ) -> Provider:
        from memsync.providers import FACTORIES
        from memsync.providers.mem0_http import Mem0HttpProvider

        entry = self.config.providers[name]
        if entry.type == "mem0-oss" and getattr(base, "memory", None) is not None:
            from memsync.providers.mem0_oss import Mem0OssProvider

            assert isinstance(base, Mem0OssProvider)
            # Shares the Memory opened once for discovery: one store handle for all scopes.
            return Mem0OssProvider.from_memory(
                scoped,
                base.memory,
                values,
                mem0_config=base.mem0_config,
                embedder=base.embedder,
                telemetry=base.telemetry,
                mem0_dir=base.mem0_dir,
                busy_timeout=base.busy_timeout,
            )
        if isinstance(base, Mem0HttpProvider):
            return _http_bound(base, scoped, values)
        module_name, _, function = FACTORIES[entry.type].partition(":")
        factory = getattr(importlib.import_module(module_name), function)
        provider: Provider = factory(
            scoped, entry.model_copy(update={"scope": values}), self.config
        )
        return provider


def _http_bound(base: Any, name: str, scope: Mapping[str, str]) -> Provider:
    """The HTTP provider of one scope: the configured one's settings (key, endpoint, transport),
    its own scope and name, and an HTTP client of its own, made on first use."""
    bound = copy.copy(base)
    bound.name = name
    bound.scope = base.scope_ids(scope)
    bound._http = None
    if hasattr(bound, "_features"):
        bound._features = None
    assert isinstance(bound, Provider)
    return bound


def run_scoped_cycle(
    config: Config,
    store: StagingStore,
    bases: Mapping[str, Provider],
    options: SyncOptions,
    *,
    only_scopes: Iterable[Scope] | None = None,
) -> ScopedCycleReport:
    """One run over every scope (or ``only_scopes``), each scope an engine cycle of its own."""
    run_id = start_shared_run(store, options)
    report = ScopedCycleReport(run_id, options.dry_run, utc_now_iso())
    binder = ScopeBinder(config, bases)
    with contextlib.ExitStack() as handles:
        discovered, complete = _discover(config, binder, report, handles)
        known = known_scopes(store, config)
        wanted = set(only_scopes) if only_scopes is not None else None
        for scope in sorted(discovered | known):
            if wanted is not None and scope not in wanted:
                continue
            outcome = ScopeOutcome(scope, discovered=scope in discovered or not complete)
            report.scopes[scope.label] = outcome
            if options.stop is not None and options.stop.is_set():
                outcome.state = ProviderState.SKIPPED
                report.interrupted = True
                continue
            _sync_scope(config, store, binder, scope, options, run_id, report, outcome)
    report.finished_at = utc_now_iso()
    finish_run(store, report)
    end_shared_run(store, run_id)
    return report


def _discover(
    config: Config,
    binder: ScopeBinder,
    report: ScopedCycleReport,
    handles: contextlib.ExitStack,
) -> tuple[set[Scope], bool]:
    """Scopes found by every source that can list them; False when one could not see all."""
    topology = topology_of(config)
    found: set[Scope] = set()
    complete = True
    for name, base in binder.bases.items():
        entry = config.providers[name]
        source = entry.type in (*MEM0_TYPES, "pmm-dir") and topology.is_source(name)
        shared = entry.type == "mem0-oss"  # one Memory for every scope, source or not
        if not source and not shared:
            continue
        try:
            base.open()
        except MemsyncError as exc:
            binder.unavailable[name] = exc
            report.discovery[name] = {
                "state": "busy" if isinstance(exc, ProviderBusy) else "error",
                "error": str(exc),
            }
            complete = complete and not source
            log.warning("%s: %s", name, exc)
            continue
        handles.callback(base.close)
        if not source:
            continue
        try:
            discovery = discover_scopes(base, binder.keys, fixed_keys(entry))
        except MemsyncError as exc:
            report.discovery[name] = {"state": "error", "error": str(exc)}
            report.providers[name] = ProviderOutcome(
                name, state=ProviderState.ERROR, error=str(exc)
            )
            complete = False
            log.warning("%s: %s", name, exc)
            continue
        report.discovery[name] = _discovery_dict(discovery)
        complete = complete and discovery.complete
        found |= discovery.scopes
    return found, complete


def _discovery_dict(discovery: Discovery) -> dict[str, Any]:
    return {
        "state": "ok" if discovery.complete else "partial",
        "scopes": len(discovery.scopes),
        "complete": discovery.complete,
        "note": discovery.note,
    }


def known_scopes(store: StagingStore, config: Config) -> set[Scope]:
    """Scopes earlier cycles synced for the configured providers (from staging)."""
    keys = scoped_config_keys(config.providers)
    scopes: set[Scope] = set()
    for row in store.conn.execute("SELECT name FROM providers WHERE name LIKE '%[%]'"):
        split = split_scoped_name(row[0])
        if split is not None and split[0] in config.providers and split[1].keys == keys:
            scopes.add(split[1])
    return scopes


def _sync_scope(
    config: Config,
    store: StagingStore,
    binder: ScopeBinder,
    scope: Scope,
    options: SyncOptions,
    run_id: int,
    report: ScopedCycleReport,
    outcome: ScopeOutcome,
) -> None:
    try:
        providers = binder.bind_all(scope)
    except HostileScope as exc:
        outcome.state, outcome.error = ProviderState.ERROR, str(exc)
        log.warning("%s", exc)
        return
    except MemsyncError as exc:
        outcome.state, outcome.error = ProviderState.ERROR, f"scope {scope.label}: {exc}"
        log.warning("%s", outcome.error)
        return
    outcome.providers = list(providers)
    entries = {scoped_name(n, scope): config.providers[n] for n in binder.bases}
    scoped_config = config.model_copy(
        update={
            "providers": entries,
            "sync": config.sync.model_copy(
                update={"active": scoped_name(config.sync.active, scope)}
            ),
        }
    )
    scoped_options = SyncOptions(
        only=[scoped_name(n, scope) for n in options.only] if options.only else None,
        dry_run=options.dry_run,
        force_delete=options.force_delete,
        full=options.full,
        retry_dead=options.retry_dead,
        stop=options.stop,
    )
    engine = build_engine(scoped_config, store, providers, scoped=True)
    sub = engine.run_cycle(scoped_options, run_id=run_id)
    _merge(report, sub)
    outcome.state = _scope_state(sub)
    errors = [f"{n}: {o.error}" for n, o in sub.providers.items() if o.error]
    refused = [f"{n}: {why}" for n, why in sub.refusals.items()]
    if refused and not outcome.discovered:
        refused.insert(0, "no longer discovered; treated as an empty listing")
    outcome.error = "; ".join(refused + errors) or None


def _scope_state(sub: CycleReport) -> ProviderState:
    states = {o.state for o in sub.providers.values()}
    for state in (
        ProviderState.REFUSED,
        ProviderState.ERROR,
        ProviderState.BUSY,
        ProviderState.PARTIAL,
    ):
        if state in states:
            return state
    if sub.failures:
        return ProviderState.ERROR
    return ProviderState.SKIPPED if states == {ProviderState.SKIPPED} else ProviderState.OK


def _merge(report: ScopedCycleReport, sub: CycleReport) -> None:
    report.providers.update(sub.providers)
    report.planned_total += sub.planned_total
    room = MAX_LISTED - len(report.planned)
    if room > 0:
        report.planned.extend(sub.planned[:room])
    report.conflicts.extend(sub.conflicts)
    for kind, count in sub.replayed.items():
        report.replayed[kind] += count
    report.failures.extend(sub.failures)
    report.waiting += sub.waiting
    report.interrupted = report.interrupted or sub.interrupted


__all__ = [
    "ScopeBinder",
    "ScopeOutcome",
    "ScopedCycleReport",
    "known_scopes",
    "run_scoped_cycle",
]
