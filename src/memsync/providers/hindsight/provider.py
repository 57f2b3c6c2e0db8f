"""``hindsight``: one Hindsight memory bank (or every bank) over its HTTP API.

A memsync record is one Hindsight *document*, because the document is what Hindsight lets a
client name, replace and delete: memsync writes each memory as a document whose id is the
memory's origin key (so a replayed write replaces instead of duplicating), and the record's
id is that document id. Its content is the text of the document's memory units in order.
Listing reads the memory-unit list (what the PMM reference exports) and groups it by
document; ``observation`` units are Hindsight's own inferences over other memories, not
something a user wrote, so they are left out (not reported as skipped).

Hindsight keeps only string metadata values: anything else is written as JSON behind a
marker and decoded on read, so metadata round-trips with its types. Offset paging shifts
while a bank changes, so a full listing is complete only when the bank's total held still
and every unit it counted was seen; deletes are never inferred from anything less.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any
from urllib.parse import quote, unquote

import httpx

from memsync.config import Config, HindsightConfig
from memsync.errors import InvalidResponse, NotFound, ProviderError
from memsync.providers.base import Capabilities, Listing, Page, require_content
from memsync.providers.concurrent import PagesAhead, read_concurrently
from memsync.providers.http import (
    DEFAULT_CONCURRENCY,
    HttpProvider,
    RetryPolicy,
    expect_list,
    expect_object,
)
from memsync.records import (
    ORIGIN_KEY,
    Outgoing,
    Record,
    Skipped,
    is_blank,
    is_expired,
    parse_instant,
)
from memsync.secrets import Secret, resolve_secret

API = "/v1/default"
# Hindsight has no expiry and no history. A memory's expiration_date is kept in this metadata
# key; once it has passed, memsync deletes the document (at the write, or at the first full
# listing after the date) so agents stop being served it, and keeps the memory itself: the
# staging journal and PMM backups hold it, and clearing or moving the date writes it back.
EXPIRES_KEY = "memsync_expiration_date"
PAGE_SIZE = 500
BANK_PAGE_SIZE = 100
OBSERVATION = "observation"
PROVENANCE_KEY = "memsync_provenance"
# Non-string metadata values travel as this marker followed by their JSON. A string that
# itself starts with the marker is encoded too, so decoding is never ambiguous.
JSON_MARKER = "memsync-json:"
EMPTY_REASON = "empty content"
NO_DOCUMENT_REASON = "memory without a document: Hindsight can neither replace nor delete it"


# metadata ---------------------------------------------------------------------------------


def encode_value(value: Any) -> str:
    """A metadata value as the string Hindsight can keep; ``decode_value`` reverses it."""
    if isinstance(value, str) and not value.startswith(JSON_MARKER):
        return value
    return JSON_MARKER + json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def decode_value(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(JSON_MARKER):
        try:
            return json.loads(value[len(JSON_MARKER) :])
        except ValueError:
            return value
    return value


def metadata_for_hindsight(item: Outgoing) -> dict[str, str]:
    """The user's metadata as strings, plus the origin marker and the provenance."""
    metadata = {key: encode_value(value) for key, value in item.metadata.items()}
    metadata[ORIGIN_KEY] = item.origin
    provenance = {k: v for k, v in item.provenance.items() if v is not None}
    if provenance:
        metadata[PROVENANCE_KEY] = json.dumps(provenance, ensure_ascii=False, sort_keys=True)
    if item.expiration_date:
        metadata[EXPIRES_KEY] = item.expiration_date
    return metadata


# record mapping ---------------------------------------------------------------------------


def _unit_order(unit: dict[str, Any]) -> tuple[str, int]:
    """Units of one document in the order they were written (chunk index, then time)."""
    chunk = str(unit.get("chunk_id") or "")
    tail = chunk.rsplit("_", 1)[-1]
    return (str(unit.get("mentioned_at") or ""), int(tail) if tail.isdigit() else 0)


def version_of(units: list[dict[str, Any]]) -> str:
    """Changes whenever a unit is replaced (new id) or rewritten (new updated_at)."""
    stamps = sorted(f"{u.get('id')}@{u.get('updated_at') or ''}" for u in units)
    return hashlib.sha256("|".join(stamps).encode()).hexdigest()[:32]


def record_from_units(
    record_id: str, units: list[dict[str, Any]], scope_key: str, text: str | None = None
) -> Record | Skipped:
    """One document's memory units as a Record, or Skipped (by id) when they hold no text.

    ``text`` is the document's own text, passed when it was cut into several units: their
    texts joined would not give back what was written.
    """
    units = sorted(units, key=_unit_order)
    if text is None:
        text = "\n".join(str(u.get("text") or "") for u in units)
    if is_blank(text):
        return Skipped(record_id, EMPTY_REASON)
    raw = dict(units[0].get("metadata") or {})
    origin = raw.pop(ORIGIN_KEY, None)
    expires = raw.pop(EXPIRES_KEY, None)
    provenance = _decode_provenance(raw.pop(PROVENANCE_KEY, None))
    metadata = {str(k): decode_value(v) for k, v in raw.items()}
    context = units[0].get("context")
    if context:
        provenance["context"] = context
    tags = sorted({t for u in units for t in (u.get("tags") or [])})
    if tags:
        provenance["tags"] = tags
    provenance["fact_types"] = sorted({str(u.get("fact_type") or "") for u in units})
    provenance["memory_ids"] = [str(u.get("id")) for u in units]
    mentioned = [parse_instant(u.get("mentioned_at")) for u in units]
    first = min((m for m in mentioned if m is not None), default=None)
    updated = [str(u["updated_at"]) for u in units if u.get("updated_at")]
    return Record(
        id=record_id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=first.isoformat() if first else None,
        updated_at=max(updated, key=_instant_key) if updated else None,
        version=version_of(units),
        provenance=provenance,
        origin=origin if isinstance(origin, str) and origin else None,
        expiration_date=expires if isinstance(expires, str) and expires else None,
    )


def _decode_provenance(value: Any) -> dict[str, Any]:
    if not isinstance(value, str):
        return {}
    try:
        decoded = json.loads(value)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _instant_key(value: str) -> float:
    instant = parse_instant(value)
    return instant.timestamp() if instant else 0.0


def _utc_iso(value: str) -> str:
    instant = parse_instant(value)
    if instant is None:
        return value
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


# ids --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentRef:
    """Where one record lives: its bank and its document id."""

    bank: str
    document: str


# the provider -----------------------------------------------------------------------------


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
    def _bank_path(bank: str) -> str:
        return f"{API}/banks/{quote(bank, safe='')}"

    def _document_path(self, ref: DocumentRef) -> str:
        return f"{self._bank_path(ref.bank)}/documents/{quote(ref.document, safe='')}"

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
        path = f"{self._bank_path(bank)}/memories/list"
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
        path = f"{self._bank_path(bank)}/documents"
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
        try:
            self.http.get(self._document_path(ref))
        except NotFound:
            if ref.document != item.origin:
                raise NotFound(f"{self.name}: no memory {provider_id!r} to update") from None
            # memsync's own document for this memory, deleted when its date passed: the
            # update (date cleared or moved) writes it back under the same id.
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
            entry["timestamp"] = _utc_iso(item.created_at)
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
            f"{self._bank_path(ref.bank)}/memories",
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
                for document in documents:
                    units, held = provider.units(bank, document_id=str(document["id"]))
                    if not held:
                        self.mark_partial(f"document {document['id']!r} changed while read")
                    if units:
                        yield from self._records(bank, units)
        for record_id in self.expired:  # after the pass: deleting mid-pass shifts offsets
            provider.delete(record_id)
        if self.partial_reason is None:
            # A partial pass keeps no cursor, so the next listing starts over in full.
            self.cursor = newest
            self.complete = self.mode == "full"  # incremental passes never imply deletes

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


def _total(provider: str, body: dict[str, Any], where: str) -> int:
    total = body.get("total")
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        raise InvalidResponse(f"{provider}: {where} answered without a valid 'total'")
    return total


def _latest(current: str | None, stamps: Iterable[Any]) -> str | None:
    """The newest of the current cursor and the timestamps seen."""
    best = current
    for stamp in stamps:
        if (
            isinstance(stamp, str)
            and stamp
            and (best is None or _instant_key(stamp) > _instant_key(best))
        ):
            best = stamp
    return best


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
