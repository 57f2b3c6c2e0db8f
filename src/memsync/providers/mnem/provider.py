"""``mnem``: a Mnemosyne store (version-controlled agent memory, SDK ``mnem-agents``) as a provider.

mnem keeps every write as a commit, so memsync reads deltas, not snapshots (see ``listing``):
a cycle with no new commit reads no node at all. How a memory is a node is ``convert``'s;
the one open Store and the SDK's errors are ``handle``'s; one ``write_many`` is one commit
(``batch``); expired memories are forgotten with tombstone commits (``expiry``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Protocol

from memsync.base.history import HistoryReport, Timeline
from memsync.base.records import Outgoing, Record, Skipped
from memsync.base.scopes import Scope
from memsync.providers.base import (
    Capabilities,
    Listing,
    Page,
    Provider,
    VersionDates,
    WriteOp,
    WriteResult,
)
from memsync.providers.discovery import Discovery
from memsync.providers.mnem.batch import BatchWrite
from memsync.providers.mnem.commits import CommitEntry
from memsync.providers.mnem.convert import (
    BARE_VERSION,
    CONTENT_JSON_KEY,
    CONTENT_KIND_KEY,
    NATIVE_FIELDS,
    iso_from_ms,
    record_from_node,
)
from memsync.providers.mnem.dates import CommitDates, Floor
from memsync.providers.mnem.expiry import forget_expired, hidden_records, sweep_expired_daily
from memsync.providers.mnem.handle import StagedChangesPresent, StoreHandle
from memsync.providers.mnem.history_import import import_history, refusal
from memsync.providers.mnem.known import KnownNodes
from memsync.providers.mnem.layouts import MEM0, VALUE_KEY
from memsync.providers.mnem.listing import (
    MnemListing,
    added_then_removed,
    commits_since,
    paged,
)

log = logging.getLogger("memsync.mnem")


class PerScope(Protocol):
    """How one configured store serves many scopes (``configured.py``)."""

    discovers_scopes: bool  # its scopes are found in it
    holds_every_scope: bool  # one handle serves them all

    def discover(self) -> Discovery | None:
        """The scopes found in the store."""

    def bind(self, scope: Scope) -> Provider:
        """The provider of one scope."""

    def describe(self) -> str | None:
        """What ``check`` says without opening the configured store (None: open it)."""


class MnemProvider(StoreHandle):
    """A mnem store at ``path`` (the directory holding ``.mnem``), read and written."""

    type = "mnem"
    family = "mnem"
    capabilities = Capabilities(
        incremental=True,
        client_ids=True,
        batch_writes=True,
        timestamps=True,
        commits_scan_store=True,
        dates_versions=True,
    )

    native_provenance = frozenset(
        {*NATIVE_FIELDS, "note", CONTENT_JSON_KEY, CONTENT_KIND_KEY, VALUE_KEY}
    )

    # A new store begins with Mem0's past (config ``import_history``, ``history_budget``).
    wants_history = True
    history_budget = 4.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known = KnownNodes()  # what this hold read or wrote: writes ask it, not mnem
        # How the store serves many scopes, when it does (a path template: a store each; a
        # layout naming scope keys: a namespace each); set by ``configured.build``.
        self.per_scope: PerScope | None = None

    # many scopes: how, if at all, is ``configured.build``'s to say ---------------------------

    @property
    def discovers_scopes(self) -> bool:
        return self.per_scope is not None and self.per_scope.discovers_scopes

    @property
    def holds_every_scope(self) -> bool:
        return self.per_scope is not None and self.per_scope.holds_every_scope

    def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery | None:
        return None if self.per_scope is None else self.per_scope.discover()

    def bind(self, scope: Scope) -> Provider | None:
        return None if self.per_scope is None else self.per_scope.bind(scope)

    def version_detached(self, version: str | None) -> bool:
        return version is not None and version.startswith(BARE_VERSION)

    def open(self) -> None:
        if self._store is None:
            self.known = KnownNodes()
        super().open()

    # reads ------------------------------------------------------------------------------------

    def identity(self) -> str:
        return super().identity() + self.layout.identity()

    def check(self) -> str:
        said = None if self.per_scope is None else self.per_scope.describe()
        if said is not None:
            return said
        head = self.sdk_call("read the head commit", lambda: self.store.head_commit())
        every = self._committed_nodes(head)
        nodes = [n for n in every.values() if not self.layout.outside(n.id)]
        outside = len(every) - len(nodes)
        excluded = sum(1 for n in nodes if self.exclusion.covers(n.id, n.content_kind))
        where = f"at commit {head[:12]}" if head else "(no commit yet)"
        found = f"reachable, {len(nodes) - excluded} memories {where}"
        namespaces = self.layout.namespaces([n.id for n in nodes])
        if namespaces is not None:
            found = found.replace(" memories ", f" memories in {namespaces} namespace(s) ")
        if self.layout is not MEM0:
            found += f", layout {self.layout.describe()}"
        if excluded:
            found += f" ({excluded} more excluded: {self.exclusion.describe()})"
        if outside:
            found += f"; {outside} node(s) outside the layout's namespaces: not memsync's to sync"
        if self._foreign_staging:
            found += (
                f"; {len(self._foreign_staging)} uncommitted change(s) staged by another writer: "
                "memsync will not write until they are committed or unstaged"
            )
        return found

    def listing(self, cursor: str | None = None) -> Listing:
        sweep_expired_daily(self)
        head = self._listed_head()
        self._listed_at(head)
        self._dated_from, self._floor = head, None  # what ``version_dates`` reads from
        if cursor is not None and cursor == head:
            return MnemListing("incremental", head, lambda listing: iter(()))
        if cursor is not None and head is not None:
            changes = self._changes_since(cursor, head)
            if changes is not None:
                self._floor = Floor(cursor, {change.id: change.kind for change in changes})
                return MnemListing(
                    "incremental", head, lambda listing: self._delta(listing, changes)
                )
        return MnemListing("full", head, lambda listing: self._full(listing, head))

    def _listed_at(self, head: str | None) -> None:
        """The listing read the store at HEAD: others' commits count from there (``meanwhile``)."""
        self.meanwhile.read_at(head)

    def _listed_head(self) -> str | None:
        """The commit a listing reads (and its cursor): the head."""
        head: str | None = self.sdk_call("read the head commit", lambda: self.store.head_commit())
        return head

    def _changes_since(self, cursor: str, head: str) -> list[Any] | None:
        """What changed from CURSOR to HEAD; None when the store does not know the cursor."""
        return self.sdk_call(
            f"diff {cursor[:12]}..{head[:12]}", lambda: self._diff_or_none(cursor, head)
        )

    def _diff_or_none(self, cursor: str, head: str) -> list[Any] | None:
        try:
            changes: list[Any] = self.store.diff(cursor, head)
        except self.sdk.InvalidRefError:
            log.info(
                "%s: cursor commit %s is not in %s (store replaced?); listing everything",
                self.name,
                cursor[:12],
                self.path,
            )
            return None
        self._forget_commits_below(cursor)
        return changes + added_then_removed(self.store, cursor, changes, self._written_by)

    def _written_by(self, commit: str) -> list[str] | None:
        """The nodes COMMIT wrote, as memsync noted them (None: not noted)."""
        entry = self.commits.get(commit)
        if entry is None and self.commit_book is not None:
            kept = self.commit_book.commits(self.commits_key(), [commit]).get(commit)
            entry = None if kept is None else CommitEntry.decoded(commit, *kept)
        return None if entry is None else list(entry.made)

    def _forget_commits_below(self, cursor: str) -> None:
        """The commit book keeps only commits a listing has yet to go past (``commits``)."""
        if self.commit_book is None:
            return
        since = commits_since(self.store, cursor)
        if since is not None:
            self.commit_book.forget_below(self.commits_key(), [c.id for c in since], time.time())

    def _delta(self, listing: Listing, changes: list[Any]) -> Iterator[Page]:
        scope, layout = self.scope_key(), self.layout
        items: list[Record | Skipped] = []
        listing.outside_change = self._outside_change(changes)
        for change in changes:
            if not layout.holds(change.id):
                continue
            if change.kind == "removed":
                listing.removed.append(change.id)
            else:
                items.append(record_from_node(change.new, scope, layout))
        self.known.gone(listing.removed)
        self.known.learn(items)
        yield from paged(items)

    def _full(self, listing: Listing, head: str | None) -> Iterator[Page]:
        scope, layout = self.scope_key(), self.layout
        nodes = self._committed_nodes(head)
        listing.outside = self._outside(nodes)
        held = [node for node_id, node in nodes.items() if layout.holds(node_id)]
        items = [record_from_node(node, scope, layout) for node in held]
        if not self._foreign_staging:  # working memory is then the head, as memsync writes on
            outside = (Skipped(i, "outside the layout") for i in nodes if not layout.holds(i))
            self.known.everything([*items, *outside])  # never written over: not memsync's
        yield from paged(items)

    def _outside(self, nodes: dict[str, Any]) -> int | None:
        """How many of the store's nodes lie outside the layout (None: the default layout's
        store has no outside)."""
        if self.layout is MEM0:
            return None
        return sum(1 for node_id in nodes if self.layout.outside(node_id))

    def _outside_change(self, changes: list[Any]) -> int:
        """By how much those changes moved the count of nodes outside the layout."""
        moved = 0
        for change in changes:
            if change.kind != "modified" and self.layout.outside(change.id):
                moved += 1 if change.kind == "added" else -1
        return moved

    def _committed_nodes(self, head: str | None) -> dict[str, Any]:
        """Working memory, which is the head state unless someone left changes staged."""
        if not self._foreign_staging:
            nodes: dict[str, Any] = self.sdk_call(
                "read working memory", lambda: self.store.working_memory()
            )
            return nodes
        if head is None:
            return {}
        committed: dict[str, Any] = self.sdk_call(
            "read the head state", lambda: self.store.state_at(head)
        )
        return committed

    def get(self, provider_id: str) -> Record | None:
        node = self.sdk_call(f"read node {provider_id!r}", lambda: self._node(provider_id))
        if node is None:
            return None
        record = record_from_node(node, self.scope_key(), self.layout)
        return record if isinstance(record, Record) else None

    _dates: CommitDates | None = None  # the log walked so far from the listed head (``dates``)
    _dated_from: str | None = None  # the head the last listing read
    _floor: Floor | None = None  # that listing's cursor and diff, when it was incremental

    def version_dates(self, created: list[str], updated: Mapping[str, str | None]) -> VersionDates:
        """The commits that added these nodes and made these versions (``dates``)."""
        return self._dated(self._walk(), created, updated)

    def _walk(self) -> CommitDates | None:
        """The walk of the log from the head the last listing read (None: the store has none)."""
        head = self._dated_from
        if head is None:
            return None
        if self._dates is None or self._dates.head != head:
            self._dates = CommitDates(self, head, self.commits)
        return self._dates

    def _dated(
        self, walk: CommitDates | None, created: list[str], updated: Mapping[str, str | None]
    ) -> VersionDates:
        if walk is None:
            return VersionDates(undated=len(updated))
        was_cut_short = walk.cut_short
        added, made = walk.find(created, updated, self._floor)
        self.save_commits()
        if walk.cut_short and not was_cut_short:
            log.warning(
                "%s: dating versions from mnem's log stopped after %d commit(s) read "
                "(%.0f s); the versions it did not reach stay undated until they change",
                self.name,
                walk.read,
                walk.spent,
            )
        return VersionDates(
            {n: iso_from_ms(t) for n, t in added.items()},
            {n: iso_from_ms(t) for n, t in made.items()},
            undated=len(updated) - len(made),
        )

    def close(self) -> None:
        self._dates = None
        self.known = KnownNodes()
        super().close()

    def _node(self, node_id: str) -> Any:
        """The committed node (staged leftovers of another writer are not memsync's to read)."""
        if node_id in self._foreign_staging:
            for change in self.store.diff():
                if change.id == node_id:
                    return change.old
        return self.store.working_node(node_id)

    def versions_changed_since(self, since: datetime) -> dict[str, str | None] | None:
        """On a store the daemon holds for the agents it serves: the nodes they committed
        since the listing (``meanwhile``). A store memsync opened for itself: None, nobody
        else can write it while memsync holds it."""
        if not self.borrowed:
            return None
        with self.writing():
            return self.meanwhile.versions(self, self.layout.holds)

    # writes -----------------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        return self._single(WriteOp("create", item.origin, item=item))

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self._single(WriteOp("update", provider_id, item=item, provider_id=provider_id))

    def delete(self, provider_id: str) -> None:
        self._single(WriteOp("delete", provider_id, provider_id=provider_id))

    def _single(self, op: WriteOp) -> Record:
        (result,) = list(self.write_many([op]))
        if result.error is not None:
            raise result.error
        return result.record  # type: ignore[return-value]

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Every create, update and delete of this call in one commit (none if nothing changed)."""
        self.store  # noqa: B018 - fail before planning when not open
        if self._foreign_staging:
            error = StagedChangesPresent(
                f"{self.name}: {len(self._foreign_staging)} uncommitted change(s) are staged in "
                f"{self.path} by another writer ({', '.join(self._foreign_staging[:5])}); "
                "memsync will not commit them for you: commit them from the agent (or mnem), "
                "or unstage them, then sync again"
            )
            for op in ops:
                yield WriteResult(op, error=error)
            return
        yield from BatchWrite(self, self.known).run(ops)

    # Mem0's past (see memsync.providers.mnem.history_import) -----------------------------------

    def takes_history(self) -> bool:
        return self.wants_history and self.history_refusal() is None

    def history_refusal(self) -> str | None:
        """Why this open store cannot begin with a history, or None when it can."""
        return refusal(self)

    def import_history(
        self, timeline: Timeline, *, budget: float | None = None, dry_run: bool = False
    ) -> HistoryReport:
        why = self.history_refusal()
        if why is not None:
            report = HistoryReport(timeline.source, not_imported=why)
            report.reasons = dict(timeline.reasons)
            return report
        budget = self.history_budget if budget is None else budget
        return import_history(self, timeline, budget=budget, dry_run=dry_run)

    # expiry (see memsync.providers.mnem.expiry) -----------------------------------------------

    def forget_expired(self, node_ids: list[str]) -> None:
        """One tombstone commit for nodes whose date passed; history keeps every one."""
        forget_expired(self, node_ids)
        self.known.gone(node_ids)

    def hidden_records(self) -> list[Record]:
        """The nodes memsync forgot because their date passed and nobody brought back."""
        return hidden_records(self)
