"""Expiry, which mnem lacks: memsync forgets its nodes whose date passed, with a tombstone commit.

A memory's ``expiration_date`` lives in memsync's note (see ``convert``). Once it has passed,
memsync forgets the node with a tombstone commit ("memsync: forgot N expired ...") so agents
stop being served it the same day, while mnem's history keeps it. That happens when memsync
writes an already-expired memory (added, then forgotten) and in a sweep at the first listing
of each UTC day in a process (one scan of working memory). The mirror keeps an expired memory
that vanished (hidden is not deleted), and an update to it (the date cleared or moved)
brings the node back; ``hidden_records`` finds such nodes again in the log.

Dream's retired memories (superseded or merged on the Mem0 Platform, ``memsync.base.dream``) are
forgotten the same way, in a commit of their own ("memsync: forgot N retired by Dream ..."):
mnem has no lifecycle states, so its working memory holds the current truth and its history
the facts Dream replaced. Such a node is forgotten when memsync writes it retired and in the
daily sweep; an update to it (Dream's marks changed again) writes it and, while it is still
retired, forgets it again, so history keeps every state.
"""

from __future__ import annotations

from datetime import date
from functools import partial

from memsync.base import records
from memsync.base.errors import ProviderError
from memsync.base.records import Record
from memsync.providers.mnem.commits import CommitEntry, now_ms
from memsync.providers.mnem.convert import expired_in_note, record_from_node, retired_in_note
from memsync.providers.mnem.handle import AUTHOR, StoreHandle

EXPIRED_COMMIT = "memsync: forgot"  # how an expiry (or Dream) tombstone commit's message starts
_SWEPT: dict[str, date] = {}  # store path -> the UTC day its expired nodes were forgotten


def sweep_expired_daily(handle: StoreHandle) -> None:
    """Forget memsync's nodes whose expiration date has passed, or which Dream retired: once
    a UTC day per store and process (a scan of working memory), never with another writer's
    changes staged."""
    today = records.utc_clock().date()
    store = str(handle.path.expanduser().resolve())  # one sweep a day for every scope it holds
    if handle._foreign_staging or _SWEPT.get(store) == today:
        return
    nodes = handle.sdk_call("read working memory", lambda: handle.store.working_memory())
    expired = {node_id for node_id, node in nodes.items() if expired_in_note(node)}
    forget_expired(handle, sorted(expired))
    forget_retired(
        handle, [n for n, node in nodes.items() if n not in expired and retired_in_note(node)]
    )
    _SWEPT[store] = today


def forget_expired(handle: StoreHandle, node_ids: list[str]) -> None:
    """One tombstone commit for nodes whose date passed; history keeps every one."""
    _forget(handle, node_ids, "expired (their expiration date passed; history keeps them)")


def forget_retired(handle: StoreHandle, node_ids: list[str]) -> None:
    """One tombstone commit for nodes Dream superseded or merged; history keeps every one."""
    _forget(
        handle,
        node_ids,
        "retired by Dream (superseded or merged on the Mem0 Platform; history keeps them)",
    )


def _forget(handle: StoreHandle, node_ids: list[str], why: str) -> None:
    if not node_ids:
        return
    with handle.writing():
        handle.meanwhile.catch_up(handle)  # a node an agent changed since stays, as it is now
        node_ids = [n for n in node_ids if not handle.meanwhile.covers(n)]
        if not node_ids:
            return
        handle.note_batch(node_ids)
        try:
            for node_id in node_ids:
                handle.sdk_call(f"forget node {node_id!r}", partial(handle.store.rm, node_id))
            time_ms = now_ms()
            commit = handle.sdk_call(
                "commit the forgotten",
                lambda: handle.store.commit(
                    f"{EXPIRED_COMMIT} {len(node_ids)} {why}", author=AUTHOR, time_ms=time_ms
                ),
            )
        except ProviderError:
            if handle.unstage(node_ids):
                handle.in_flight.clear()
            raise
        handle.in_flight.clear()
        handle.meanwhile.wrote(commit)
        handle.commits.note(CommitEntry(commit, time_ms, removed=frozenset(node_ids)))


def forgotten_as_expired(handle: StoreHandle, node_id: str) -> bool:
    """Whether memsync's expiry (or Dream) tombstone removed this node (only asked on the
    rare update of a node that is gone)."""
    return any(record.id == node_id for record in hidden_records(handle))


def hidden_records(handle: StoreHandle) -> list[Record]:
    """The nodes memsync forgot because their date passed (or Dream retired them) and nobody
    brought back, as they were just before the tombstone (a walk of the log and one diff per
    tombstone)."""
    commits = handle.sdk_call("read the log", lambda: handle.store.log())
    hidden: dict[str, Record] = {}
    for commit in commits:
        if commit.author != AUTHOR or not commit.message.startswith(EXPIRED_COMMIT):
            continue
        if not commit.parents:
            continue
        changes = handle.sdk_call(
            "read a tombstone", partial(handle.store.diff, commit.parents[0], commit.id)
        )
        for change in changes:
            if change.kind == "removed" and change.old is not None:
                record = record_from_node(change.old, handle.scope_key(), handle.layout)
                if isinstance(record, Record):
                    hidden[change.id] = record
    if not hidden:
        return []
    served = handle.sdk_call("read working memory", lambda: handle.store.working_memory())
    return [record for node_id, record in hidden.items() if node_id not in served]
