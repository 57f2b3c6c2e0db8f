"""Re-centring the star: making another provider the active backend without losing a write.

A cycle around the current active backend runs first, so nothing pending is left behind; only
when it finished cleanly is ``[sync] active`` rewritten, and a cycle around the new one runs.
Links survive the switch, so no memory is duplicated or lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths
from memsync.config import Config
from memsync.config.edit import write_active
from memsync.engine.report import CycleReport, SyncOptions
from memsync.orchestration.runner import run_sync


class SwitchRefused(MemsyncError):
    """The cycle around the current active backend did not finish cleanly: nothing switched."""

    def __init__(self, active: str, before: CycleReport) -> None:
        super().__init__(
            f"the last cycle around {active} did not finish cleanly; fix that first "
            "(nothing was switched)"
        )
        self.before = before


@dataclass(frozen=True, slots=True)
class Switched:
    previous: str  # the active backend before the switch
    after: CycleReport | None  # the cycle around the new one; None when it already was active
    before: CycleReport | None = None  # the cycle around the old one, run first


def switch_active(
    paths: Paths, config: Config, name: str, *, announce: Callable[[str], None] | None = None
) -> Switched:
    """Make NAME the active backend: a cycle, the config rewritten, a cycle around NAME.

    ``announce`` is told each step as it starts: the first cycle can be long (it carries
    every write still pending around the old backend), and a user should know why.
    """
    say = announce or (lambda _line: None)
    config.provider(name)
    previous = config.sync.active
    if previous == name:
        return Switched(previous, None)
    say(
        f"1/2: syncing around {previous} (the active backend now) first, so nothing pending is lost"
    )
    before = run_sync(paths, config, SyncOptions())
    if before.exit_code != 0:
        raise SwitchRefused(previous, before)
    switched = write_active(paths.config_file, name)
    written = sum(before.replayed.values())
    say(
        f"2/2: that cycle wrote {written}; [sync] active = {name!r} in the config now; "
        f"syncing around {name}"
    )
    return Switched(previous, run_sync(paths, switched, SyncOptions()), before)
