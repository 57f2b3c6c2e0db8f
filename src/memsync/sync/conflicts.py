"""Conflicts as `memsync conflicts` lists them and `memsync resolve` settles them.

One place for both, so the status page's buttons do exactly what the command line does.
"""

from __future__ import annotations

from typing import Any

from memsync.errors import MemsyncError
from memsync.staging import StagingStore


def list_conflicts(store: StagingStore, *, include_settled: bool = False) -> list[dict[str, Any]]:
    """Conflicts still waiting (open or being applied), or all of them, oldest first."""
    rows = store.conflicts.every() if include_settled else store.conflicts.waiting()
    return [row.as_dict() for row in rows]


def choose_winner(store: StagingStore, conflict_id: int, keep: str) -> None:
    """Record that KEEP's version wins; the next cycle writes it everywhere."""
    conflict = store.conflicts.get(conflict_id)
    if conflict is None:
        raise MemsyncError(f"no conflict #{conflict_id}; `memsync conflicts` lists them")
    if conflict.state == "resolved":
        raise MemsyncError(f"conflict #{conflict_id} is already resolved")
    if keep not in conflict.versions:
        raise MemsyncError(
            f"conflict #{conflict_id} is between {', '.join(conflict.versions)}; --keep one of them"
        )
    with store.transaction():
        store.conflicts.choose_winner(conflict_id, keep, f"kept {keep} by hand")
