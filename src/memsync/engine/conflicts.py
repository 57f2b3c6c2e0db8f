"""Conflicts as `memsync conflicts` lists them and `memsync resolve` settles them.

One place for both, so the status page's buttons do exactly what the command line does. A
rollback (a store that went back in time, ``engine/mirror_rollbacks.py``) is a conflict that
names that store; many can be settled at once (``settle_rollbacks``), as a store restored
from a backup needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.records import utc_now_iso
from memsync.engine.decisions import GONE, version_entry
from memsync.staging import StagingStore
from memsync.staging.store import dumps


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


@dataclass(frozen=True, slots=True)
class SettledRollbacks:
    provider: str
    keep: str
    settled: int
    left: list[str] = field(default_factory=list)  # memories KEEP holds no version of


def settle_rollbacks(
    store: StagingStore, provider: str, keep: str, *, policy: str = "error"
) -> SettledRollbacks:
    """Keep KEEP's version of every memory PROVIDER went back in time on (KEEP = PROVIDER:
    its older versions, or their loss, everywhere); the next cycle writes them."""
    rows = store.rollbacks.of_provider(provider)
    if not rows:
        raise MemsyncError(
            f"no memory of {provider} is rolled back; `memsync conflicts` lists what waits"
        )
    now, settled, left = utc_now_iso(), 0, []
    with store.transaction():
        chosen = store.conflicts.resolving()
        for row in rows:
            open_id = store.conflicts.open_id(row.link_id)
            if open_id is not None:
                conflict = store.conflicts.get(open_id)
                if conflict is None or keep not in conflict.versions:
                    left.append(row.link_id)
                    continue
                store.conflicts.choose_winner(open_id, keep, f"kept {keep} by hand")
            elif row.link_id not in chosen:
                versions = _rollback_versions(store, provider, row.link_id)
                if keep not in versions:
                    left.append(row.link_id)
                    continue
                store.conflicts.resolving_rolled_back(
                    row.link_id, row.run_id, policy, keep, dumps(versions), provider, now
                )
            settled += 1
    return SettledRollbacks(provider, keep, settled, left)


def _rollback_versions(store: StagingStore, provider: str, link_id: str) -> dict[str, Any]:
    """What each provider holds of a rolled-back memory no cycle recorded as a conflict."""
    versions: dict[str, Any] = {provider: dict(GONE)}
    for found in store.records.of_memories([link_id]):
        versions.setdefault(found.provider, version_entry(found.record))
        if found.provider == provider:
            versions[provider] = version_entry(found.record)
    return versions
