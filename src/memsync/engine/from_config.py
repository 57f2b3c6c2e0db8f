"""The engine for a configuration: its topology and settings, taken from a ``Config``.

The one place a ``Config`` becomes an ``Engine`` (``build_engine``), used by the CLI, the
daemon, the scope layer and the demo; the engine itself never sees the whole config.
"""

from __future__ import annotations

from collections.abc import Mapping

from memsync.config import Config, SyncConfig
from memsync.engine.cycle import Engine, EngineSettings
from memsync.engine.plan import Topology
from memsync.providers.base import Provider
from memsync.staging.store import StagingStore


def engine_settings(sync: SyncConfig) -> EngineSettings:
    """The engine's settings from the ``[sync]`` section."""
    return EngineSettings(
        max_delete=sync.max_delete,
        max_delete_count=sync.max_delete_count,
        full_scan_interval=sync.full_scan_interval,
        max_attempts=sync.max_attempts,
        adopt=sync.adopt != "off",
    )


def topology_of(config: Config) -> Topology:
    """The star around the active backend, as the configuration draws it."""
    return Topology(
        active=config.sync.active,
        directions={name: entry.direction for name, entry in config.providers.items()},
        policy=config.sync.conflict,
    )


def build_engine(
    config: Config,
    store: StagingStore,
    providers: Mapping[str, Provider],
    *,
    scoped: bool = False,
) -> Engine:
    """The engine for ``config`` over these providers (see ``Engine`` for ``scoped``)."""
    return Engine(
        topology_of(config), providers, store, engine_settings(config.sync), scoped=scoped
    )
