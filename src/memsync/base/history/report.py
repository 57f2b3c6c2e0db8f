"""What a history import brought, how it grouped it, what it costs, and what it could not trust."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FOLDED = "folded"  # versions beyond a window's layer cap, left out (windows.py)


@dataclass
class HistoryReport:
    """One store's history import (or, in a dry run, its plan)."""

    source: str  # where Mem0's history was read
    written: bool = False  # the commits are in the store (False: a dry run, or not imported)
    not_imported: str | None = None  # why no history came along, when none did
    memories: int = 0  # memories with a past in the store (deleted ones included)
    versions: int = 0  # versions written (or planned)
    window: str | None = None  # the grouping chosen ("month")
    layer_cap: int | None = None  # versions per memory per window, when capped
    commits: int = 0  # history commits (the empty first and last ones not counted)
    predicted_bytes: int = 0
    baseline_bytes: int = 0  # the same store without history, predicted the same way
    budget: float = 0.0
    within_budget: bool = True
    reasons: dict[str, int] = field(default_factory=dict)  # memories by reason
    requests: int = 0  # requests made to read the history (a route per memory)
    store_bytes: int | None = None  # measured on disk once the store was let go
    write_seconds: float = 0.0  # writing the history's commits
    removal_seconds: float = 0.0  # of which removing deleted memories' nodes (mnem's rm)
    # the memories written at HEAD (by origin): what a copy that follows finds there already
    heads: set[str] = field(default_factory=set, repr=False)

    @property
    def predicted_ratio(self) -> float:
        return self.predicted_bytes / self.baseline_bytes if self.baseline_bytes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "written": self.written,
            "not_imported": self.not_imported,
            "memories": self.memories,
            "versions": self.versions,
            "window": self.window,
            "layer_cap": self.layer_cap,
            "commits": self.commits,
            "predicted_bytes": self.predicted_bytes,
            "baseline_bytes": self.baseline_bytes,
            "predicted_ratio": round(self.predicted_ratio, 2),
            "budget": self.budget,
            "within_budget": self.within_budget,
            "reasons": dict(sorted(self.reasons.items())),
            "requests": self.requests,
            "store_bytes": self.store_bytes,
            "write_seconds": round(self.write_seconds, 2),
            "removal_seconds": round(self.removal_seconds, 2),
        }

    def lines(self) -> list[str]:
        """The report in a few lines, as the CLI prints it."""
        if self.not_imported:
            return [f"history: not imported: {self.not_imported}"]
        verb = "imported" if self.written else "would import"
        cap = f", at most {self.layer_cap} version(s) a memory a window" if self.layer_cap else ""
        lines = [
            f"history: {verb} {self.versions} version(s) of {self.memories} memories from "
            f"{self.source}, in {self.commits} commit(s) by {self.window}{cap}",
            f"  store: {_mb(self.predicted_bytes)} predicted, {self.predicted_ratio:.1f}x the "
            f"{_mb(self.baseline_bytes)} without history (budget {self.budget:g}x)"
            + (f"; {_mb(self.store_bytes)} on disk" if self.store_bytes is not None else ""),
        ]
        if self.written:
            lines.append(
                f"  written in {self.write_seconds:.1f}s, {self.removal_seconds:.1f}s of it "
                "removing deleted memories (mnem 0.0.7's rm reads the whole store at each call)"
            )
        lines += [f"  {count} memories: {reason}" for reason, count in sorted(self.reasons.items())]
        return lines


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
