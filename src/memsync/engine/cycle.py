"""One sync cycle: mirror every provider, plan every memory that needs it, replay the plan.

The engine's public entry is ``Engine.run_cycle``. Its steps, each safe to interrupt:

1. **mirror** each provider into staging (``mirror.Mirror``), page by page;
2. **adopt** copies of one text that providers already held in common (``adopt``);
3. find the **dirty** memories by comparing mirror, bases and agreed versions in SQL
   (``staging/dirty.py``: state, not events, so a crash or a dry run never makes a change
   invisible to the next cycle);
4. **plan** each dirty memory with the pure ``plan.plan_link`` and record the decision
   (``decisions``);
5. **replay** the actions through the outbox, recording each outcome before the next
   (``replay``).

The engine takes what it uses: a ``Topology``, the providers, the staging store and
``EngineSettings``; ``from_config.build_engine`` makes one from a configuration.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from memsync.base.errors import MemsyncError, ProviderBusy
from memsync.base.faults import fault_point
from memsync.base.records import parse_instant, utc_now_iso
from memsync.engine.adopt import adopt
from memsync.engine.ahead import Added, WritesAhead
from memsync.engine.decisions import plan_dirty
from memsync.engine.history import bring_history
from memsync.engine.mirror import (
    DeleteLimits,
    Mirror,
    check_identity,
    load_cursor,
    save_cycle_summary,
)
from memsync.engine.plan import Topology
from memsync.engine.replay import Replay, supersede_stale
from memsync.engine.report import (
    USABLE,
    CycleReport,
    PlannedEntry,
    ProviderOutcome,
    ProviderState,
    SyncOptions,
)
from memsync.providers.base import Provider
from memsync.staging.store import StagingStore

log = logging.getLogger(__name__)

OUTBOX_RUNS_KEPT = 50  # finished actions of this many recent runs stay for inspection


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The sync settings a cycle uses (``[sync]`` in the config; these are its defaults)."""

    max_delete: float = 25.0  # percent of a provider's records one listing may delete
    max_delete_count: int = 100  # ...and how many
    full_scan_interval: float = 3600.0  # seconds between full listings of incremental ones
    max_attempts: int = 5  # attempts at a write before it is parked as dead
    adopt: bool = True  # link copies of one text that providers already held in common


class Engine:
    """Runs sync cycles over a set of providers arranged in a ``Topology``."""

    def __init__(
        self,
        topology: Topology,
        providers: Mapping[str, Provider],
        store: StagingStore,
        settings: EngineSettings | None = None,
        *,
        scoped: bool = False,
    ) -> None:
        """``scoped``: these providers are one scope among others in the same staging store
        (``scopes.cycle``); the cycle then looks only at memories they hold or held."""
        self.topology = topology
        self.providers = dict(providers)
        self.store = store
        self.settings = settings or EngineSettings()
        self.scoped = scoped
        # Told a provider's name and ``left_token()`` once the cycle has released it (the
        # daemon notes the store's files as memsync left them: closing a handle changes them).
        self.on_release: Callable[[str, str | None], None] | None = None

    # the cycle ----------------------------------------------------------------------------

    def run_cycle(
        self, options: SyncOptions | None = None, *, run_id: int | None = None
    ) -> CycleReport:
        """One cycle; each provider is opened once, on first use, and closed at the end.

        With ``run_id`` the cycle is part of a run the caller started and finishes (one run
        for all scopes, ``start_shared_run``); the providers' summaries are still saved here.
        A dry run of its own runs on a scratch copy of the staging store (``scratch_copy``):
        whatever it reads or records, the next real cycle does what it would have done.
        """
        options = options or SyncOptions()
        if options.dry_run and run_id is None and not self.store.scratch:
            with self.store.scratch_copy() as scratch:
                rehearsal = Engine(
                    self.topology, self.providers, scratch, self.settings, scoped=self.scoped
                )
                rehearsal.on_release = self.on_release
                return rehearsal.run_cycle(options)
        with contextlib.ExitStack() as self._handles:
            self._handles.callback(gc.unfreeze)  # last, after the stores are closed
            self._opened: set[str] = set()
            return self._cycle(options, run_id)

    def _use(self, provider: Provider) -> Provider:
        """Open a provider for the rest of this cycle (may raise ProviderBusy)."""
        if provider.name not in self._opened:
            provider.keep_commits_in(self.store.store_commits)
            provider.open()
            _set_aside_the_heap()
            self._opened.add(provider.name)
            self._handles.callback(self._release, provider)
        return provider

    def _release(self, provider: Provider) -> None:
        """Close PROVIDER, then tell ``on_release`` what it held as memsync let go."""
        token = provider.left_token() if self.on_release is not None else None
        provider.close()
        if self.on_release is not None:
            self.on_release(provider.name, token)

    def _cycle(self, options: SyncOptions, joined_run: int | None = None) -> CycleReport:
        run_id = joined_run if joined_run is not None else _start_run(self.store)
        report = CycleReport(run_id, options.dry_run, utc_now_iso())
        selected = self._selected(options)
        settings = self.settings
        limits = DeleteLimits(settings.max_delete, settings.max_delete_count, options.force_delete)
        for name in self.providers:
            report.providers[name] = ProviderOutcome(name)
        lead = [n for n in self.providers if n in set(options.lead or ()) & selected]
        rest = [n for n in self.providers if n not in lead]
        writes_ahead = WritesAhead.for_cycle(
            self.store,
            self.providers,
            self.topology,
            set() if options.dry_run else selected,
            self._use,
        )
        for name in lead + rest:
            outcome = report.providers[name]
            if name == next(iter(rest), None) and lead and self._nothing_to_do(lead, report):
                selected = set(lead)  # the hint was memsync's own write, or came to nothing
            if name not in selected or _stopping(options):
                outcome.state = ProviderState.SKIPPED
                report.interrupted = report.interrupted or _stopping(options)
                continue
            started = time.monotonic()
            provider, added = self.providers[name], writes_ahead.on_added(name)
            self._mirror_one(provider, run_id, limits, options, outcome, added)
            outcome.seconds += time.monotonic() - started
            fault_point("cycle:after-mirror")
        if not _stopping(options):
            bring_history(self, run_id, report, options)  # a new store begins with its past
        unavailable = frozenset(n for n, o in report.providers.items() if o.state not in USABLE)
        topology = Topology(
            self.topology.active, self.topology.directions, self.topology.policy, unavailable
        )
        if joined_run is None:  # a shared run does this once, in start_shared_run
            supersede_stale(self.store, run_id, options)
        if not _stopping(options):
            self._plan(run_id, topology, report, options)
        fault_point("cycle:after-plan")
        if not options.dry_run and not _stopping(options):
            writes_ahead.planned(self.store, run_id)
            replay = Replay(
                self.store,
                self.providers,
                self.topology,
                max_attempts=settings.max_attempts,
                use=self._use,
                scoped=self.scoped,
            )
            replay.run(run_id, topology, report, options)
        report.finished_at = utc_now_iso()
        self._finish_run(report, record_run=joined_run is None)
        if joined_run is None:
            _prune_outbox(self.store, run_id)
        return report

    def _selected(self, options: SyncOptions) -> set[str]:
        if not options.only:
            return set(self.providers)
        return set(options.only) | {self.topology.active}

    def _finish_run(self, report: CycleReport, *, record_run: bool = True) -> None:
        for name, outcome in report.providers.items():
            if outcome.state == ProviderState.SKIPPED:
                continue
            summary = outcome.as_dict()
            summary["skipped"] = len(summary.get("skipped", []))
            summary["finished_at"] = report.finished_at
            summary["run_id"] = report.run_id
            summary["busy"] = outcome.state == ProviderState.BUSY
            summary["last_ok_at"] = _last_ok_at(self.store, name, report, outcome)
            save_cycle_summary(self.store, name, summary)
        if record_run:
            finish_run(self.store, report)

    # mirror -------------------------------------------------------------------------------

    def _mirror_one(
        self,
        provider: Provider,
        run_id: int,
        limits: DeleteLimits,
        options: SyncOptions,
        outcome: ProviderOutcome,
        on_added: Added | None = None,
    ) -> None:
        try:
            reset = check_identity(self.store, provider)
            cursor, full_scan_at = load_cursor(self.store, provider.name)
            if not self._incremental_allowed(provider, cursor, full_scan_at, options):
                cursor = None
            listing = self._use(provider).listing(cursor)
            write_back = not options.dry_run and self.topology.is_receiver(provider.name)
            mirror = Mirror(
                self.store, provider, run_id, limits, options.stop, write_back, on_added
            )
            result = mirror.run(listing)
            result.reset = reset
            outcome.mirror = result
            if result.refused:
                outcome.state = ProviderState.REFUSED
            elif not result.complete:
                outcome.state = ProviderState.PARTIAL
        except ProviderBusy as exc:
            outcome.state, outcome.error = ProviderState.BUSY, str(exc)
        except MemsyncError as exc:
            outcome.state, outcome.error = ProviderState.ERROR, str(exc)
            outcome.exit_code = exc.exit_code
        if outcome.error:  # reported once, with the cycle's other failures (engine/failures.py)
            log.debug("%s: %s", provider.name, outcome.error)

    def mirror_again(
        self, provider: Provider, run_id: int, options: SyncOptions, outcome: ProviderOutcome
    ) -> None:
        """List PROVIDER again in this cycle: it was just written outside the plan (a new
        store that received its history), and the plan must see what it holds now."""
        settings = self.settings
        limits = DeleteLimits(settings.max_delete, settings.max_delete_count, options.force_delete)
        self._mirror_one(provider, run_id, limits, options, outcome)

    def _nothing_to_do(self, lead: list[str], report: CycleReport) -> bool:
        """Whether the LEAD providers' listings (a hint's) found nothing new and no memory of
        these providers waits to be reconciled: then the other providers need not be opened."""
        for name in lead:
            outcome = report.providers[name]
            mirror = outcome.mirror
            if outcome.state != ProviderState.OK or mirror is None or mirror.reset:
                return False
            if mirror.added or mirror.changed or mirror.removed or mirror.rolled_back:
                return False
        with self.store.transaction():
            return self._mark_dirty() == 0

    def _incremental_allowed(
        self,
        provider: Provider,
        cursor: str | None,
        full_scan_at: str | None,
        options: SyncOptions,
    ) -> bool:
        if options.full or cursor is None or not provider.capabilities.incremental:
            return False
        last_full = parse_instant(full_scan_at)
        if last_full is None:
            return False
        age = (datetime.now(UTC) - last_full).total_seconds()
        return age < self.settings.full_scan_interval

    # plan ---------------------------------------------------------------------------------

    def _plan(
        self, run_id: int, topology: Topology, report: CycleReport, options: SyncOptions
    ) -> None:
        if options.dry_run:
            # A dry run shows what adoption would link but keeps none of it: the relinks are
            # rolled back once the plan has been read (no network call runs meanwhile).
            with self.store.rehearsal():
                self._adopt(run_id, report)
                self._mark_dirty()
                plan_dirty(self.store, run_id, list(self.providers), topology, report, options)
            return
        with self.store.transaction():
            self._adopt(run_id, report)
            self._mark_dirty()
        fault_point("plan:adopted")
        plan_dirty(self.store, run_id, list(self.providers), topology, report, options)

    def _mark_dirty(self) -> int:
        receivers = [n for n in self.providers if self.topology.is_receiver(n)]
        own = list(self.providers) if self.scoped else None
        return self.store.dirty.mark(receivers, own=own)

    def _adopt(self, run_id: int, report: CycleReport) -> None:
        """Link what providers already held in common (``engine/adopt.py``), unless turned off."""
        if not self.settings.adopt:
            return
        result = adopt(self.store, self.providers, self.topology.active, run_id)
        for name, count in result.by_provider.items():
            if name in report.providers:
                report.providers[name].adopted += count
        for adoption in result.listed:
            report.add_planned(
                PlannedEntry(
                    "adopt",
                    adoption.link_id,
                    adoption.provider,
                    adoption.from_provider,
                    adoption.provider_id,
                )
            )
        report.planned_total += result.total - len(result.listed)


# the run row ------------------------------------------------------------------------------


def _set_aside_the_heap() -> None:
    """Keep Python's full garbage collections off what the cycle starts with, until it ends.

    A full collection walks every object the collector tracks. Once a store is open, nearly
    all of them are the imported libraries (Mem0's, Qdrant's, pydantic's) and the open store,
    which outlive the cycle: a first sync of 10k Mem0 memories spent 0.6 s in six full
    collections, mostly walking them (docs/performance.md). ``gc.freeze`` sets them aside;
    the cycle's ``gc.unfreeze`` hands them back when it ends, so whatever the cycle let go of
    (a closed store's cycles of references) is still collected then.
    """
    gc.freeze()


def start_shared_run(store: StagingStore, options: SyncOptions) -> int:
    """Start a run that several cycles join (one per scope, ``run_cycle(run_id=...)``).

    The run-wide steps happen once here (and in ``end_shared_run``), not once per cycle:
    each scans the outbox's older runs, which a thousand scopes would repeat.
    """
    run_id = _start_run(store)
    supersede_stale(store, run_id, options)
    return run_id


def end_shared_run(store: StagingStore, run_id: int) -> None:
    _prune_outbox(store, run_id)


def _last_ok_at(
    store: StagingStore, name: str, report: CycleReport, outcome: ProviderOutcome
) -> str | None:
    """When NAME last took part in a whole cycle that could carry its changes (this one, if
    it did; else what its previous summary said), for status and /metrics."""
    if outcome.state in USABLE and not report.dry_run and not report.interrupted:
        return report.finished_at
    previous = store.providers.last_cycle(name)
    found = json.loads(previous).get("last_ok_at") if previous else None
    return found if isinstance(found, str) else None


def finish_run(store: StagingStore, report: CycleReport) -> None:
    """Record how the run ended, with its report."""
    status = "ok" if report.exit_code == 0 else "attention"
    if report.interrupted:
        status = "interrupted"
    data = report.as_dict()
    summary = json.dumps(data, default=str)
    found = data.get("discovery")  # a scoped run that looked for scopes
    discovery = json.dumps(found, default=str) if isinstance(found, dict) else None
    with store.transaction():
        store.runs.finish(report.run_id, report.finished_at, status, summary, discovery)


def _start_run(store: StagingStore) -> int:
    with store.transaction():
        return store.runs.start(utc_now_iso(), os.getpid())


def _prune_outbox(store: StagingStore, run_id: int) -> None:
    """Forget finished actions of old runs (the journal keeps what they wrote)."""
    with store.transaction():
        store.outbox.prune(run_id - OUTBOX_RUNS_KEPT)


def _stopping(options: SyncOptions) -> bool:
    return options.stop is not None and options.stop.is_set()
