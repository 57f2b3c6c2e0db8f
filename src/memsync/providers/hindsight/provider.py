"""``hindsight``: one Hindsight memory bank (or every bank) over its HTTP API.

memsync writes each memory as a document whose id is the memory's origin key (so a replayed
write replaces instead of duplicating), and the record's id is that document id (see
``convert``). Listing reads the memory-unit list (what the PMM reference exports) and groups
it by document (see ``listing``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

import httpx

from memsync.base.errors import InvalidResponse, NotFound, ProviderError
from memsync.base.records import (
    Outgoing,
    Record,
    is_expired,
)
from memsync.base.secrets import Secret, resolve_secret
from memsync.config import Config, HindsightConfig
from memsync.providers.base import Capabilities, Listing, require_content
from memsync.providers.change_probe import ProbeMaker
from memsync.providers.concurrent import PagesAhead
from memsync.providers.hindsight.convert import (
    OBSERVATION,
    DocumentRef,
    metadata_for_hindsight,
    record_from_units,
    utc_iso,
)
from memsync.providers.hindsight.listing import HindsightListing
from memsync.providers.hindsight.probe import HindsightDocumentsProbe
from memsync.providers.http.provider import DEFAULT_CONCURRENCY, HttpProvider
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.http.shapes import expect_list, expect_object

API = "/v1/default"
PAGE_SIZE = 500
BANK_PAGE_SIZE = 100


class HindsightProvider(HttpProvider):
    type = "hindsight"
    family = "hindsight"
    capabilities = Capabilities(
        incremental=True,
        client_ids=True,
        batch_writes=False,
        timestamps=True,
        multi_scope=True,
        metadata_values="strings",
    )

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        bank: str | None = None,
        secret: Secret | None = None,
        timeout: float = 30.0,
        allow_insecure_http: bool = False,
        lookback: float = 600.0,
        page_size: int = PAGE_SIZE,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        super().__init__(
            name,
            base_url,
            secret=secret,
            auth="bearer",
            timeout=timeout,
            allow_insecure_http=allow_insecure_http,
            transport=transport,
            retry=retry,
            sleep=sleep,
            concurrency=concurrency,
        )
        self.bank = bank
        self.lookback = lookback
        self.page_size = page_size

    # lifecycle --------------------------------------------------------------------------

    # identity ---------------------------------------------------------------------------

    def identity(self) -> str:
        return f"hindsight:{self.base_url}#{self.bank or '*'}"

    def scope_key(self) -> str:
        return self.bank or ""

    def describe_scope(self) -> dict[str, Any]:
        return {"scope_key": self.scope_key(), "bank": self.bank}

    def record_id(self, ref: DocumentRef) -> str:
        """The document id with one bank; ``bank/document`` (bank %-encoded) with all banks."""
        if self.bank is not None:
            return ref.document
        return f"{quote(ref.bank, safe='')}/{ref.document}"

    def ref_of(self, provider_id: str) -> DocumentRef:
        if self.bank is not None:
            return DocumentRef(self.bank, provider_id)
        bank, sep, document = provider_id.partition("/")
        if not sep or not bank or not document:
            raise NotFound(f"{self.name}: {provider_id!r} is not a 'bank/document' id")
        return DocumentRef(unquote(bank), document)

    # paths ------------------------------------------------------------------------------

    @staticmethod
    def bank_path(bank: str) -> str:
        return f"{API}/banks/{quote(bank, safe='')}"

    def _document_path(self, ref: DocumentRef) -> str:
        return f"{self.bank_path(ref.bank)}/documents/{quote(ref.document, safe='')}"

    # reads ------------------------------------------------------------------------------

    def listing(self, cursor: str | None = None) -> Listing:
        return HindsightListing(self, cursor)

    def banks(self) -> tuple[list[str], bool]:
        """Every bank's id, and whether the bank list held still while it was paged."""
        if self.bank is not None:
            return [self.bank], True
        seen: dict[str, None] = {}
        first_total: int | None = None
        steady = True
        offset = 0
        while True:
            body = self._page(f"{API}/banks", {"limit": BANK_PAGE_SIZE, "offset": offset})
            total = _total(self.name, body, "banks")
            rows = expect_list(self.name, body.get("banks"), "GET /banks: banks")
            first_total = total if first_total is None else first_total
            steady = steady and total == first_total
            for row in rows:
                bank_id = expect_object(self.name, row, "GET /banks: bank").get("bank_id")
                if not isinstance(bank_id, str) or not bank_id:
                    raise InvalidResponse(f"{self.name}: GET /banks answered a bank without an id")
                steady = steady and bank_id not in seen
                seen.setdefault(bank_id, None)
            offset += len(rows)
            if len(rows) < BANK_PAGE_SIZE or offset >= total:
                break
        return list(seen), steady and len(seen) == first_total

    def units(self, bank: str, **filters: str) -> tuple[list[dict[str, Any]], bool]:
        """Every memory unit of a bank (optionally of one document) and whether the pass held.

        A missing bank holds nothing. The pass held when the total never moved between pages,
        no unit came twice (a repeat means the pages shifted) and the distinct units seen are
        exactly the total.
        """
        path = f"{self.bank_path(bank)}/memories/list"
        seen: dict[str, dict[str, Any]] = {}
        # Once the first page has told the total, the pages it implies are fetched ahead.
        ahead = PagesAhead(
            lambda n: self._page(
                path, {**filters, "limit": self.page_size, "offset": (n - 1) * self.page_size}
            ),
            self.concurrency,
        )
        try:
            return self._units(ahead, seen)
        except NotFound:
            self._confirm_server()
            return [], True
        finally:
            ahead.close()

    def _units(
        self, ahead: PagesAhead[dict[str, Any]], seen: dict[str, dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], bool]:
        first_total: int | None = None
        steady = True
        offset = 0
        number = 1
        while True:
            body = ahead.get(number)
            total = _total(self.name, body, "memories/list")
            if number == 1:
                ahead.last = -(-total // self.page_size)
            number += 1
            rows = expect_list(self.name, body.get("items"), "memories/list: items")
            first_total = total if first_total is None else first_total
            steady = steady and total == first_total
            for row in rows:
                unit = expect_object(self.name, row, "memories/list: item")
                unit_id = unit.get("id")
                if not isinstance(unit_id, str) or not unit_id:
                    raise InvalidResponse(f"{self.name}: memories/list answered a unit without id")
                steady = steady and unit_id not in seen  # a repeat means the pages shifted
                seen.setdefault(unit_id, unit)
            offset += len(rows)
            if len(rows) < self.page_size or offset >= total:
                break
        return list(seen.values()), steady and len(seen) == first_total

    def changed_documents(self, bank: str, since: str) -> tuple[list[dict[str, Any]], bool]:
        """Documents of a bank written at or after ``since`` (newest first), and if it held."""
        path = f"{self.bank_path(bank)}/documents"
        seen: dict[str, dict[str, Any]] = {}
        first_total: int | None = None
        steady = True
        offset = 0
        params = {"time_field": "updated_at", "start_date": since}
        while True:
            try:
                body = self._page(path, {**params, "limit": self.page_size, "offset": offset})
            except NotFound:
                self._confirm_server()
                return [], True
            total = _total(self.name, body, "documents")
            rows = expect_list(self.name, body.get("items"), "documents: items")
            first_total = total if first_total is None else first_total
            steady = steady and total == first_total
            for row in rows:
                document = expect_object(self.name, row, "documents: item")
                document_id = document.get("id")
                if not isinstance(document_id, str) or not document_id:
                    raise InvalidResponse(f"{self.name}: documents answered a document without id")
                steady = steady and document_id not in seen
                seen.setdefault(document_id, document)
            offset += len(rows)
            if len(rows) < self.page_size or offset >= total:
                break
        return list(seen.values()), steady and len(seen) == first_total

    def _page(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        return expect_object(self.name, self.http.get(path, params=params), f"GET {path}")

    def _confirm_server(self) -> None:
        """A 404 means "no such bank" only if this is a Hindsight API at all."""
        try:
            body = self.http.get(f"{API}/banks", params={"limit": 1})
        except NotFound:
            raise ProviderError(
                f"{self.name}: {self.base_url} has no Hindsight API under {API}; "
                "check base_url (the server's root, without /v1)"
            ) from None
        if not isinstance(body, dict) or "banks" not in body:
            raise InvalidResponse(
                f"{self.name}: {self.base_url}{API}/banks did not answer like Hindsight; "
                "check base_url"
            )

    def get(self, provider_id: str) -> Record | None:
        try:
            ref = self.ref_of(provider_id)
        except NotFound:
            return None
        units, _ = self.units(ref.bank, document_id=ref.document)
        units = [u for u in units if u.get("fact_type") != OBSERVATION]
        if not units:
            return None
        record = record_from_units(provider_id, units, ref.bank, self.document_text(ref, units))
        return record if isinstance(record, Record) else None

    def document_text(self, ref: DocumentRef, units: list[dict[str, Any]]) -> str | None:
        """The document's original text when it spans several units (None: use the units')."""
        if len(units) < 2:
            return None
        try:
            body = self.http.get(self._document_path(ref))
        except NotFound:
            return None
        text = expect_object(self.name, body, "GET document").get("original_text")
        return text if isinstance(text, str) else None

    # writes -----------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        bank = self.bank or item.scope_key
        if not bank:
            raise ProviderError(
                f"{self.name}: memory {item.origin} has no scope_key to name a bank; "
                f"set bank in providers.{self.name}"
            )
        return self._retain(DocumentRef(bank, item.origin), item)

    def update(self, provider_id: str, item: Outgoing) -> Record:
        require_content(self.name, item)
        ref = self.ref_of(provider_id)
        if ref.document != item.origin:
            # A document written elsewhere: retaining under its id would bring it back if it
            # was deleted meanwhile, so it must still be there.
            try:
                self.http.get(self._document_path(ref))
            except NotFound:
                raise NotFound(f"{self.name}: no memory {provider_id!r} to update") from None
        # memsync's own document for this memory (named by its origin) is written whether or
        # not it is still there: one deleted when its date passed comes back under the same id
        # when the update clears or moves the date. No request is spent asking.
        return self._retain(ref, item)

    def delete(self, provider_id: str) -> None:
        try:
            ref = self.ref_of(provider_id)
        except NotFound:
            return
        try:
            self.http.request("DELETE", self._document_path(ref))
        except NotFound:
            return  # already gone (or the bank is): deleting twice is harmless

    def _retain(self, ref: DocumentRef, item: Outgoing) -> Record:
        """Write one memory as document ``ref`` (replacing it) and read back what is held;
        an already-expired memory is then deleted (Hindsight has no expiry: see EXPIRES_KEY)."""
        record = self._retain_document(ref, item)
        if is_expired(item.expiration_date):
            self.delete(record.id)
        return record

    def _retain_document(self, ref: DocumentRef, item: Outgoing) -> Record:
        entry: dict[str, Any] = {
            "content": item.content,
            "metadata": metadata_for_hindsight(item),
            "document_id": ref.document,
            "update_mode": "replace",
        }
        if item.created_at:
            entry["timestamp"] = utc_iso(item.created_at)
        context = item.provenance.get("context")
        if isinstance(context, str) and context:
            entry["context"] = context
        tags = item.provenance.get("tags")
        if isinstance(tags, list) and all(isinstance(t, str) for t in tags) and tags:
            entry["tags"] = tags
        # Reusing a document_id replaces that document, so resending after a lost answer
        # cannot write the memory twice: the call is safe to retry.
        body = self.http.json(
            "POST",
            f"{self.bank_path(ref.bank)}/memories",
            json={"items": [entry], "async": False},
            idempotent=True,
        )
        answer = expect_object(self.name, body, "POST memories")
        if answer.get("success") is False:
            raise ProviderError(f"{self.name}: Hindsight did not retain memory {item.origin}")
        record_id = self.record_id(ref)
        held = self.get(record_id)
        if held is None:
            raise InvalidResponse(
                f"{self.name}: retained document {ref.document!r} in bank {ref.bank!r} but it "
                "lists no memory; is the server retaining asynchronously?"
            )
        return held


def _total(provider: str, body: dict[str, Any], where: str) -> int:
    total = body.get("total")
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        raise InvalidResponse(f"{provider}: {where} answered without a valid 'total'")
    return total


def change_probe(name: str, entry: HindsightConfig) -> ProbeMaker | None:
    """One bank's newest document (``probe``); a provider over every bank has none."""
    if entry.bank is None:
        return None
    return lambda provider: HindsightDocumentsProbe(name, provider)


def build(name: str, entry: HindsightConfig, config: Config) -> HindsightProvider:
    return HindsightProvider(
        name,
        entry.base_url,
        bank=entry.bank,
        secret=resolve_secret(name, entry.api_key_env, entry.api_key_file),
        timeout=entry.timeout,
        allow_insecure_http=entry.allow_insecure_http,
        concurrency=entry.concurrency,
        lookback=entry.lookback,
    )
