"""How the mirror tells a store that went back in time from one edited since.

A store that goes back in time (restored from a backup, or a server that lost acknowledged
writes over a restart) answers older versions than memsync had seen from it. Where a store's
``updated_at`` only moves forward (``Capabilities.ordered_updates``: every Mem0 kind), a
listed version older than the newest memsync saw of that memory there, or one memsync saw
before and since superseded, is a **rollback**, not an edit: it is staged as the store holds
it (status counts what the store serves; ``history`` shows it) and flagged, so the planner
copies it nowhere until the user settles it (``engine/plan.py``). In a full listing that
showed any rollback, a memory the store no longer holds went back in time with it: it is
flagged too, never inferred deleted elsewhere. More unsettled rollbacks than ``max_delete``
allows refuse the provider for the cycle, as deletes over it do.
"""

from __future__ import annotations

from datetime import datetime

from memsync.base.records import Record, parse_instant, utc_now_iso
from memsync.engine.mirror_result import DeleteLimits, MirrorResult
from memsync.providers.base import Provider
from memsync.staging.journal import journal_row
from memsync.staging.records import StagedRef, StagedVersion
from memsync.staging.rollbacks import Rollback, SeenVersion
from memsync.staging.store import StagingStore


class RollbackWatch:
    """One provider's listing watched for rollbacks, for one run of the mirror."""

    def __init__(
        self,
        store: StagingStore,
        provider: Provider,
        run_id: int,
        limits: DeleteLimits,
        result: MirrorResult,
    ) -> None:
        self.store = store
        self.records = store.records
        self.provider = provider
        self.run_id = run_id
        self.limits = limits
        self.result = result

    def among(self, records: list[Record], existing: dict[str, StagedVersion]) -> list[Rollback]:
        """The records among these that went back in time (see the module docstring)."""
        if not self.provider.capabilities.ordered_updates:
            return []
        suspects = []
        for record in records:
            old = existing.get(record.id)
            if old is None or record.detached or record.version == old.version:
                continue
            if record.fingerprint != old.fingerprint:
                suspects.append((record, old))
        if not suspects:
            return []
        seen: dict[str, list[SeenVersion]] = {}
        links = sorted({old.link_id for _, old in suspects})
        for version in self.store.rollbacks.seen_versions(self.provider.name, links):
            seen.setdefault(version.provider_id, []).append(version)
        found = []
        now = utc_now_iso()
        for record, old in suspects:
            versions = [
                *seen.get(record.id, []),
                SeenVersion(record.id, old.updated_at, old.version),
            ]
            newest, newest_text = _newest(versions)
            listed = parse_instant(record.updated_at)
            older = listed is not None and newest is not None and listed < newest
            returned = any(v.version == record.version for v in versions if v.version)
            if older or returned:
                name = self.provider.name
                found.append(
                    Rollback(
                        name,
                        old.link_id,
                        record.id,
                        newest_text,
                        record.updated_at,
                        self.run_id,
                        now,
                    )
                )
        return found

    def went_back_in_time(self) -> bool:
        """This store showed rollbacks (in this listing, or ones still unsettled)."""
        if not self.provider.capabilities.ordered_updates:
            return False
        return self.result.rolled_back > 0 or self.store.rollbacks.any_in(self.provider.name)

    def lost_with_it(self, gone: list[StagedRef]) -> None:
        """Memories a store that went back in time no longer holds: flagged as rolled back
        (the planner deletes them nowhere), out of its mirror as they are out of the store."""
        name, now = self.provider.name, utc_now_iso()
        staged = self.records.staged_versions(name, [row.provider_id for row in gone])
        self.store.rollbacks.flag(
            Rollback(
                name,
                row.link_id,
                row.provider_id,
                staged[row.provider_id].updated_at if row.provider_id in staged else None,
                None,
                self.run_id,
                now,
            )
            for row in gone
        )
        self.store.journal.append(
            journal_row(self.run_id, name, row.link_id, "removed", None, row.provider_id)
            for row in gone
        )
        self.records.remove((name, row.provider_id) for row in gone)
        self.result.removed += len(gone)
        self.result.rolled_back += len(gone)

    def gate(self, total: int) -> None:
        """More unsettled rollbacks than max_delete allows: the provider sits this cycle out."""
        if self.result.refused or not self.provider.capabilities.ordered_updates:
            return
        name = self.provider.name
        unsettled = self.store.rollbacks.unsettled(name)
        if not DeleteLimits(self.limits.percent, self.limits.count).exceeded(unsettled, total):
            return
        self.result.refused_by = "rollbacks"
        self.result.refused = (
            f"{unsettled} of {total} memories in {name} are older versions than memsync saw "
            f"there before (restored from a backup? writes lost?), over max_delete "
            f"({self.limits.percent:g}% / {self.limits.count}); nothing copied from or to "
            f"{name}. Settle them all: `memsync resolve --rolled-back {name} --keep {name}` "
            f"takes its older versions everywhere, `--keep OTHER` writes the newer ones back "
            f"into {name}"
        )


def _newest(versions: list[SeenVersion]) -> tuple[datetime | None, str | None]:
    """The newest updated_at among these versions (as an instant, and as it was written)."""
    newest: datetime | None = None
    text: str | None = None
    for version in versions:
        instant = parse_instant(version.updated_at)
        if instant is not None and (newest is None or instant > newest):
            newest, text = instant, version.updated_at
    return newest, text
