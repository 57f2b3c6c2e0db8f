"""A mnem listing: everything from working memory, or only what a diff since the cursor changed.

A listing from a cursor is ``diff(cursor, head)`` with the head commit id as the next cursor,
so a cycle with no new commit reads no node at all; without a cursor (or from a cursor commit
the store does not know, because the store was replaced) it is the whole working memory.
Either way it is paged here, ``PAGE_SIZE`` records a page, and complete once every page was read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from memsync.base.records import Record, Skipped
from memsync.providers.base import Listing, Page
from memsync.providers.mnem.handle import AUTHOR

PAGE_SIZE = 500


class MnemListing(Listing):
    """A full listing from a node map, or an incremental one from a diff."""

    def __init__(
        self,
        mode: Literal["full", "incremental"],
        cursor: str | None,
        produce: Any,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.cursor = cursor
        self._produce = produce
        self.tombstones_expired = True  # see memsync.providers.mnem.expiry
        self.tombstones_retired = True  # Dream's retired memories too (expiry)

    def pages(self) -> Iterator[Page]:
        yield from self._produce(self)
        if self.partial_reason is None:
            self.complete = True


def paged(items: list[Record | Skipped]) -> Iterator[Page]:
    """Records and skipped items in pages of at most PAGE_SIZE records."""
    page = Page([])
    for item in items:
        if isinstance(item, Skipped):
            page.skipped.append(item)
            continue
        page.records.append(item)
        if len(page.records) >= PAGE_SIZE:
            yield page
            page = Page([])
    if page.records or page.skipped:
        yield page


@dataclass(frozen=True)
class Vanished:
    """A removal the tree diff cannot show (see ``added_then_removed``)."""

    id: str
    kind: str = "removed"


def added_then_removed(
    store: Any,
    cursor: str,
    changes: list[Any],
    written: Callable[[str], Iterable[str] | None] = lambda commit: None,
) -> list[Vanished]:
    """Nodes a commit after the cursor added and a later one removed, as removals.

    The tree diff cursor..head cannot show them, yet the mirror may hold one: memsync
    writes after it lists, so a node it wrote and an agent then forgot is in neither
    tree. Only memsync's own commits after the cursor can have written such a node, so
    only they are looked at, and only when another commit follows the cursor too: what
    memsync noted of them (WRITTEN: the nodes a commit wrote, None when not noted), else
    what mnem says (``changed_by``, a scan of the store in mnem 0.0.7).
    """
    commits = commits_since(store, cursor)
    if commits is None or len(commits) < 2:
        return []
    listed = {change.id for change in changes}
    touched: set[str] = set()
    for commit in commits:
        if commit.author != AUTHOR:
            continue
        noted = written(commit.id)
        if noted is not None:
            touched.update(noted)
            continue
        changed = store.changed_by(commit.id)  # against its parent: cheaper than a diff
        touched.update(node_id for node_id, kind in changed.items() if kind != "removed")
    return [
        Vanished(node_id)
        for node_id in sorted(touched - listed)
        if store.working_node(node_id) is None
    ]


def commits_since(store: Any, cursor: str) -> list[Any] | None:
    """The first-parent commits after CURSOR, newest first (None: not on that line)."""
    limit = 16
    while True:
        commits: list[Any] = store.log(first_parent=True, limit=limit)
        for index, commit in enumerate(commits):
            if commit.id == cursor:
                return commits[:index]
        if len(commits) < limit:
            return None
        limit *= 16
