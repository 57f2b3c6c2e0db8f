"""Run one cycle from a config: build the providers, take the cycle lock, run the engine.

The one place the CLI (`memsync sync`, `switch`, `resolve`, `repair`) and the daemon start a
cycle from, so they agree on locking and on what a provider that cannot be built means.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from memsync.base.errors import MemsyncError
from memsync.base.lock import cycle_lock
from memsync.base.paths import Paths
from memsync.base.scopes import Scope
from memsync.config import Config
from memsync.config.scoping import scoped_config_keys
from memsync.engine.from_config import build_engine
from memsync.engine.report import CycleReport, ProviderOutcome, ProviderState, SyncOptions
from memsync.orchestration.disk import sample_disk
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.providers import Provider, build_provider
from memsync.providers.held import HeldStores
from memsync.staging import StagingStore

log = logging.getLogger(__name__)


def build_all(
    config: Config, *, held: HeldStores | None = None
) -> tuple[dict[str, Provider], dict[str, str]]:
    """Every configured provider that can be built here, and why the others cannot (``held``:
    the daemon's held stores, lent to the providers it builds)."""
    providers: dict[str, Provider] = {}
    broken: dict[str, str] = {}
    for name in config.providers:
        try:
            providers[name] = build_provider(name, config, held=held)
        except MemsyncError as exc:
            broken[name] = str(exc)
    return providers, broken


class CycleObserver(Protocol):
    """Told, under the cycle lock, as a cycle starts, once it has released each provider it
    opened (by its name in the cycle, with the provider's ``left_token``), and as each scope's
    cycle ends; the daemon's watcher and probes (``orchestration/live/triggers.py``) keep their
    notes so."""

    def cycle_starting(self, store: StagingStore) -> None: ...

    def released(self, name: str, token: str | None) -> None: ...

    def scope_done(self, scope: Scope | None, report: CycleReport) -> None: ...


def run_sync(
    paths: Paths,
    config: Config,
    options: SyncOptions,
    *,
    lock_wait: float = 30.0,
    only_scopes: Iterable[Scope] | None = None,
    observer: CycleObserver | None = None,
    held: HeldStores | None = None,
) -> CycleReport:
    """One cycle under the cycle lock; a provider that cannot be built is reported, not fatal.

    ``only_scopes``: on a config with wildcard scopes, only these scopes are synced.
    ``held``: the daemon's held stores (its mnem providers borrow their store there).
    """
    providers, broken = build_all(config, held=held)
    if config.sync.active in broken:
        raise MemsyncError(
            f"the active backend {config.sync.active!r} cannot be used: "
            f"{broken[config.sync.active]}"
        )
    lock = cycle_lock(paths)
    lock.acquire(timeout=lock_wait)
    try:
        paths.ensure()
        with StagingStore.open(paths.database) as store:
            if observer is not None:
                observer.cycle_starting(store)
            report: CycleReport
            if scoped_config_keys(config.providers):
                report = run_scoped_cycle(
                    config,
                    store,
                    providers,
                    options,
                    only_scopes=only_scopes,
                    on_scope_done=observer.scope_done if observer is not None else None,
                    on_release=observer.released if observer is not None else None,
                )
            else:
                engine = build_engine(config, store, providers)
                engine.on_release = observer.released if observer is not None else None
                report = engine.run_cycle(options)
                if observer is not None:
                    observer.scope_done(None, report)
            if not options.dry_run:
                sample_disk(store, config)  # what memsync's commits cost (orchestration/disk)
    finally:
        lock.release()
    for name, reason in broken.items():
        report.providers[name] = ProviderOutcome(name, state=ProviderState.ERROR, error=reason)
    return report
