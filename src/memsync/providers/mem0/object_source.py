"""``import_mem0``'s source: a caller's Mem0 ``Memory`` or ``MemoryClient`` as a read-only provider.

It lists one scope, paged until the listing is proven whole.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, Literal

from memsync.base.errors import (
    AuthError,
    InvalidResponse,
    ProviderError,
    TransientProviderError,
)
from memsync.base.records import Outgoing, Record, Skipped
from memsync.providers.base import Listing, Page, Provider
from memsync.providers.mem0.convert import record_from_mem0, scope_key_of
from memsync.providers.mem0.paging import fetch_all

CLIENT_PAGE_SIZE = 200  # the Mem0 Platform's largest page


class Mem0Source(Provider):
    """A Mem0 ``Memory`` or ``MemoryClient`` object the caller built, listed for one scope."""

    type = "mem0-object"
    family = "mem0"

    def __init__(
        self,
        mem0: Any,
        filters: Mapping[str, Any],
        *,
        name: str = "mem0",
        api: Literal["auto", "memory", "client"] = "auto",
    ) -> None:
        super().__init__(name)
        self.mem0 = mem0
        self.filters = dict(filters or {})
        if not any(self.filters.get(key) for key in _SCOPE_IDS):
            raise ProviderError(
                "import_mem0: filters must name a user_id, agent_id, app_id or run_id, e.g. "
                "filters={'user_id': 'alice'}; Mem0 has no 'list everything' call"
            )
        self.api = api if api != "auto" else _api_of(mem0)

    def identity(self) -> str:
        scope = ",".join(f"{k}={v}" for k, v in sorted(self.filters.items()))
        return f"mem0-object:{id(self.mem0)}#{scope}"

    def scope_key(self) -> str:
        return scope_key_of({k: str(v) for k, v in self.filters.items() if k in _SCOPE_IDS})

    def origin_of(self, record: Record) -> str:
        return record.origin or f"mem0:{record.id}"

    def listing(self, cursor: str | None = None) -> Listing:
        return _Mem0Listing(self)

    def get(self, provider_id: str) -> Record | None:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    def create(self, item: Outgoing) -> Record:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    def update(self, provider_id: str, item: Outgoing) -> Record:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    def delete(self, provider_id: str) -> None:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    # fetching --------------------------------------------------------------------------

    def fetch(self, listing: Listing) -> list[Mapping[str, Any]]:
        if self.api == "memory":
            return self._fetch_memory(listing)
        return self._fetch_client(listing)

    def _fetch_memory(self, listing: Listing) -> list[Mapping[str, Any]]:
        def get_all(top_k: int) -> list[Mapping[str, Any]]:
            # show_expired=True: Mem0 then fetches exactly top_k, so a short answer proves
            # "all"; expired memories move with their date, never silently left behind.
            answer = self._call(
                lambda: self.mem0.get_all(
                    filters=dict(self.filters), top_k=top_k, show_expired=True
                )
            )
            return _results_of(answer, self.name)

        result = fetch_all(get_all)
        if not result.complete:
            listing.mark_partial(
                f"Mem0 returned {len(result.items)} memories at top_k={result.top_k}, the "
                "largest memsync asks for; more may exist"
            )
        return result.items

    def _fetch_client(self, listing: Listing) -> list[Mapping[str, Any]]:
        items: list[Mapping[str, Any]] = []
        count: Any = None
        page = 1
        while True:
            answer = self._call(partial(self._client_page, page))
            results = _results_of(answer, self.name)
            count = answer.get("count", count)
            items.extend(results)
            if not results or not answer.get("next"):
                break
            page += 1
        unique = {str(item.get("id")): item for item in items}
        if not isinstance(count, int) or len(unique) != count:
            listing.mark_partial(
                f"Mem0 listed {len(unique)} distinct memories but counts {count}; the store "
                "changed while paging: run the import again"
            )
        return list(unique.values())

    def _client_page(self, page: int) -> Any:
        # show_expired: an expired memory still exists; it is imported with its date (and a
        # store without expiry tombstones it), never silently left behind. include_merged: so
        # does one the Platform's Dream merged (it moves with its state; mnem forgets it).
        return self.mem0.get_all(
            filters=dict(self.filters),
            page=page,
            page_size=CLIENT_PAGE_SIZE,
            show_expired=True,
            include_merged=True,
        )

    def _call(self, call: Callable[[], Any]) -> Any:
        error: ProviderError
        try:
            return call()
        except ProviderError:
            raise
        except ValueError as exc:  # Memory's own validation: filters, top_k
            error = ProviderError(f"{self.name}: Mem0 refused the listing: {exc}")
        except Exception as exc:
            error = _mem0_error(self.name, exc)
        raise error


class _Mem0Listing(Listing):
    def __init__(self, source: Mem0Source) -> None:
        super().__init__()
        self.source = source

    def pages(self) -> Iterator[Page]:
        raws = self.source.fetch(self)
        scope_key = self.source.scope_key()
        page = Page([])
        for raw in raws:
            mapped = record_from_mem0(raw, scope_key)
            if isinstance(mapped, Skipped):
                page.skipped.append(mapped)
            else:  # an expired memory too: it moves with its date (mnem tombstones it)
                page.records.append(mapped)
        yield page
        if self.partial_reason is None:
            self.complete = True


_SCOPE_IDS = ("user_id", "agent_id", "app_id", "run_id")  # app_id: the Platform's alone


def _api_of(mem0: Any) -> Literal["memory", "client"]:
    """``Memory.get_all`` takes ``top_k``; ``MemoryClient.get_all`` pages instead."""
    get_all = getattr(mem0, "get_all", None)
    if get_all is None:
        raise ProviderError("import_mem0: expected a mem0 Memory or MemoryClient (no get_all)")
    try:
        parameters = inspect.signature(get_all).parameters
    except (TypeError, ValueError):
        return "memory"
    return "memory" if "top_k" in parameters else "client"


def _results_of(answer: Any, name: str) -> list[Mapping[str, Any]]:
    results = answer.get("results") if isinstance(answer, Mapping) else None
    if not isinstance(results, list) or not all(isinstance(r, Mapping) for r in results):
        raise InvalidResponse(f"{name}: Mem0's get_all answered without a 'results' list")
    return results


def _mem0_error(name: str, exc: Exception) -> ProviderError:
    """A Mem0 client error as a typed memsync error (by class name: mem0 stays optional)."""
    kind = type(exc).__name__
    if kind in ("AuthenticationError", "PermissionError") or "401" in str(exc)[:80]:
        return AuthError(f"{name}: Mem0 refused the credentials; check the API key")
    if kind in ("RateLimitError", "NetworkError", "ConnectError", "TimeoutException"):
        return TransientProviderError(f"{name}: Mem0 is unreachable or busy ({kind}); try again")
    return ProviderError(f"{name}: Mem0 failed to list memories: {kind}: {exc}")
