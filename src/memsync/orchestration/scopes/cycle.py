"""One cycle over wildcard scopes: discover them, then sync each scope as a cycle of its own.

A layer above the engine, which stays unaware of scopes. Each cycle:

1. **discover** the scopes of every source that can (``Provider.discover``), and add the
   scopes staging knows from earlier cycles;
2. for each scope, **bind** every provider to it — ``mem0`` becomes ``mem0[user_id=alice]``,
   a mnem path template becomes that scope's store, a pmm-dir its scope's file — and run the
   engine on those alone (``build_engine(scoped=True)``), so links never cross scopes;
3. record one run for all of them, and report each scope.

A scope staging knows but discovery no longer finds is not "delete everything": it is synced
like any other, its source lists nothing, and the mirror's gate refuses to infer deletes from
an empty listing of a provider that held memories. The report says it is no longer found.

Handles are released between scopes (the engine closes what it opened at the end of each
scope's cycle), so one mnem store is open at a time; a provider whose one handle serves every
scope (``Provider.holds_every_scope``: a Mem0 library's store, a mnem store that holds every
scope in its namespaces) is opened once, before the scopes, shared by every scope's binding,
held for the run and released when it ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from memsync.base.errors import AuthError, MemsyncError, ProviderBusy
from memsync.base.records import utc_now_iso
from memsync.base.scopes import HostileScope, Scope, scoped_name, split_scoped_name
from memsync.config import Config
from memsync.config.scoping import fixed_keys, scoped_config_keys
from memsync.engine.cycle import end_shared_run, finish_run, start_shared_run
from memsync.engine.failures import without_name
from memsync.engine.from_config import build_engine, topology_of
from memsync.engine.report import (
    MAX_LISTED,
    CycleReport,
    ProviderOutcome,
    ProviderState,
    SyncOptions,
)
from memsync.orchestration.scopes.binding import ScopeBinder
from memsync.orchestration.scopes.discovery import discover_scopes
from memsync.orchestration.scopes.report import ScopedCycleReport, ScopeOutcome, scope_noun
from memsync.providers.base import Provider
from memsync.providers.discovery import Discovery
from memsync.staging import StagingStore

log = logging.getLogger(__name__)


def run_scoped_cycle(
    config: Config,
    store: StagingStore,
    bases: Mapping[str, Provider],
    options: SyncOptions,
    *,
    only_scopes: Iterable[Scope] | None = None,
    on_scope_done: Callable[[Scope, CycleReport], None] | None = None,
    on_release: Callable[[str, str | None], None] | None = None,
) -> ScopedCycleReport:
    """One run over every scope (or ``only_scopes``), each scope an engine cycle of its own.

    ``on_release(name, token)`` runs once a scope's cycle has released a provider it opened, and
    ``on_scope_done(scope, report)`` as each scope's cycle ends (the daemon's watcher notes
    what memsync left in each store, ``live/local_stores.py``). A dry run runs on a scratch copy
    of the staging store (see ``Engine.run_cycle``).
    """
    if options.dry_run and not store.scratch:
        with store.scratch_copy() as scratch:
            return run_scoped_cycle(
                config,
                scratch,
                bases,
                options,
                only_scopes=only_scopes,
                on_release=on_release,
                on_scope_done=on_scope_done,
            )
    run_id = start_shared_run(store, options)
    report = ScopedCycleReport(run_id, options.dry_run, utc_now_iso())
    binder = ScopeBinder(config, bases)
    with contextlib.ExitStack() as handles:
        for base in bases.values():  # last: what the scopes shared (an HTTP client) closes too
            handles.callback(base.close)
        wanted = set(only_scopes) if only_scopes is not None else None
        known = known_scopes(store, config, among=wanted)
        # A hinted cycle names its scopes: when staging knows them all, asking every source
        # which scopes it holds (GET /entities scans the whole server) would tell it nothing.
        find = wanted is None or not wanted <= known
        report.looked = find
        discovered, complete = _discover(config, binder, report, handles, find=find)
        order = [s for s in sorted(discovered | known) if wanted is None or s in wanted]
        _read_ahead(config, binder, order, options)
        for scope in order:
            outcome = ScopeOutcome(scope, discovered=scope in discovered or not complete)
            report.scopes[scope.label] = outcome
            if options.stop is not None and options.stop.is_set():
                outcome.state = ProviderState.SKIPPED
                report.interrupted = True
                continue
            sub = _sync_scope(
                config, store, binder, scope, options, run_id, report, outcome, on_release
            )
            if on_scope_done is not None and sub is not None:
                on_scope_done(scope, sub)
    report.finished_at = utc_now_iso()
    finish_run(store, report)
    end_shared_run(store, run_id)
    return report


def _read_ahead(
    config: Config, binder: ScopeBinder, order: list[Scope], options: SyncOptions
) -> None:
    """Let each remote source that can (a Mem0 server) read the scopes' memories a few ahead
    of the scopes' cycles, in their order: its listings then overlap the local work."""
    if len(order) < 2:
        return
    for name, base in binder.bases.items():
        if name in binder.unavailable:
            continue
        if options.only and name not in options.only and name != config.sync.active:
            continue
        base.read_ahead(order)


def _discover(
    config: Config,
    binder: ScopeBinder,
    report: ScopedCycleReport,
    handles: contextlib.ExitStack,
    *,
    find: bool = True,
) -> tuple[set[Scope], bool]:
    """Scopes found by every source that can list them; False when one could not see all.

    ``find`` False opens what the scopes share and asks no source: no scope found, and, since
    none was looked for, not complete (every known scope counts as still there).
    """
    topology = topology_of(config)
    found: set[Scope] = set()
    complete = True
    for name, base in binder.bases.items():
        source = base.discovers_scopes and topology.is_source(name)
        # One handle for every scope (a Mem0 library's Memory, one mnem store), source or not:
        # opened here, held for the run, released when it ends.
        if not source and not base.holds_every_scope:
            continue
        try:
            base.open()
        except MemsyncError as exc:
            binder.unavailable[name] = exc
            busy = isinstance(exc, ProviderBusy)
            report.discovery[name] = {"state": "busy" if busy else "error", "error": str(exc)}
            report.providers[name] = ProviderOutcome(
                name,
                state=ProviderState.BUSY if busy else ProviderState.ERROR,
                error=str(exc),
                exit_code=exc.exit_code,
            )
            complete = complete and not source
            log.debug("%s: %s", name, exc)  # each scope reports it; printed once (failures)
            continue
        handles.callback(base.close)
        if not source or not find:
            continue
        try:
            discovery = discover_scopes(base, binder.keys, fixed_keys(config.providers[name]))
        except MemsyncError as exc:
            report.discovery[name] = {"state": "error", "error": str(exc)}
            report.providers[name] = ProviderOutcome(
                name, state=ProviderState.ERROR, error=str(exc), exit_code=exc.exit_code
            )
            complete = False
            if isinstance(exc, AuthError):  # refused credentials: every scope would be too
                binder.unavailable[name] = exc
            log.debug("%s: %s", name, exc)  # printed once, with the other failures
            continue
        report.discovery[name] = _discovery_dict(discovery, binder.keys)
        complete = complete and discovery.complete
        found |= discovery.scopes
    return found, complete and find


def _discovery_dict(discovery: Discovery, keys: tuple[str, ...]) -> dict[str, Any]:
    return {
        "state": "ok" if discovery.complete else "partial",
        "scopes": len(discovery.scopes),
        "complete": discovery.complete,
        "note": discovery.note,
        "source": discovery.source,
        "noun": scope_noun(keys),
    }


def known_scopes(
    store: StagingStore, config: Config, *, among: set[Scope] | None = None
) -> set[Scope]:
    """Scopes earlier cycles synced for the configured providers (from staging); with
    ``among``, only which of those are (without parsing every scoped name staging holds)."""
    keys = scoped_config_keys(config.providers)
    if among is not None:
        names = set(store.providers.scoped_names())
        return {
            scope
            for scope in among
            if scope.keys == keys and any(scoped_name(n, scope) in names for n in config.providers)
        }
    scopes: set[Scope] = set()
    for name in store.providers.scoped_names():
        split = split_scoped_name(name)
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
    on_release: Callable[[str, str | None], None] | None = None,
) -> CycleReport | None:
    try:
        providers = binder.bind_all(scope)
    except HostileScope as exc:
        outcome.state, outcome.error = ProviderState.ERROR, str(exc)
        log.debug("%s", exc)  # the report's scope lines say it, once
        return None
    except MemsyncError as exc:
        outcome.state, outcome.error = ProviderState.ERROR, f"scope {scope.label}: {exc}"
        log.debug("%s", outcome.error)
        return None
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
        lead=[scoped_name(n, scope) for n in options.lead] if options.lead else None,
        dry_run=options.dry_run,
        force_delete=options.force_delete,
        full=options.full,
        retry_dead=options.retry_dead,
        stop=options.stop,
    )
    engine = build_engine(scoped_config, store, providers, scoped=True)
    engine.on_release = on_release
    sub = engine.run_cycle(scoped_options, run_id=run_id)
    _merge(report, sub)
    outcome.state = _scope_state(sub)
    errors = [f"{n}: {without_name(n, o.error)}" for n, o in sub.providers.items() if o.error]
    refused = [f"{n}: {without_name(n, why)}" for n, why in sub.refusals.items()]
    if refused and not outcome.discovered:
        refused.insert(0, "no longer discovered; treated as an empty listing")
    outcome.error = "; ".join(refused + errors) or None
    return sub


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
    report.provider_notices.extend(sub.provider_notices)
    report.waiting += sub.waiting
    report.interrupted = report.interrupted or sub.interrupted


__all__ = ["known_scopes", "run_scoped_cycle"]
