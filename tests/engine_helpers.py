"""Build an engine over in-memory providers, for the sync tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsync.config import SyncConfig
from memsync.engine.cycle import Engine, EngineSettings
from memsync.engine.from_config import engine_settings
from memsync.engine.plan import Topology
from memsync.engine.report import CycleReport, SyncOptions
from memsync.providers.base import Provider
from memsync.providers.memory import MemoryProvider, MemoryStore
from memsync.staging import StagingStore


@dataclass(frozen=True)
class EngineConfig:
    """What a test gives the engine: the star of providers and the ``[sync]`` settings."""

    topology: Topology
    settings: EngineSettings

    def engine(self, store: StagingStore, providers: Mapping[str, Provider]) -> Engine:
        return Engine(self.topology, providers, store, self.settings)


def config_for(directions: dict[str, str], active: str, **sync: Any) -> EngineConfig:
    """Providers' directions around ``active``; ``sync``: ``[sync]`` values, parsed as the
    config file's are (``max_delete="100%"``)."""
    section = SyncConfig(active=active, **sync)
    topology = Topology(active, dict(directions), section.conflict)  # type: ignore[arg-type]
    return EngineConfig(topology, engine_settings(section))


class World:
    """Providers, one staging store, and a way to run cycles like `memsync sync` does."""

    def __init__(
        self,
        tmp: Path,
        directions: dict[str, str],
        active: str,
        client_ids: dict[str, bool] | None = None,
        **sync: object,
    ) -> None:
        self.config = config_for(directions, active, **sync)
        self.db_path = tmp / "staging.db"
        self.stores = {name: MemoryStore() for name in directions}
        client_ids = client_ids or {}
        self.providers = {
            name: MemoryProvider(
                name,
                self.stores[name],
                client_ids=client_ids.get(name, False),
                family=name,
                page_size=7,
            )
            for name in directions
        }

    def sync(self, **options: object) -> CycleReport:
        with StagingStore.open(self.db_path) as store:
            engine = self.config.engine(store, dict(self.providers))
            return engine.run_cycle(SyncOptions(**options))  # type: ignore[arg-type]

    def contents(self, name: str) -> list[str]:
        return self.providers[name].contents()


class Crash(BaseException):
    """memsync dies mid-cycle (a BaseException: nothing may catch it)."""


class PowerCut:
    """An in-process kill: once it fires, nothing more reaches the staging database.

    Raising an exception alone is not a crash: the engine's ``finally`` blocks would still
    record the outcomes of writes that landed, so the case a real kill creates (a write done,
    its outcome lost) would never happen. While ``armed``, every staging transaction after
    the cut raises ``Crash`` too, so those blocks change nothing, as if the process had died.
    (The crash matrix kills real processes with SIGKILL; this is for in-memory worlds.)
    """

    def __init__(self) -> None:
        self.fired = False

    def fire(self) -> None:
        self.fired = True
        raise Crash()

    @contextlib.contextmanager
    def armed(self) -> Iterator[PowerCut]:
        real = StagingStore.transaction
        cut = self

        @contextlib.contextmanager
        def transaction(store: StagingStore) -> Iterator[object]:
            if cut.fired:
                raise Crash()
            with real(store) as conn:
                yield conn

        StagingStore.transaction = transaction  # type: ignore[assignment,method-assign]
        try:
            yield self
        except Crash:
            if not self.fired:
                raise
        finally:
            StagingStore.transaction = real  # type: ignore[method-assign]
