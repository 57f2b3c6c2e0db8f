"""What a provider's mirror did in a run (``MirrorResult``) and may delete (``DeleteLimits``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memsync.base.records import Skipped


@dataclass
class DeleteLimits:
    percent: float
    count: int
    force: bool = False

    def exceeded(self, deletes: int, total: int) -> bool:
        """Over the count, or (from two deletes up) over the share of the provider's records."""
        if self.force or deletes == 0:
            return False
        if deletes > self.count:
            return True
        return deletes >= 2 and deletes > total * self.percent / 100.0


@dataclass
class MirrorResult:
    provider: str
    mode: str = "full"
    added: int = 0
    changed: int = 0
    removed: int = 0
    listed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    complete: bool = False
    partial_reason: str | None = None
    refused: str | None = None
    refused_by: str | None = None  # the gate: "max_delete" (deletes) or "rollbacks"
    rolled_back: int = 0  # memories this listing found gone back in time (see module doc)
    reset: bool = False
    excluded: int = 0  # records its exclude covers (memsync.base.exclude)
    excluded_copies: dict[str, int] = field(default_factory=dict)  # made before the rule
    outside: int | None = None  # records outside the store's layout (Listing.outside)
    undated: int = 0  # versions listed whose time the store could not tell (a walk cut short)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "listed": self.listed,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "rolled_back": self.rolled_back,
            "skipped": [s.as_dict() for s in self.skipped],
            "complete": self.complete,
            "partial_reason": self.partial_reason,
            "refused": self.refused,
            "refused_by": self.refused_by,
            "reset": self.reset,
            **({"excluded": self.excluded} if self.excluded else {}),
            **({"excluded_copies": self.excluded_copies} if self.excluded_copies else {}),
            **({"outside": self.outside} if self.outside is not None else {}),
            **({"undated": self.undated} if self.undated else {}),
        }
