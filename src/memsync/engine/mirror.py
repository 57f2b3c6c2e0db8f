"""Mirror: read one provider page by page into the staging store and journal what changed.

Each page is fetched with no transaction open, then staged in one short transaction. A record
changed only when its fingerprint *and* its version token changed (a flaky token alone is no
edit). Removals are inferred only from a complete full listing (or named by an incremental
one) and only past the safety gates: a provider that had memories and now lists none, or that
would lose more than ``max_delete``, is refused, not emptied.

Hidden is not deleted: when a listing may hide expired memories (``hides_expired``: a server
that cannot be asked to show them), a missing one is read by id before any delete is inferred;
when memsync itself takes expired memories out of a store without expiry
(``tombstones_expired``: mnem), a missing one whose staged date has passed is kept. The same
holds for what Dream retired (``memsync.base.dream``): a listing of the current truth only
(``hides_retired``) has each missing memory read by id, except those staged as retired already,
which are kept; a store memsync takes retired memories out of (``tombstones_retired``) keeps
those too.

A store that goes back in time (restored from a backup, or a server that lost acknowledged
writes) is told from one edited since by ``mirror_rollbacks.RollbackWatch``.

A record read ``detached`` (an agent rewrote it through a store's own API and the fields memsync
keeps beside the text there are gone, see ``Record.detached``) whose staged version still had
them is the agent's text change only: metadata, dates, origin and non-native provenance are
carried over from the staged row. It stays staged under that older version token until the
write back into its store lands: the mirror holds it in staging (``staging/write_backs.py``)
and every cycle that mirrors the store queues it again, an incremental one too, until one
lands; a dry run, a crash, a busy store or a second rewrite in between loses nothing, and no
write-back waits for a full listing to return the record.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from memsync.base.faults import fault_point
from memsync.base.records import Record, Skipped, is_expired, utc_now_iso
from memsync.engine import unsynced
from memsync.engine.excluded import MirrorExclusion
from memsync.engine.mirror_result import DeleteLimits, MirrorResult
from memsync.engine.mirror_rollbacks import RollbackWatch
from memsync.providers.base import Listing, Provider, VersionDates
from memsync.staging.journal import journal_row
from memsync.staging.records import StagedRef, TokenRefresh
from memsync.staging.store import StagingStore, record_row

__all__ = [
    "DeleteLimits",
    "Mirror",
    "MirrorResult",
    "check_identity",
    "load_cursor",
    "save_cycle_summary",
]


def check_identity(store: StagingStore, provider: Provider) -> bool:
    """Register the provider; if its identity moved, reset its mirror. True when reset."""
    identity = provider.identity()
    known = store.providers.identity(provider.name)
    if known == identity:
        return False
    with store.transaction():
        reset = known is not None
        if reset:
            # A moved store must not look like mass deletion: forget what we knew of it.
            store.records.forget_provider(provider.name)
        store.providers.register(provider.name, provider.type, identity, utc_now_iso())
    return reset


class Mirror:
    """Stages one provider's listing for one run."""

    def __init__(
        self,
        store: StagingStore,
        provider: Provider,
        run_id: int,
        limits: DeleteLimits,
        stop: threading.Event | None = None,
        write_back: bool = True,
        on_added: Callable[[list[tuple[str, Record]]], None] | None = None,
    ) -> None:
        """``on_added`` is told each page's new records (link id, record) once staged."""
        self.stop = stop
        self.on_added = on_added
        # May a carried-over record be written back into this provider (see _queue_repairs)?
        # Not when memsync only reads it (direction "pull") or in a dry run.
        self.write_back = write_back
        self.store = store
        self.provider = provider
        self.run_id = run_id
        self.limits = limits
        self.result = MirrorResult(provider.name)
        self.records = store.records
        self.records.start_listing()
        self.exclusion = MirrorExclusion(store, provider)
        self.rollbacks = RollbackWatch(store, provider, run_id, limits, self.result)
        # A memory its store gives no created_at (a native mnem node without event_time) is
        # dated when memsync first sees it: one instant, which every copy then carries.
        self.first_seen_at = utc_now_iso()

    def run(self, listing: Listing) -> MirrorResult:
        result = self.result
        result.mode = listing.mode
        before = self.store.count_records(self.provider.name)
        try:
            for page in self.exclusion.pages(listing):
                self._stage_page(page.records, page.skipped)
                fault_point("mirror:page")
                if self.stop is not None and self.stop.is_set():
                    listing.mark_partial("stopped by a signal before the listing ended")
                    break
        finally:
            result.complete = listing.complete
            result.partial_reason = listing.partial_reason
            if not listing.complete and result.partial_reason is None:
                result.partial_reason = "the listing did not finish"
        self._confirm_missing(listing)  # point reads: before the removals transaction
        with self.store.transaction():
            self._removals(listing, before)
            result.excluded = self.exclusion.settle(listing)
            self.rollbacks.gate(max(before, result.listed))
            if listing.complete:
                self._commit_cursor(listing)
            if self.write_back:  # those held since an earlier run too: incremental or not
                result.write_backs = self.store.write_backs.requeue(
                    self.run_id, self.provider.name, utc_now_iso()
                )
        result.excluded_copies = self.exclusion.copies()
        result.outside = self._outside(listing)
        fault_point("mirror:committed")
        return result

    def _outside(self, listing: Listing) -> int | None:
        """How many records the store holds outside its layout: counted by a full listing,
        moved on by an incremental one from the count the last cycle kept."""
        if listing.outside is not None or listing.mode != "incremental":
            return listing.outside
        previous = self.store.providers.last_cycle(self.provider.name)
        counted = json.loads(previous).get("outside") if previous else None
        if not isinstance(counted, int):
            return None
        return max(0, counted + listing.outside_change)

    # pages --------------------------------------------------------------------------------

    def _stage_page(self, records: list[Record], skipped: list[Skipped]) -> None:
        name = self.provider.name
        empty = [r for r in records if r.is_blank]
        if empty:  # never carried, whatever the provider did: memsync writes no empty memory
            skipped = [*skipped, *(Skipped(r.id, "empty content") for r in empty)]
            records = [r for r in records if not r.is_blank]
        dates = self._version_dates(records)  # before the transaction: the store may take a while
        with self.store.transaction():
            now = utc_now_iso()  # the page's journal entries, one transaction, one instant
            fresh = self._first_sightings(records)
            existing = self.records.staged_versions(name, [r.id for r in fresh])
            rolled_back = self.rollbacks.among(fresh, existing)
            upserts: list[tuple[Any, ...]] = []
            tokens: list[TokenRefresh] = []
            journal: list[tuple[Any, ...]] = []
            repairs: list[str] = []  # links whose record lost memsync's fields in the store
            added: list[tuple[str, Record]] = []
            for record in fresh:
                old = existing.get(record.id)
                if record.created_at is None:
                    dated = old.created_at if old is not None else dates.created_at.get(record.id)
                    record = replace(record, created_at=dated or self.first_seen_at)
                if record.updated_at is None and record.id in dates.updated_at:
                    record = replace(record, updated_at=dates.updated_at[record.id])
                if old is None:
                    link_id = self.provider.origin_of(record)
                    upserts.append(record_row(name, link_id, record, self.run_id))
                    journal.append(
                        journal_row(self.run_id, name, link_id, "added", record, record.id, now)
                    )
                    added.append((link_id, record))
                    self.result.added += 1
                    continue
                link_id, fingerprint, version = old.link_id, old.fingerprint, old.version
                carried = (
                    record.detached
                    and bool(version)
                    and not self.provider.version_detached(version)
                )
                if carried:
                    # Staged with the version that had memsync's fields until the write back
                    # lands: a later listing (or rewrite) still finds them to carry over.
                    record = self._carry_over(record, version)
                    if self.write_back:
                        repairs.append(link_id)
                elif version is not None and record.version == version:
                    # The provider's own token says unchanged: no need to fingerprint (the
                    # common case of a quiet cycle), and no churn on a fingerprint quirk.
                    continue
                if record.fingerprint == fingerprint:
                    # No edit (a new token, or a spelling variant of the same text): keep the
                    # provider's exact bytes and token, journal nothing, write nowhere.
                    if not carried:
                        tokens.append(
                            TokenRefresh(
                                record.version, record.updated_at, record.content, name, record.id
                            )
                        )
                    continue
                upserts.append(record_row(name, link_id, record, self.run_id))
                journal.append(
                    journal_row(self.run_id, name, link_id, "changed", record, record.id, now)
                )
                self.result.changed += 1
            if rolled_back:
                self.store.rollbacks.flag(rolled_back)
                self.result.rolled_back += len(rolled_back)
            self.records.upsert(upserts)
            if tokens:
                self.records.refresh_tokens(tokens)
            self.store.journal.append(journal)
            if repairs:
                # Written back into its own store, so it holds memsync's fields again: held
                # until it lands, queued in this run and every later one (``run``).
                self.store.write_backs.hold(name, repairs, now)
            if skipped:
                self.records.record_skipped(
                    (self.run_id, name, s.id, s.reason, utc_now_iso()) for s in skipped
                )
        self.result.skipped.extend(skipped)
        self.result.listed += len(fresh)
        if added and self.on_added is not None:
            self.on_added(added)

    def _version_dates(self, records: list[Record]) -> VersionDates:
        """When the store made what this page lists, where the listing does not say (mnem, see
        ``Provider.version_dates``): the created_at of memories memsync sees for the first
        time, and the updated_at of versions it has not staged. Asked once per memory and
        version, never per cycle."""
        dates_versions = self.provider.capabilities.dates_versions
        undated = [
            r for r in records if r.created_at is None or (dates_versions and r.updated_at is None)
        ]
        if not undated:
            return VersionDates()
        staged = self.records.staged_versions(self.provider.name, [r.id for r in undated])
        created = [r.id for r in undated if r.created_at is None and r.id not in staged]
        updated = {
            r.id: r.version
            for r in undated
            if dates_versions
            and r.updated_at is None
            and (r.id not in staged or staged[r.id].version != r.version)
        }
        if not created and not updated:
            return VersionDates()
        dates = self.provider.version_dates(created, updated)
        self.result.undated += dates.undated
        return dates

    def _carry_over(self, record: Record, version: str | None) -> Record:
        """A detached record (see Record.detached) with what its store could not keep taken
        from the version staged for it: the text, the store's own provenance and whatever
        metadata the rewrite itself holds (a LangGraph value's keys) are the agent's change;
        the rest of the metadata, dates, origin and the rest of the provenance are not."""
        staged = self.records.kept_fields(self.provider.name, record.id)
        native = self.provider.native_provenance
        kept = {k: v for k, v in staged.provenance.items() if k not in native}
        return replace(
            record,
            metadata={**staged.metadata, **record.metadata},
            created_at=staged.created_at,
            expiration_date=staged.expiration_date,
            origin=staged.origin or record.origin,
            provenance={**kept, **record.provenance},
            version=version,
            detached=False,
        )

    def _first_sightings(self, records: list[Record]) -> list[Record]:
        """Drop records this listing already returned (offset paging can repeat items)."""
        repeated = self.records.already_seen([r.id for r in records])
        fresh: list[Record] = []
        for record in records:
            if record.id not in repeated:
                repeated.add(record.id)  # also drops repeats within the page
                fresh.append(record)
        self.records.mark_seen(r.id for r in fresh)
        return fresh

    # removals -----------------------------------------------------------------------------

    def _missing(self) -> list[StagedRef]:
        """Staged records this full listing did not return (an excluded one is not gone)."""
        return self.exclusion.not_excluded(self.records.unseen(self.provider.name))

    def _confirm_missing(self, listing: Listing) -> None:
        """Read each missing memory by id when the listing may hide expired (or, asked for the
        current truth only, retired) ones: what is found is staged as listed (with its date and
        Dream's marks), so only a memory really gone is removed."""
        hides = listing.hides_expired or listing.hides_retired
        if not hides or listing.mode != "full" or not listing.complete:
            return
        missing = self._missing()
        if not listing.hides_expired:  # retired ones stay out of such listings: known, kept
            missing = [row for row in missing if not row.retired]
        found = [
            record for row in missing if (record := self.provider.get(row.provider_id)) is not None
        ]
        if found:
            self._stage_page(found, [])

    def _removals(self, listing: Listing, before: int) -> None:
        name = self.provider.name
        if listing.mode == "incremental":
            if not listing.removed:
                return
            gone = self.exclusion.not_excluded(self.records.refs(name, listing.removed))
        else:
            if not listing.complete:
                return
            gone = self._missing()
        if listing.tombstones_expired:  # out of the store by memsync's own tombstone, not gone
            gone = [row for row in gone if not is_expired(row.expiration_date)]
        if listing.tombstones_retired or listing.hides_retired:  # Dream retired it: not gone
            gone = [row for row in gone if not row.retired]
        listed = self.result.listed + len(self.exclusion.listed)  # excluded: the store answered
        if listing.mode == "full" and gone and listed == 0 and not self.limits.force:
            self.result.refused_by = "max_delete"
            self.result.refused = (
                f"listed no memories but held {before} before; nothing deleted "
                "(if this is right, run `memsync sync --force-delete`)"
            )
            return
        if gone and listing.mode == "full" and self.rollbacks.went_back_in_time():
            self.rollbacks.lost_with_it(gone)
            return
        if self.limits.exceeded(len(gone), before):
            self.result.refused_by = "max_delete"
            self.result.refused = (
                f"would delete {len(gone)} of {before} memories, over max_delete "
                f"({self.limits.percent:g}% / {self.limits.count}); nothing deleted "
                "(if this is right, run `memsync sync --force-delete`)"
            )
            return
        self.store.journal.append(
            journal_row(self.run_id, name, row.link_id, "removed", None, row.provider_id)
            for row in gone
        )
        self.records.remove((name, row.provider_id) for row in gone)
        self.result.removed += len(gone)

    def _commit_cursor(self, listing: Listing) -> None:
        now = utc_now_iso()
        full_scan_at = now if listing.mode == "full" else None
        self.store.providers.save_cursor(self.provider.name, listing.cursor, full_scan_at, now)


def load_cursor(store: StagingStore, provider: str) -> tuple[str | None, str | None]:
    cursor = store.providers.cursor(provider)
    return cursor.cursor, cursor.full_scan_at


def save_cycle_summary(store: StagingStore, provider: str, summary: dict[str, Any]) -> None:
    """Keep the provider's cycle for status, with how long it has gone unsynced (``unsynced``)."""
    with store.transaction():
        previous = store.providers.last_cycle(provider)
        before = json.loads(previous) if previous else None
        summary = unsynced.carry(provider, before, summary)
        if "outside" not in summary and before and "outside" in before:  # not listed this time
            summary["outside"] = before["outside"]
        store.providers.save_last_cycle(provider, json.dumps(summary, default=str))
