"""A Mem0 server listing: one ``get_all`` snapshot, proven whole by a short call, in pages.

The server has no cursor: ``top_k`` is raised until a call comes back short (ADR-0024, via
``paging``), up to the ``MAX_TOP_K`` the server accepts; a scope that reaches it, or a server
that ignores ``top_k``, is listed partially, so no delete is inferred from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memsync.providers.base import Listing, Page
from memsync.providers.mem0.convert import record_from_mem0
from memsync.providers.mem0.paging import fetch_all
from memsync.records import Skipped

if TYPE_CHECKING:
    from memsync.providers.mem0.server import Mem0ServerProvider

MAX_TOP_K = 1000  # the server validates top_k in 0..1000
PAGE_SIZE = 200


class ServerListing(Listing):
    """One get_all snapshot, proven whole by a short call, handed out in pages."""

    def __init__(self, provider: Mem0ServerProvider) -> None:
        super().__init__()
        self.provider = provider

    def pages(self) -> Iterator[Page]:
        provider = self.provider
        features = provider.features()
        self.hides_expired = not features.show_expired
        ignored_top_k = False

        def get_all(top_k: int) -> list[Any]:
            nonlocal ignored_top_k
            results = provider._get_all(top_k)
            ignored_top_k = ignored_top_k or len(results) > top_k
            return results

        start = max(1, min(provider.start_top_k, MAX_TOP_K))
        fetched = fetch_all(get_all, start=start, limit=MAX_TOP_K)
        page = Page([])
        seen: set[str] = set()
        for raw in fetched.items:
            if not isinstance(raw, dict):
                self.mark_partial("the server listed something that is not a memory")
                continue
            item = record_from_mem0(raw, provider.scope_key())
            if item.id in seen:
                self.mark_partial(f"the server listed memory {item.id} twice")
                continue
            seen.add(item.id)
            if isinstance(item, Skipped):
                page.skipped.append(item)
            else:
                page.records.append(item)
            if len(page.records) >= PAGE_SIZE:
                yield page
                page = Page([])
        if page.records or page.skipped:
            yield page
        if not fetched.complete:
            self.mark_partial(
                f"the scope holds {MAX_TOP_K} or more memories, the most the server returns "
                "in one call (get_all has no cursor)"
            )
        elif not features.top_k or ignored_top_k:
            self.mark_partial(
                "the server ignores top_k on GET /memories, so a short answer may be its "
                "default cap; upgrade the server to infer deletes from it"
            )
        if self.partial_reason is None:
            self.complete = True
