"""``GET /entities`` of a Mem0 server: which users, agents and runs hold memories, and how many.

Upstream (``server/routers/entities.py``, since 2026-04) answers any valid key with one live
pass over at most 10,000 memories, expired ones included: per entity its ``total_memories``,
the oldest ``created_at`` and the newest ``updated_at`` of the memories it holds now. An add
moves the count and ``updated_at``; an edit moves ``updated_at``; a delete moves the count
(and ``updated_at`` back, when the newest went); an expiry moves nothing. A server past the
scan cap answers a partial picture, which callers must not read as complete.

One reader for scope discovery, for listings past the 1,000 cap (a scope's count to check a
search against) and for the change probe, so all check the answer the same way: a row without
an id or type, or a count that is not a number, is an error naming the field, never "no
entities". ``read_entities`` makes the call; ``EntityCensus`` says whether the answer can be
complete: the scan saw every memory only if fewer than ``SCAN_LIMIT`` were there, and since a
memory counts once under each id it carries, that is proven when the counts of all entities
together stay below it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memsync.base.errors import InvalidResponse, NotFound
from memsync.providers.http.client import HttpClient
from memsync.providers.http.shapes import expect_list

SCAN_LIMIT = 10_000  # upstream's SCAN_LIMIT: /entities sees at most this many memories
ENTITY_KEYS = {"user": "user_id", "agent": "agent_id", "run": "run_id"}


@dataclass(frozen=True)
class Entity:
    """One user, agent or run the server holds memories for."""

    type: str  # "user" | "agent" | "run"
    id: str
    total_memories: int
    created_at: str | None
    updated_at: str | None

    @property
    def scope_key(self) -> str:
        """The scope key this entity fills (``user_id`` for a user)."""
        return ENTITY_KEYS[self.type]


def parse_entities(provider: str, body: Any) -> list[Entity]:
    """The entities of a ``GET /entities`` answer, or InvalidResponse naming what is wrong."""
    rows = expect_list(provider, body, "GET /entities")
    entities = []
    for number, row in enumerate(rows):
        where = f"GET /entities row {number}"
        if not isinstance(row, dict):
            raise InvalidResponse(f"{provider}: {where} is {type(row).__name__}, not an object")
        kind, entity_id, total = row.get("type"), row.get("id"), row.get("total_memories")
        if kind not in ENTITY_KEYS:
            raise InvalidResponse(f"{provider}: {where} has type {kind!r}, not user, agent or run")
        if not isinstance(entity_id, str) or not entity_id:
            raise InvalidResponse(f"{provider}: {where} has no id")
        if not isinstance(total, int) or isinstance(total, bool) or total < 0:
            raise InvalidResponse(f"{provider}: {where} has total_memories {total!r}")
        created, updated = _text(row.get("created_at")), _text(row.get("updated_at"))
        entities.append(Entity(kind, entity_id, total, created, updated))
    return entities


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class EntityCensus:
    """One ``GET /entities`` answer, and whether it is provably the whole server."""

    entities: tuple[Entity, ...]

    @property
    def counted(self) -> int:
        """Memories counted over every entity (a memory with two ids counts twice)."""
        return sum(e.total_memories for e in self.entities)

    @property
    def complete(self) -> bool:
        """True when the scan provably saw every memory: fewer than SCAN_LIMIT were counted,
        so fewer were scanned. Each memory carries at least one id (a write needs one)."""
        return self.counted < SCAN_LIMIT

    @property
    def note(self) -> str | None:
        if self.complete:
            return None
        return (
            f"GET /entities scans at most {SCAN_LIMIT:,} memories and counted {self.counted:,} "
            "(a memory counts once per id it carries), so it may not have seen them all"
        )

    def of_key(self, key: str) -> list[Entity]:
        """The entities that fill scope key ``key`` (``user_id``: the users)."""
        return [e for e in self.entities if e.scope_key == key]

    def find(self, scope: Mapping[str, str]) -> Entity | None:
        """The entity a one-key scope names (``{"user_id": "alice"}``), or None."""
        if len(scope) != 1:
            return None
        ((key, value),) = scope.items()
        return next((e for e in self.of_key(key) if e.id == value), None)


def read_entities(http: HttpClient, provider: str) -> EntityCensus | None:
    """``GET /entities`` checked, or None on a server without it (before 2026-04: 404)."""
    try:
        body = http.get("/entities")
    except NotFound:
        return None
    return EntityCensus(tuple(parse_entities(provider, body)))
