"""The writes for a batch of outbox rows: each row's ``WriteOp``, its content read from the
mirror at once (the source's current copy), and for an update the record it replaces."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from memsync.base.records import Outgoing, Record
from memsync.base.write_kind import WriteKind
from memsync.providers.base import WriteOp
from memsync.staging.outbox import OutboxRow
from memsync.staging.store import StagingStore


def ops_for(store: StagingStore, rows: Sequence[OutboxRow]) -> dict[str, WriteOp]:
    """The writes of ``rows`` by key, in outbox order; rows whose source is gone have none."""
    wanted: dict[tuple[str, str], list[OutboxRow]] = defaultdict(list)
    ops: dict[str, WriteOp] = {}
    copies: set[str] = set()  # keep-both copies (a link of their own, from another's)
    for row in rows:
        if row.kind == WriteKind.DELETE:
            ops[row.key] = WriteOp(WriteKind.DELETE, row.key, provider_id=row.provider_id)
            continue
        source_link = row.source_link or row.link_id
        wanted[(row.source or "", source_link)].append(row)
        if source_link != row.link_id:
            copies.add(row.link_id)
    links = sorted({link for _, link in wanted} | copies)
    sources: dict[tuple[str, str], Record] = {}
    made: dict[str, Record] = {}  # a copy already written into some provider
    if links:
        for found in store.records.of_memories(links):
            sources.setdefault((found.provider, found.link_id), found.record)
            if found.link_id in copies:
                made.setdefault(found.link_id, found.record)
    for (source, source_link), source_rows in wanted.items():
        for row in source_rows:
            # A keep-both copy made in an earlier target is the losing version itself;
            # the source's record may since hold the winner (replayed into it first).
            record = made.get(row.link_id) or sources.get((source, source_link))
            if record is None:
                continue  # the source changed under us: the next plan decides again
            item = Outgoing.from_record(record, origin=row.link_id)
            ops[row.key] = WriteOp(row.kind, row.key, item=item, provider_id=row.provider_id)
    _attach_previous(store, rows, ops)
    return {key: ops[key] for key in sorted(ops, key=int)}


def _attach_previous(
    store: StagingStore, rows: Sequence[OutboxRow], ops: dict[str, WriteOp]
) -> None:
    """Give each update the record it replaces, and each delete the record it removes, as
    staged: no read before the write."""
    wanted: dict[tuple[str, str], str] = {}
    for row in rows:
        op = ops.get(row.key)
        if row.provider_id and op is not None and op.kind != WriteKind.CREATE:
            wanted[(row.provider, row.provider_id)] = row.key
    if not wanted:
        return
    for found in store.records.by_ids(list(wanted)):
        key = wanted.get((found.provider, found.record.id))
        if key is not None:
            ops[key].previous = found.record
