"""Conflicts as `memsync conflicts` lists them and `memsync resolve` settles them.

One place for both, so the status page's buttons do exactly what the command line does.
"""

from __future__ import annotations

import json
from typing import Any

from memsync.errors import MemsyncError
from memsync.staging import StagingStore


def list_conflicts(store: StagingStore, *, include_settled: bool = False) -> list[dict[str, Any]]:
    """Conflicts still waiting (open or being applied), or all of them, oldest first."""
    where = "" if include_settled else "WHERE state != 'resolved'"
    return [
        {**dict(r), "versions": json.loads(r["versions"])}
        for r in store.conn.execute(f"SELECT * FROM conflicts {where} ORDER BY id")
    ]


def choose_winner(store: StagingStore, conflict_id: int, keep: str) -> None:
    """Record that KEEP's version wins; the next cycle writes it everywhere."""
    row = store.conn.execute("SELECT * FROM conflicts WHERE id = ?", (conflict_id,)).fetchone()
    if row is None:
        raise MemsyncError(f"no conflict #{conflict_id}; `memsync conflicts` lists them")
    if row["state"] == "resolved":
        raise MemsyncError(f"conflict #{conflict_id} is already resolved")
    versions = json.loads(row["versions"])
    if keep not in versions:
        raise MemsyncError(
            f"conflict #{conflict_id} is between {', '.join(versions)}; --keep one of them"
        )
    with store.transaction() as conn:
        conn.execute(
            "UPDATE conflicts SET state = 'resolving', winner = ?, resolution = ? WHERE id = ?",
            (keep, f"kept {keep} by hand", conflict_id),
        )
