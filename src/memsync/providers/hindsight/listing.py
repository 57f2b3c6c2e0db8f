"""A Hindsight listing: a full pass over the memory units, or the documents changed since a cursor.

Offset paging shifts while a bank changes, so a full listing is complete only when the bank's
total held still and every unit it counted was seen; deletes are never inferred from anything
less. Expired memories are deleted after the pass (Hindsight has no expiry; memsync keeps them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, timedelta
from typing import TYPE_CHECKING, Any

from memsync.base.errors import ProviderError
from memsync.base.records import Skipped, parse_instant
from memsync.providers.base import Listing, Page
from memsync.providers.concurrent import read_concurrently
from memsync.providers.hindsight.convert import (
    NO_DOCUMENT_REASON,
    OBSERVATION,
    DocumentRef,
    instant_key,
    record_from_units,
)

if TYPE_CHECKING:
    from memsync.providers.hindsight.provider import HindsightProvider


class HindsightListing(Listing):
    """Full pass over the memory-unit list, or the documents written since a cursor."""

    def __init__(self, provider: HindsightProvider, cursor: str | None) -> None:
        super().__init__()
        self.provider = provider
        self.since = cursor
        self.mode = "incremental" if cursor else "full"
        self.observations = 0  # derived units left out, for whoever wants to say so
        self.tombstones_expired = True  # expired memories are deleted here, kept by memsync
        self.expired: list[str] = []

    def pages(self) -> Iterator[Page]:
        provider = self.provider
        banks, steady = provider.banks()
        if not steady:
            self.mark_partial("the bank list changed while it was read")
        newest: str | None = self.since
        for bank in banks:
            if self.since is None:
                units, held = provider.units(bank)
                if not held:
                    self.mark_partial(f"bank {bank!r} changed while it was read")
                newest = _latest(newest, (u.get("updated_at") for u in units))
                yield from self._records(bank, units)
            else:
                documents, held = provider.changed_documents(bank, self._window_start())
                if not held:
                    self.mark_partial(f"bank {bank!r} changed while it was read")
                newest = _latest(newest, (d.get("updated_at") for d in documents))
                yield from self._changed(bank, documents)
        for record_id in self.expired:  # after the pass: deleting mid-pass shifts offsets
            provider.delete(record_id)
        if self.partial_reason is None:
            # A partial pass keeps no cursor, so the next listing starts over in full. A
            # finished incremental pass is complete too (every change since the cursor); the
            # mirror infers no deletes from what it left out, and the next full pass finds them.
            self.cursor = newest
            self.complete = True

    def _changed(self, bank: str, documents: list[dict[str, Any]]) -> Iterator[Page]:
        """The units of each changed document, read ``concurrency`` documents at a time (one
        after another, 400 changed documents took 400 round trips), a page of them at once."""
        provider = self.provider
        step = max(1, provider.page_size)
        for start in range(0, len(documents), step):
            chunk = documents[start : start + step]
            answers = read_concurrently(
                lambda document: provider.units(bank, document_id=str(document["id"])),
                chunk,
                provider.concurrency,
            )
            units: list[dict[str, Any]] = []
            for document, answer in zip(chunk, answers, strict=True):
                if isinstance(answer, Exception):
                    raise answer
                if not answer[1]:
                    self.mark_partial(f"document {document['id']!r} changed while read")
                units.extend(answer[0])
            if units:
                yield from self._records(bank, units)  # their texts, too, read concurrently

    def _window_start(self) -> str:
        """The cursor minus the look-back: writes that committed late are read again."""
        assert self.since is not None
        instant = parse_instant(self.since)
        if instant is None:
            raise ProviderError(
                f"{self.provider.name}: the saved cursor {self.since!r} is not a timestamp; "
                "run a full sync to reset it"
            )
        start = instant - timedelta(seconds=self.provider.lookback)
        return start.astimezone(UTC).isoformat().replace("+00:00", "Z")

    def _records(self, bank: str, units: list[dict[str, Any]]) -> Iterator[Page]:
        by_document: dict[str, list[dict[str, Any]]] = defaultdict(list)
        page = Page([])
        for unit in units:
            if unit.get("fact_type") == OBSERVATION:
                self.observations += 1
                continue
            document = unit.get("document_id")
            if not document:
                page.skipped.append(Skipped(str(unit.get("id")), NO_DOCUMENT_REASON))
                continue
            by_document[str(document)].append(unit)
        groups = list(by_document.items())
        texts = read_concurrently(
            lambda entry: self.provider.document_text(DocumentRef(bank, entry[0]), entry[1]),
            groups,
            self.provider.concurrency,
        )
        for (document, group), text in zip(groups, texts, strict=True):
            if isinstance(text, Exception):
                raise text
            ref = DocumentRef(bank, document)
            result = record_from_units(self.provider.record_id(ref), group, bank, text)
            if isinstance(result, Skipped):
                page.skipped.append(result)
            elif result.expired:
                self.expired.append(result.id)
            else:
                page.records.append(result)
            if len(page.records) >= self.provider.page_size:
                yield page
                page = Page([])
        if page.records or page.skipped:
            yield page


def _latest(current: str | None, stamps: Iterable[Any]) -> str | None:
    """The newest of the current cursor and the timestamps seen."""
    best = current
    for stamp in stamps:
        if (
            isinstance(stamp, str)
            and stamp
            and (best is None or instant_key(stamp) > instant_key(best))
        ):
            best = stamp
    return best
