"""A Mem0 Platform listing: offset pages of the v3 list, trusted only when counts and pages agree.

Offset paging shifts when memories are written while it runs, so a full listing is complete
only when every page reports the same ``count``, no memory repeats and the pages hold exactly
``count`` memories. Incremental listings filter on ``updated_at >= cursor - lookback`` (the
look-back absorbs late-visible writes). They never reveal deletes (``removed`` stays empty;
the engine infers deletes only from a full pass), and like full ones they are ``complete`` and
carry a cursor only when the same count checks prove the pass whole.

A scope's first full page may have been read ahead (``Mem0PlatformProvider.read_ahead``):
when it holds the whole scope (the count fits a page), the listing is that page, a full one
whatever the cursor, for the cost of an incremental one; a full listing starts from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memsync.base.records import Skipped, parse_instant
from memsync.providers.base import Listing, Page
from memsync.providers.concurrent import PagesAhead
from memsync.providers.mem0.convert import record_from_mem0

if TYPE_CHECKING:
    from memsync.providers.mem0.platform import Mem0PlatformProvider


class PlatformListing(Listing):
    """Offset pages of the v3 list, trusted only when counts and pages agree."""

    def __init__(self, provider: Mem0PlatformProvider, last: datetime | None) -> None:
        super().__init__()
        self.provider = provider
        self.last = last
        self.since = last - provider.lookback if last is not None else None
        self.mode: Literal["full", "incremental"] = "incremental" if last else "full"
        # latest_only leaves out what Dream retired: a memory missing from the pass may be
        # superseded or merged, not deleted, so the mirror reads it by id first.
        self.hides_retired = provider.latest_only

    def pages(self) -> Iterator[Page]:
        provider = self.provider
        first = provider.read_taken()  # the scope's first full page, read ahead
        if first is not None and _whole(first, provider.page_size):
            # The scope's every memory in one page, as a full listing sees it: listed in full
            # for what an incremental one costs, deletes included.
            self.mode, self.since = "full", None
        elif first is not None and self.mode == "incremental":
            first = None  # more than a page: its changes since the cursor are read instead
        filters = provider._filters(self.since)
        seen: set[str] = set()
        repeated = 0
        counts: list[int | None] = []
        newest = self.last
        number = 1
        # Once the first page has told the count, the pages it implies are fetched ahead.
        ahead = PagesAhead(
            lambda n: first if n == 1 and first is not None else provider._page(n, filters),
            provider.concurrency,
        )
        try:
            while True:
                body = ahead.get(number)
                counts.append(body["count"])
                if number == 1 and counts[0] is not None:
                    ahead.last = -(-counts[0] // provider.page_size)
                page = Page([])
                for raw in body["results"]:
                    if not isinstance(raw, dict) or not raw.get("id"):
                        self.mark_partial("the Platform listed an entry without an id")
                        continue
                    if str(raw["id"]) in seen:
                        repeated += 1
                        continue
                    seen.add(str(raw["id"]))
                    updated = parse_instant(raw.get("updated_at"))
                    if updated is not None and (newest is None or updated > newest):
                        newest = updated
                    item = record_from_mem0(raw, provider.scope_key())
                    if isinstance(item, Skipped):
                        page.skipped.append(item)
                    else:
                        page.records.append(item)
                        provider._dated[item.id] = bool(item.expiration_date)
                if page.records or page.skipped:
                    yield page
                expected_pages = -(-(counts[0] or 0) // provider.page_size) + 2
                if not body.get("next") or not body["results"]:
                    break
                if number >= expected_pages:
                    self.mark_partial("the Platform kept offering pages past its own count")
                    break
                number += 1
        finally:
            ahead.close()
        self._judge(counts, len(seen), repeated, newest)

    def _judge(
        self, counts: list[int | None], unique: int, repeated: int, newest: datetime | None
    ) -> None:
        first = counts[0]
        if first is None:
            self.mark_partial("the Platform's list answered no count to check the pages against")
        elif any(c != first for c in counts):
            self.mark_partial(
                f"the count changed while paging ({first} -> {counts[-1]}): memories were "
                "written or deleted meanwhile, so offset pages may have skipped some"
            )
        elif repeated:
            self.mark_partial(f"offset paging listed {repeated} memories twice (data shifted)")
        elif unique != first:
            self.mark_partial(f"the pages held {unique} memories but the Platform counted {first}")
        if self.partial_reason is not None:
            return
        self.cursor = utc_iso(newest) if newest is not None else None
        self.complete = True


def _whole(page: dict[str, Any], page_size: int) -> bool:
    """Whether a first page holds its listing's every memory (by its own count)."""
    count = page.get("count")
    return isinstance(count, int) and count <= page_size and not page.get("next")


def utc_iso(instant: datetime) -> str:
    """An instant as the Platform's filters take it: ISO in UTC with a Z."""
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")
