"""Rebuilding the staging database from the providers, after corruption or loss.

The old file is set aside, never deleted. Links come back from the origin markers memsync
wrote into every provider, so nothing is duplicated; what only the old database knew (the
journal, deletes not yet replayed) is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memsync.base.paths import Paths
from memsync.config import Config
from memsync.engine.report import CycleReport, SyncOptions
from memsync.orchestration.runner import run_sync
from memsync.staging.aside import set_aside


def rebuild_staging(
    paths: Paths, config: Config, *, on_set_aside: Callable[[Path], None] = lambda _: None
) -> CycleReport:
    """Set the database aside (``on_set_aside`` hears where, before the cycle starts) and run a
    full cycle that builds a new one."""
    aside = set_aside(paths.database)
    if aside is not None:
        on_set_aside(aside)
    return run_sync(paths, config, SyncOptions(full=True))
