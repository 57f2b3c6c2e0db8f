"""A Cognee listing: the dataset's items page by page, complete only when the count held."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memsync.base.errors import AuthError, NotFound
from memsync.base.records import Skipped
from memsync.providers.base import Listing, Page
from memsync.providers.cognee.convert import record_from_item
from memsync.providers.concurrent import PagesAhead, read_concurrently

if TYPE_CHECKING:
    from memsync.providers.cognee.provider import CogneeProvider


class CogneeListing(Listing):
    """The dataset's items page by page, complete only when the count held and all were seen.

    ``GET .../data`` pages by offset over ``created_at`` and is not a snapshot: a write
    during the pass shifts the pages. The count before and after must agree with the number
    of distinct items seen, or the listing is partial.
    """

    def __init__(self, provider: CogneeProvider) -> None:
        super().__init__()
        self.provider = provider

    def pages(self) -> Iterator[Page]:
        provider = self.provider
        dataset_id = provider.dataset_id()
        if dataset_id is not None:
            try:
                before = provider.count(dataset_id)
            except AuthError:
                if not provider.gone():
                    raise
                dataset_id = None
        if dataset_id is None:
            self.complete = True  # no dataset of that name: it holds nothing
            return
        seen: set[str] = set()
        repeated = 0
        # The count said how many pages there are: they are fetched ahead.
        ahead = PagesAhead(
            lambda n: provider.items(dataset_id, (n - 1) * provider.page_size),
            provider.concurrency,
        )
        ahead.last = -(-before // provider.page_size)
        number = 1
        try:
            while True:
                items = ahead.get(number)
                page = Page([])
                fresh = []
                for item in items:
                    if item["id"] in seen:
                        repeated += 1  # the pages shifted under the listing
                        continue
                    seen.add(item["id"])
                    fresh.append(item)
                texts = read_concurrently(
                    lambda item: provider.text_of(dataset_id, item), fresh, provider.concurrency
                )
                for item, text in zip(fresh, texts, strict=True):
                    if isinstance(text, NotFound):
                        self.mark_partial(f"item {item['id']} vanished while the dataset was read")
                        continue
                    if isinstance(text, Exception):
                        raise text
                    result = (
                        text
                        if isinstance(text, Skipped)
                        else record_from_item(item, text, provider.dataset)
                    )
                    if isinstance(result, Skipped):
                        page.skipped.append(result)
                    else:
                        page.records.append(result)
                if page.records or page.skipped:
                    yield page
                if len(items) < provider.page_size:
                    break
                number += 1
        finally:
            ahead.close()
        after = provider.count(dataset_id)
        if repeated or not before == after == len(seen):
            self.mark_partial(
                f"dataset {provider.dataset!r} changed while it was read "
                f"(count {before} before, {after} after, {len(seen)} items seen, "
                f"{repeated} seen twice)"
            )
        elif self.partial_reason is None:
            self.complete = True
