"""What a sync cycle was asked to do (``SyncOptions``) and what it did (``CycleReport``).

The report is what `memsync sync` prints, `sync --json` emits (``as_dict``), the daemon logs
and the runs table keeps. Its entries are typed here; ``as_dict`` is their one JSON shape.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from memsync.base.errors import ProviderError, RefusedError
from memsync.base.history import HistoryReport
from memsync.base.write_kind import WriteKind
from memsync.engine.failures import ProviderFailure, provider_failures
from memsync.engine.mirror import MirrorResult
from memsync.engine.plan import Action
from memsync.engine.provider_state import USABLE as USABLE  # re-exported with ProviderState:
from memsync.engine.provider_state import ProviderState as ProviderState  # read with a report

MAX_LISTED = 1000  # actions listed one by one in a report; the rest are counted


ConflictState = Literal["open", "resolved"]


@dataclass
class SyncOptions:
    only: list[str] | None = None  # --provider: mirror and write only these (and the active)
    dry_run: bool = False
    force_delete: bool = False
    full: bool = False  # list incremental providers in full
    retry_dead: bool = False
    stop: threading.Event | None = None  # set by SIGTERM: finish the action in flight, stop
    # The providers whose change a hint reported: listed first, and when their listings find
    # nothing new and no memory is left to reconcile, the others are not opened at all
    lead: list[str] | None = None


@dataclass
class ProviderOutcome:
    name: str
    state: ProviderState = ProviderState.OK
    mirror: MirrorResult | None = None
    error: str | None = None
    written: int = 0
    failed: int = 0
    replanned: int = 0  # writes held back: the target changed after the mirror
    adopted: int = 0  # records linked by content to a copy another provider already held
    seconds: float = 0.0  # time spent listing and writing this provider
    exit_code: int | None = None  # of an error state; None: a provider error (5)
    history: HistoryReport | None = None  # a new store that began with its memories' past

    def __post_init__(self) -> None:
        self.state = ProviderState(self.state)  # a plain "busy" from a caller becomes the enum

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "state": str(self.state),
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }
        if self.mirror:
            data.update(self.mirror.as_dict())
        data.update({"written": self.written, "failed": self.failed, "adopted": self.adopted})
        if self.replanned:
            data["replanned"] = self.replanned
        if self.history is not None:
            data["history"] = self.history.as_dict()
        return data


class _Entry:
    """A report entry also reads like its JSON form (``entry["state"]``), as entries did when
    they were dicts; code in memsync uses the attributes, which mypy checks."""

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.as_dict().get(key, default)


@dataclass(frozen=True, slots=True)
class PlannedEntry(_Entry):
    """One planned action as the report lists it: a write, or an adoption (no write)."""

    action: WriteKind | Literal["adopt"]
    memory: str
    provider: str
    source: str | None  # "from": the provider whose copy is written (or adopted)
    provider_id: str | None

    @classmethod
    def of(cls, action: Action) -> PlannedEntry:
        return cls(action.kind, action.link_id, action.target, action.source, action.provider_id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": str(self.action),
            "memory": self.memory,
            "provider": self.provider,
            "from": self.source,
            "provider_id": self.provider_id,
        }


@dataclass(frozen=True, slots=True)
class ConflictEntry(_Entry):
    """A conflict a plan met: settled by the policy, or open until `memsync resolve`."""

    id: int | None  # None in a dry run (nothing recorded)
    link_id: str
    providers: list[str]
    policy: str
    winner: str | None
    state: ConflictState
    kept_as_copies: list[str]
    rolled_back: str | None = None  # a rollback: the store that went back in time

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "link_id": self.link_id,
            "providers": self.providers,
            "policy": self.policy,
            "winner": self.winner,
            "state": self.state,
            "kept_as_copies": self.kept_as_copies,
            "rolled_back": self.rolled_back,
        }


@dataclass(frozen=True, slots=True)
class FailureEntry(_Entry):
    """A write that failed this cycle: retried later, or parked as dead."""

    provider: str
    action: WriteKind
    link_id: str
    error: str
    dead: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "action": str(self.action),
            "link_id": self.link_id,
            "error": self.error,
            "dead": self.dead,
        }


@dataclass
class CycleReport:
    run_id: int
    dry_run: bool
    started_at: str
    finished_at: str | None = None
    providers: dict[str, ProviderOutcome] = field(default_factory=dict)
    planned: list[PlannedEntry] = field(default_factory=list)  # the first MAX_LISTED
    planned_total: int = 0
    conflicts: list[ConflictEntry] = field(default_factory=list)
    replayed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: list[FailureEntry] = field(default_factory=list)
    waiting: int = 0  # actions held back by retry backoff or parked as dead
    interrupted: bool = False
    provider_notices: list[ProviderFailure] = field(default_factory=list)  # report_failure

    def report_failure(
        self, provider: str, reason: str, *, exit_code: int = ProviderError.exit_code
    ) -> None:
        """A failure of ``provider`` as a whole, beyond its outcome and its writes' (a circuit
        breaker that stopped writing to it): printed once, with the others (``failures``)."""
        self.provider_notices.append(ProviderFailure(provider, reason, exit_code=exit_code))

    def provider_failures(self) -> list[ProviderFailure]:
        """Every failure of this cycle, one per provider and reason (``engine/failures.py``)."""
        return provider_failures(self)

    def add_planned(self, entry: PlannedEntry) -> None:
        """Count every action; keep the first MAX_LISTED for the report (memory stays flat)."""
        self.planned_total += 1
        if len(self.planned) < MAX_LISTED:
            self.planned.append(entry)

    @property
    def refusals(self) -> dict[str, str]:
        return {
            n: o.mirror.refused for n, o in self.providers.items() if o.mirror and o.mirror.refused
        }

    @property
    def exit_code(self) -> int:
        """6 refused deletes, else 5 a provider failed (2 its config), else 1 something
        failed, was busy or is in an open conflict, else 0."""
        if self.refusals:
            return RefusedError.exit_code
        worst = max((f.exit_code for f in self.provider_failures()), default=0)
        if worst > 1:
            return worst
        if worst or self.failures or any(c.state == "open" for c in self.conflicts):
            return 1
        return 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "providers": {n: o.as_dict() for n, o in self.providers.items()},
            "actions": [entry.as_dict() for entry in self.planned],
            "actions_total": self.planned_total,
            "replayed": {str(kind): count for kind, count in self.replayed.items()},
            "failures": [failure.as_dict() for failure in self.failures],
            "provider_failures": [failure.as_dict() for failure in self.provider_failures()],
            "conflicts": [conflict.as_dict() for conflict in self.conflicts],
            "refusals": self.refusals,
            "waiting": self.waiting,
            "interrupted": self.interrupted,
            "exit_code": self.exit_code,
        }
