"""A mnem listing: everything from working memory, or only what a diff since the cursor changed.

A listing from a cursor is ``diff(cursor, head)`` with the head commit id as the next cursor,
so a cycle with no new commit reads no node at all; without a cursor (or from a cursor commit
the store does not know, because the store was replaced) it is the whole working memory.
Either way it is paged here, ``PAGE_SIZE`` records a page, and complete once every page was read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from memsync.providers.base import Listing, Page
from memsync.records import Record, Skipped

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
