"""A Mem0 server scope read whole: ``GET /memories`` proven by a short answer, and past its
1,000 cap ``POST /search`` checked against ``GET /entities`` (``server_search``).

The server has no cursor: ``top_k`` is raised until a call comes back short (ADR-0024, via
``paging``), up to the ``MAX_TOP_K`` the server accepts. A scope that reaches it is read again
through the search, and is complete only if the entity count proves it; a server that ignores
``top_k``, rows memsync cannot read (no id, not an object, listed twice, outside the scope), or
a count that does not match make the listing partial, so no delete is inferred from it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memsync.base.errors import NotFound
from memsync.base.records import Skipped
from memsync.providers.base import Listing, Page
from memsync.providers.mem0.convert import record_from_mem0
from memsync.providers.mem0.paging import fetch_all
from memsync.providers.mem0.server_entities import Entity, read_entities
from memsync.providers.mem0.server_search import search_scope, search_top_k, unproven

if TYPE_CHECKING:
    from memsync.providers.mem0.server import Mem0ServerProvider

MAX_TOP_K = 1000  # the server validates top_k in 0..1000
PAGE_SIZE = 200


@dataclass
class ScopeRead:
    """The memories one read of a scope returned, by id, and whether they are all of them."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    partial: list[str] = field(default_factory=list)  # why not complete (first reason shown)
    hides_expired: bool = False

    def take(self, found: list[Any], where: str, scope: Mapping[str, str]) -> None:
        """Keep the rows that are readable memories of ``scope``; say why any is not."""
        for number, row in enumerate(found):
            if not isinstance(row, dict):
                self.partial.append(f"{where} row {number} is {type(row).__name__}, not a memory")
                continue
            memory_id = row.get("id")
            if not isinstance(memory_id, str) or not memory_id:
                self.partial.append(f"{where} row {number} has no id")
                continue
            if any(row.get(k) not in (None, v) for k, v in scope.items()):
                self.partial.append(f"{where} answered memory {memory_id} of another scope")
                continue
            self.rows[memory_id] = row


def read_scope(provider: Mem0ServerProvider) -> ScopeRead:
    """Every memory of the provider's scope the server shows, and whether that is all."""
    features = provider.features()
    read = ScopeRead(hides_expired=not features.show_expired)
    ignored_top_k = False

    def get_all(top_k: int) -> list[Any]:
        nonlocal ignored_top_k
        results = provider._get_all(top_k)
        ignored_top_k = ignored_top_k or len(results) > top_k
        return results

    start = max(1, min(provider.start_top_k, MAX_TOP_K))
    fetched = fetch_all(get_all, start=start, limit=MAX_TOP_K)
    listed = len(fetched.items)
    read.take(fetched.items, "GET /memories", {})
    if len(read.rows) < listed - len(read.partial):
        read.partial.append("GET /memories listed a memory twice")
    if features.top_k and ignored_top_k:
        provider.features_changed("GET /memories ignored top_k where the server's schema has it")
    if not features.top_k or ignored_top_k:
        read.partial.append(
            "the server ignores top_k on GET /memories, so a short answer may be its "
            "default cap; upgrade the server to infer deletes from it"
        )
    elif not fetched.complete:
        why = _past_the_cap(provider, read)
        if why:
            read.partial.append(
                f"the scope holds {MAX_TOP_K} or more memories, the most GET /memories "
                f"returns (it has no cursor), and {why}"
            )
    return read


def _past_the_cap(provider: Mem0ServerProvider, read: ScopeRead) -> str | None:
    """Read the rest through POST /search; why it cannot be shown complete, or None.

    The search runs even when no count can prove it (no ``/entities``, a scope of two ids, a
    Qdrant-backed server whose ``/entities`` is empty): what it finds is mirrored, and the
    listing stays partial, so memories past the cap are copied but none is taken as deleted.
    """
    scope = provider.scope
    if provider.features().search is False:
        return "the server has no POST /search"
    entity, uncounted = _count_of(provider)  # counted just before the search
    try:
        if entity is not None:
            found = search_scope(
                provider.http, provider.name, scope, search_top_k(entity.total_memories)
            )
        else:
            found = fetch_all(
                lambda top_k: search_scope(provider.http, provider.name, scope, top_k),
                start=4 * MAX_TOP_K,
            ).items
    except NotFound:
        if provider.features().search:
            provider.features_changed("POST /search answered 404 where the server's schema has it")
        return "the server has no POST /search"
    before = len(read.partial)
    read.take(found, "POST /search", scope)
    if len(read.partial) > before:
        return read.partial.pop()
    if entity is None:
        return f"{uncounted}, so POST /search cannot be checked against a count"
    return unproven(read.rows, entity)


def _count_of(provider: Mem0ServerProvider) -> tuple[Entity | None, str]:
    """The scope's entity from a fresh ``GET /entities``, or why there is none to trust."""
    scope = provider.scope
    if len(scope) != 1:
        return None, "GET /entities counts each id alone, not a scope of " + " and ".join(scope)
    census = read_entities(provider.http, provider.name)
    if census is None:
        if provider.features().entities:
            provider.features_changed("GET /entities answered 404 where the server's schema has it")
        return None, "the server has no GET /entities"
    if not census.complete:
        return None, str(census.note)
    entity = census.find(scope)
    if entity is None:
        return None, "GET /entities does not list this scope (a Qdrant-backed server lists none)"
    return entity, ""


class ServerListing(Listing):
    """One read of the scope (``read_scope``), handed out in pages."""

    def __init__(self, provider: Mem0ServerProvider) -> None:
        super().__init__()
        self.provider = provider

    def pages(self) -> Iterator[Page]:
        ahead, read = self.provider.read_taken()
        if not ahead:
            read = read_scope(self.provider)
        self.hides_expired = read.hides_expired
        scope_key = self.provider.scope_key()
        page = Page([])
        for raw in read.rows.values():
            item = record_from_mem0(raw, scope_key)
            if isinstance(item, Skipped):
                page.skipped.append(item)
            else:
                page.records.append(item)
            if len(page.records) >= PAGE_SIZE:
                yield page
                page = Page([])
        if page.records or page.skipped:
            yield page
        if read.partial:
            self.mark_partial(read.partial[0])
        else:
            self.complete = True
