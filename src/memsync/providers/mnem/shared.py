"""One mnem store that holds every scope, each in its own LangGraph namespace: opened and read
once for a whole run, each scope a view of it.

A LangGraph application keeps every user in one store (``("memories", "alice")``,
``("memories", "bob")``). Synced per scope like per-scope stores, a thousand users would cost a
thousand opens and a thousand reads of the same store each cycle. Instead the run opens the
store once (``SharedStore``: at discovery, closed when the run ends, so it is held for the run)
and reads it once: the head commit, then either what changed since the scopes' cursor (one diff
for every scope that shares it, which after a run is all of them) or, for a scope memsync has
never listed, the working memory (one read). Each scope's provider (``ScopeInStore``) lists the
part of that read in its namespace, and writes its own namespace through the one handle.

Why one read serves scopes listed later in the run: while memsync holds the handle no one else
can commit, and memsync's own commits in the run write only the namespace of the scope that
made them, after that scope was listed. So the state read at the start is still every other
scope's state; each scope's cursor is that first head, and the next run's diff from it shows
what anyone (memsync included) wrote since.

The store's scopes are found in it too (``discover``): the namespaces its nodes sit in, so a
user a LangGraph agent wrote for before Mem0 knew them is synced. Found once per process and
kept up to date from diffs, not by reading the whole store every cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memsync.base.errors import ProviderError
from memsync.base.mnem_items import namespace_id, namespace_id_of
from memsync.base.records import Record
from memsync.base.scopes import Scope
from memsync.providers.base import CommitBook, Listing, WriteOp, WriteResult
from memsync.providers.mnem.commits import KnownCommits
from memsync.providers.mnem.dates import CommitDates
from memsync.providers.mnem.expiry import sweep_expired_daily
from memsync.providers.mnem.layouts import LangGraphLayout
from memsync.providers.mnem.listing import MnemListing
from memsync.providers.mnem.meanwhile import Meanwhile
from memsync.providers.mnem.provider import MnemProvider

# store identity -> (head commit, the namespaces' scope values found at it), per process
_FOUND: dict[str, tuple[str | None, frozenset[tuple[tuple[str, str], ...]]]] = {}


class SharedStore:
    """The configured provider's one store, and what a run read of it (see module docstring).

    ``base`` is the provider built from the config, with the layout's unbound template; the
    run opens it (or the first scope does) and closes it at the end.
    """

    def __init__(self, base: MnemProvider) -> None:
        assert isinstance(base.layout, LangGraphLayout)
        self.base = base
        self.template: LangGraphLayout = base.layout
        self.reset()

    def reset(self) -> None:
        """Forget what was read (the handle was let go: someone may have written since)."""
        self._read = False
        self._head: str | None = None
        self._nodes: dict[str, Any] | None = None
        self._outside_count: int | None = None
        self._changes: dict[str, list[Any] | None] = {}
        # the read, cut by namespace once: a scope lists its own part, not the whole store's
        self._nodes_by: dict[str, dict[str, Any]] | None = None
        self._changes_by: dict[str, tuple[dict[str, list[Any]], int]] = {}
        self._dates: CommitDates | None = None  # one walk of the log, shared by every scope
        self._meanwhile: Meanwhile | None = None

    def dates(self) -> CommitDates | None:
        """The walk of the log from the run's head, shared by every scope (None: no commit)."""
        head = None if self.absent else self.head()
        if head is None:
            return None
        if self._dates is None or self._dates.head != head:
            self._dates = CommitDates(self.base, head, self.base.commits)
        return self._dates

    def meanwhile_at(self, head: str | None) -> Meanwhile:
        """What others committed since the run read the store at HEAD, one account for every
        scope: in the daemon (a held store) each scope's writes check it, and with an account
        per scope each would diff from the run's head over every commit the run made before
        it (298 diffs in a first sync of 300 users, twice its time)."""
        if self._meanwhile is None:
            self._meanwhile = Meanwhile()
            self._meanwhile.read_at(head)
        return self._meanwhile

    @property
    def absent(self) -> bool:
        """A store ``create = true`` has not made yet."""
        return bool(getattr(self.base, "_absent", False))

    def head(self) -> str | None:
        """The commit every scope's listing reads this run, taken after the daily expiry sweep."""
        if not self._read:
            if not self.absent:
                sweep_expired_daily(self.base)
                self._head = self.base._listed_head()
            self._read = True
        return self._head

    def nodes(self) -> dict[str, Any]:
        """The store's committed nodes at ``head()``, read once."""
        if self._nodes is None:
            head = self.head()
            self._nodes = {} if self.absent else self.base._committed_nodes(head)
        return self._nodes

    def nodes_in(self, namespace: str) -> dict[str, Any]:
        """The nodes of one namespace (``"memories:alice"``) at ``head()``."""
        if self._nodes_by is None:
            self._nodes_by = {}
            for node_id, node in self.nodes().items():
                self._nodes_by.setdefault(namespace_id_of(node_id), {})[node_id] = node
        return self._nodes_by.get(namespace, {})

    def outside(self) -> int:
        """How many of the store's nodes at ``head()`` lie outside every namespace."""
        if self._outside_count is None:
            self._outside_count = sum(1 for n in self.nodes() if self.template.outside(n))
        return self._outside_count

    def changes_in(self, cursor: str, namespace: str) -> tuple[list[Any], int] | None:
        """One namespace's part of ``changes(cursor)``, and by how much those changes moved the
        count of nodes outside every namespace (None: the store does not know the cursor)."""
        if cursor not in self._changes_by:
            changes = self.changes(cursor)
            if changes is None:
                return None
            grouped: dict[str, list[Any]] = {}
            moved = 0
            for change in changes:
                if change.kind != "modified" and self.template.outside(change.id):
                    moved += 1 if change.kind == "added" else -1
                grouped.setdefault(namespace_id_of(change.id), []).append(change)
            self._changes_by[cursor] = (grouped, moved)
        grouped, moved = self._changes_by[cursor]
        return grouped.get(namespace, []), moved

    def changes(self, cursor: str) -> list[Any] | None:
        """What changed from CURSOR to ``head()``, one diff per distinct cursor."""
        head = self.head()
        if cursor not in self._changes:
            self._changes[cursor] = None if head is None else self.base._changes_since(cursor, head)
        return self._changes[cursor]

    def discover(self) -> set[Scope]:
        """The scopes whose namespaces hold nodes in the store (see module docstring)."""
        if self.absent:
            return set()
        key = self.base.identity()
        head = self.head()
        known = _FOUND.get(key)
        found: set[tuple[tuple[str, str], ...]] | None = None
        if known is not None and known[0] == head:
            found = set(known[1])
        elif known is not None and known[0] is not None:
            changes = self.changes(known[0])
            if changes is not None:
                found = set(known[1])
                for change in changes:
                    if change.kind != "removed":
                        found |= self._placed([change.id])
        if found is None:
            found = self._placed(self.nodes())
        _FOUND[key] = (head, frozenset(found))
        return {Scope(items) for items in found}

    def _placed(self, node_ids: Any) -> set[tuple[tuple[str, str], ...]]:
        placed = set()
        for node_id in node_ids:
            values = self.template.place(node_id)
            if values:
                placed.add(Scope.of(values).items)
        return placed


class ScopeInStore(MnemProvider):
    """One scope of a ``SharedStore``: its namespace of the store, through the run's handle."""

    def __init__(self, name: str, shared: SharedStore, scope: Scope, *, scope_key: str) -> None:
        base = shared.base
        super().__init__(
            name,
            base.path,
            branch=base.branch,
            scope_key=scope_key,
            busy_timeout=base.busy_timeout,
            sdk=base.sdk,
            held=base.held,
        )
        self.shared = shared
        self.layout = shared.template.bound(scope, provider=getattr(base, "config_name", name))
        assert self.layout.namespace is not None
        self._namespace = namespace_id(self.layout.namespace)
        self._moved_outside = 0
        self._opened_base = False

    # lifecycle: the store is the shared one's ---------------------------------------------------

    def open(self) -> None:
        base = self.shared.base
        if base._store is None and not self.shared.absent:
            base.open()  # outside a run (status, verify of one scope): opened for this view
            self._opened_base = True
            self.shared.reset()
        self._borrow()

    def _borrow(self) -> None:
        base = self.shared.base
        self._store = base._store
        self._owns_store = False
        self._foreign_staging = base._foreign_staging

    def close(self) -> None:
        self._store = None
        if self._opened_base:
            self._opened_base = False
            self.shared.reset()
            self.shared.base.close()

    # reads: the run's one read of the store ------------------------------------------------------

    def check(self) -> str:
        if self.shared.absent:
            return f"no store yet at {self.path}; created on the first write (create = true)"
        return super().check()

    def listing(self, cursor: str | None = None) -> Listing:
        if self.shared.absent:
            return MnemListing("full", None, lambda listing: iter(()))
        return super().listing(cursor)

    def _listed_head(self) -> str | None:
        return self.shared.head()

    def _listed_at(self, head: str | None) -> None:
        self.meanwhile = self.shared.meanwhile_at(head)  # the run's one account of the store

    def _changes_since(self, cursor: str, head: str) -> list[Any] | None:
        found = self.shared.changes_in(cursor, self._namespace)
        if found is None:
            return None
        changes, self._moved_outside = found
        return changes

    def _committed_nodes(self, head: str | None) -> dict[str, Any]:
        return self.shared.nodes_in(self._namespace)

    def _outside(self, nodes: dict[str, Any]) -> int | None:
        return self.shared.outside()  # the store's count, not this namespace's

    def _outside_change(self, changes: list[Any]) -> int:
        return self._moved_outside

    def _walk(self) -> CommitDates | None:
        return self.shared.dates()

    @property
    def commits(self) -> KnownCommits:
        return self.shared.base.commits  # the run's one account of the store's commits

    def keep_commits_in(self, book: CommitBook) -> None:
        self.commit_book = book
        self.shared.base.keep_commits_in(book)

    def history_refusal(self) -> str:
        """One chain of commits holds every scope's namespace here: a history begun by the
        first scope's cycle would leave the others' pasts after it, out of time order."""
        return (
            "the store holds every scope, a namespace each; a history begins a store of one "
            "scope (a path template, or one store per namespace)"
        )

    def get(self, provider_id: str) -> Record | None:
        if self.shared.absent or not self.layout.holds(provider_id):
            return None
        return super().get(provider_id)

    # writes: this scope's namespace ------------------------------------------------------------

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        if self.shared.absent and ops:
            try:
                self.shared.base._initialise()  # type: ignore[attr-defined]  # create = true
            except ProviderError as exc:
                for op in ops:
                    yield WriteResult(op, error=exc)
                return
            self.shared.reset()
            self._borrow()
        yield from super().write_many(ops)
