"""``mem0-oss``: Mem0's open-source library in-process, on the application's own store.

Three promises hold throughout: no phone home and no LLM (see ``oss_config``), and no silent
cap (ADR-0024): listings page ``get_all`` until a call comes back short (``paging``), with
``show_expired=True`` so that a short call really means "all". The open ``Memory`` itself,
its retries and its errors are ``oss_memory``'s.

Mem0's ``update`` merges metadata; memsync's update replaces it. After ``Memory.update``
(which keeps Mem0's hash, history row and timestamps right), keys the new metadata no longer
has are removed by rewriting the payload through the vector store — the same
``vector_store.update(id, vector, payload)`` call Mem0 itself uses for a full write. The id
never changes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from memsync.base.errors import NotFound, ProviderError
from memsync.base.paths import resolve_paths
from memsync.base.records import Outgoing, Record, Skipped
from memsync.base.scopes import WILDCARD, Scope, scoped_name
from memsync.base.secrets import resolve_secret
from memsync.config import Config, Mem0OssConfig
from memsync.providers.base import (
    Capabilities,
    Listing,
    Page,
    WriteOp,
    WriteResult,
    require_content,
)
from memsync.providers.discovery import Discovery, scopes_of
from memsync.providers.mem0.convert import MEM0_OWN_KEYS, metadata_for_mem0, record_from_mem0
from memsync.providers.mem0.embed_ahead import EmbeddedAhead
from memsync.providers.mem0.oss_config import load_mem0_config
from memsync.providers.mem0.oss_files import Mem0LocalStore, local_store
from memsync.providers.mem0.oss_memory import MemoryHandle
from memsync.providers.mem0.paging import FetchResult, fetch_all, start_for

log = logging.getLogger("memsync.providers.mem0_oss")

PAGE_SIZE = 500
# get_all's top_k grows this much per call: a local Qdrant scans every point on every call
# whatever top_k asks, so fewer, larger calls win (see paging for the bound it keeps).
TOP_K_FACTOR = 16
EMBED_GROUP = 8  # creates embedded ahead per worker, before their adds run


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


class Mem0Listing(Listing):
    """A full pass from one ``fetch_all`` result, mapped to Records page by page.

    Complete only when the fetch proved it (a short get_all call) and no id came twice.
    ``fetch`` holds the paging figures after the pass, for status and benchmarks.
    """

    def __init__(
        self, fetch: Callable[[], FetchResult[dict[str, Any]]], scope_key: str, name: str
    ) -> None:
        super().__init__()
        self._fetch = fetch
        self._scope_key = scope_key
        self._name = name
        self.fetch: FetchResult[dict[str, Any]] | None = None

    def pages(self) -> Iterator[Page]:
        result = self._fetch()
        self.fetch = result
        seen: set[str] = set()
        for start in range(0, len(result.items), PAGE_SIZE):
            page = Page([])
            for raw in result.items[start : start + PAGE_SIZE]:
                mapped = record_from_mem0(raw, self._scope_key)
                if isinstance(mapped, Skipped):
                    page.skipped.append(mapped)
                elif mapped.id in seen:
                    self.mark_partial(
                        f"{self._name}: Mem0 listed memory {mapped.id} twice (did the store "
                        "change during the listing?); no deletes are inferred this time"
                    )
                else:
                    seen.add(mapped.id)
                    page.records.append(mapped)
            yield page
        if not result.complete:
            self.mark_partial(
                f"{self._name}: Mem0 returned its maximum of {result.top_k} memories for this "
                "scope; the rest were not listed, so no deletes are inferred"
            )
        elif self.partial_reason is None:
            self.complete = True


# the provider ---------------------------------------------------------------------------


class Mem0OssProvider(MemoryHandle):
    """Mem0's library on the application's own store, for one scope."""

    type = "mem0-oss"
    family = "mem0"
    capabilities = Capabilities(
        timestamps=True, metadata_values="json", ordered_updates=True, history=True
    )

    def __repr__(self) -> str:
        return f"Mem0OssProvider({self.name!r}, {self.identity()!r})"

    def listing(self, cursor: str | None = None) -> Mem0Listing:
        return Mem0Listing(self._fetch, self.scope_key(), self.name)

    def _fetch(self) -> FetchResult[dict[str, Any]]:
        memory = self._require_memory()

        def get_all(top_k: int) -> list[dict[str, Any]]:
            # show_expired=True: Mem0 then fetches exactly top_k, so a short answer means
            # "all"; otherwise it over-fetches, drops expired ones, and proves nothing.
            try:
                with self._translate("list memories"):
                    answer = memory.get_all(
                        filters=dict(self.scope), top_k=top_k, show_expired=True
                    )
            except ProviderError as exc:
                bad = self._non_text_ids(memory, top_k)
                if bad:  # one such point makes Mem0 fail the whole get_all: name them
                    raise ProviderError(
                        f"{self.name}: Mem0 cannot list scope {self._scope_text()}: memories "
                        f"{', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold non-text "
                        "content; fix or delete them in Mem0"
                    ) from exc
                raise
            results = answer.get("results") if isinstance(answer, dict) else None
            if not isinstance(results, list):
                raise ProviderError(f"{self.name}: Mem0's get_all returned no 'results' list")
            return results

        expected = self._collection_size(memory) if self.count_hint else None
        start = self.first_top_k or start_for(expected)
        return fetch_all(get_all, start=start, factor=TOP_K_FACTOR)

    def _non_text_ids(self, memory: Any, top_k: int) -> list[str]:
        """Ids of points in scope whose ``data`` is neither text nor missing (raw listing)."""
        try:
            listed = memory.vector_store.list(filters=dict(self.scope), top_k=top_k)
        except Exception:  # only for the message: the original error stands
            return []
        rows = listed[0] if listed and isinstance(listed[0], list | tuple) else listed
        return [
            str(row.id)
            for row in rows or []
            if not isinstance((getattr(row, "payload", None) or {}).get("data", ""), str)
        ]

    def _collection_size(self, memory: Any) -> int | None:
        """How many points the whole Qdrant collection holds: an upper bound for the scope.

        Qdrant answers it without a scan, and asking get_all for that many costs no more than
        asking for fewer (a local store scans every point either way). Only a hint: the
        paging loop proves completeness with or without it.
        """
        store = memory.vector_store
        if type(store).__module__ != "mem0.vector_stores.qdrant":
            return None
        try:
            counted = store.client.count(collection_name=store.collection_name, exact=False)
            return int(counted.count)
        except Exception as exc:  # only a hint: the paging loop works without it
            log.debug("%s: counting the collection failed: %s", self.name, exc)
            return None

    # many scopes: one Memory, opened once, serves every scope --------------------------

    @property
    def discovers_scopes(self) -> bool:
        """A wildcard scope: the store's payloads name the scopes it holds."""
        return WILDCARD in self.scope.values()

    @property
    def holds_every_scope(self) -> bool:
        """One Memory (and its store's lock) for every scope."""
        return True

    def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
        """The scopes of the store's payloads: one pass over the collection, paged as get_all."""
        memory = self._require_memory()
        store = memory.vector_store

        def payloads(top_k: int) -> list[Mapping[str, Any]]:
            with self._translate("list the scopes in the store"):
                answer = store.list(filters=dict(fixed) or None, top_k=top_k)
            rows = answer[0] if answer and isinstance(answer[0], list | tuple) else answer
            return [getattr(row, "payload", None) or {} for row in rows or []]

        fetched = fetch_all(payloads, start=start_for(self._collection_size(memory)), factor=16)
        discovery = Discovery(scopes_of(fetched.items, keys, fixed))
        if not fetched.complete:
            discovery.complete = False
            discovery.note = f"the store returned its maximum of {fetched.top_k} memories"
        return discovery

    def bind(self, scope: Scope) -> Mem0OssProvider:
        """The wildcard filled with SCOPE; once open, on the same Memory (one store handle
        for all scopes, released when this provider closes)."""
        name = scoped_name(self.name, scope)
        fixed = {k: v for k, v in self.scope.items() if v != WILDCARD}
        values = {**fixed, **scope.as_dict()}
        options: dict[str, Any] = {
            "mem0_config": self.mem0_config,
            "embedder": self.embedder,
            "telemetry": self.telemetry,
            "mem0_dir": self.mem0_dir,
            "busy_timeout": self.busy_timeout,
        }
        if self.memory is not None:
            return Mem0OssProvider.from_memory(name, self.memory, values, **options)
        return Mem0OssProvider(
            name, values, api_key=self._api_key, concurrency=self.concurrency, **options
        )

    def _in_scope(self, fields: Mapping[str, Any] | None) -> bool:
        fields = fields or {}
        return all(str(fields.get(key)) == value for key, value in self.scope.items())

    def _point(self, memory: Any, provider_id: str) -> Any:
        """The raw vector-store point in this scope, or None (also for foreign-scope ids)."""
        if not _is_uuid(provider_id):
            return None
        with self._translate("read a memory"):
            point = memory.vector_store.get(vector_id=provider_id)
        if point is None or not self._in_scope(getattr(point, "payload", None)):
            return None
        return point

    def get(self, provider_id: str) -> Record | None:
        memory = self._require_memory()
        if self._point(memory, provider_id) is None:
            return None
        with self._translate("read a memory"):
            raw = memory.get(provider_id)
        if raw is None:
            return None
        mapped = record_from_mem0(raw, self.scope_key())
        return mapped if isinstance(mapped, Record) else None

    # writes -----------------------------------------------------------------------------

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """One write at a time (the store is single-writer), with the embeddings of the
        creates ahead computed ``concurrency`` at a time when the embedder is remote."""
        memory = self._memory
        if self.embedder == "hash" or self.concurrency <= 1 or memory is None:
            yield from super().write_many(ops)
            return
        ahead = EmbeddedAhead(memory.embedding_model, self.concurrency)
        memory.embedding_model = ahead
        try:
            group = EMBED_GROUP * self.concurrency
            for start in range(0, len(ops), group):
                chunk = ops[start : start + group]
                ahead.prepare(op.item.content for op in chunk if op.kind == "create" and op.item)
                yield from super().write_many(chunk)
                ahead.forget()
        finally:
            memory.embedding_model = ahead.inner

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        memory = self._require_memory()
        message = _message_for(item)
        native = {"role": message["role"], "actor_id": message.get("name"), **self.scope}
        metadata = metadata_for_mem0(item, native=native)
        if item.created_at:
            metadata["created_at"] = item.created_at  # Mem0 backdates created_at and updated_at
        with self._translate("add a memory"):
            answer = memory.add(
                [message],
                **self.scope,
                metadata=metadata,
                infer=False,
                expiration_date=item.expiration_date,
            )
        ids = [r.get("id") for r in (answer or {}).get("results", []) if isinstance(r, dict)]
        if len(ids) != 1 or not isinstance(ids[0], str):
            raise ProviderError(
                f"{self.name}: Mem0 added {len(ids)} memories for one (origin {item.origin})"
            )
        # What was written, as a listing will show it (no second read: the next mirror
        # brings Mem0's own version token).
        return Record(
            id=ids[0],
            content=item.content,
            metadata=dict(item.metadata),
            scope_key=self.scope_key(),
            created_at=item.created_at,
            provenance={
                **item.provenance,
                **{k: v for k, v in native.items() if v},
                "source": native["actor_id"] or native["role"],
            },
            origin=item.origin,
            expiration_date=item.expiration_date,
        )

    def update(self, provider_id: str, item: Outgoing) -> Record:
        require_content(self.name, item)
        memory = self._require_memory()
        point = self._point(memory, provider_id)
        if point is None:
            raise NotFound(f"{self.name}: no memory {provider_id} in scope {self._scope_text()}")
        # What the memory already holds in Mem0's own fields (kept by update) is not stored
        # again in memsync_provenance.
        held = point.payload or {}
        native = {k: held.get(k) for k in ("role", "actor_id", "user_id", "agent_id", "run_id")}
        metadata = metadata_for_mem0(item, native=native)
        stale = (set(point.payload or {}) - MEM0_OWN_KEYS) - set(metadata)
        with self._translate("update a memory"):
            memory.update(
                provider_id,
                text=item.content,
                metadata=metadata,
                expiration_date=item.expiration_date,  # None clears it
            )
            if stale:
                self._drop_payload_keys(memory, provider_id, stale, item.content)
        record = self.get(provider_id)
        if record is None:
            raise NotFound(f"{self.name}: memory {provider_id} vanished while being updated")
        return record

    def _drop_payload_keys(self, memory: Any, memory_id: str, keys: set[str], text: str) -> None:
        """Remove metadata keys Mem0's merging update cannot remove: rewrite the payload whole.

        ``vector_store.update`` with both vector and payload replaces the point (Qdrant
        upserts it), which is how Mem0 writes a full payload itself.
        """
        point = memory.vector_store.get(vector_id=memory_id)
        if point is None:
            return
        payload = {k: v for k, v in (point.payload or {}).items() if k not in keys}
        vector = memory.embedding_model.embed(text, "update")
        memory.vector_store.update(vector_id=memory_id, vector=vector, payload=payload)

    def delete(self, provider_id: str) -> None:
        memory = self._require_memory()
        if self._point(memory, provider_id) is None:
            return  # already gone: not an error
        with self._translate("delete a memory"):
            memory.delete(provider_id)


def _message_for(item: Outgoing) -> dict[str, str]:
    """One chat message: Mem0 stores its role, and its ``name`` as the actor id."""
    role = item.provenance.get("role")
    message = {
        "role": role if isinstance(role, str) and role.strip() and role != "system" else "user",
        "content": item.content,
    }
    actor = item.provenance.get("actor_id")
    if isinstance(actor, str) and actor.strip():
        message["name"] = actor
    return message


def watched_files(name: str, entry: Mem0OssConfig, keys: tuple[str, ...]) -> Mem0LocalStore | None:
    """Its local qdrant directory, when its vector store is one (``oss_files``)."""
    return local_store(name, entry)


def build(name: str, entry: Mem0OssConfig, config: Config) -> Mem0OssProvider:
    """The provider for a ``[providers.NAME]`` entry of type mem0-oss (mem0 not yet imported)."""
    return Mem0OssProvider(
        name,
        entry.scope,
        mem0_config=load_mem0_config(name, entry),
        embedder=entry.embedder,
        api_key=resolve_secret(name, entry.api_key_env, entry.api_key_file),
        telemetry=entry.telemetry,
        mem0_dir=resolve_paths().state_dir / "mem0",
        busy_timeout=entry.busy_timeout,
        concurrency=entry.concurrency,
    )
