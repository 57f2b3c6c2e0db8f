"""A vector store for the Mem0 server double at an organisation's size: pgvector's answers,
from dictionaries indexed by entity.

Local qdrant (the double's default) filters a listing by reading every point's payload in
Python: 0.8 s for one user's 20 memories among 20,000, so a double of a thousand users
would measure qdrant, not memsync. Upstream's server keeps its memories in PostgreSQL
(pgvector), whose ``WHERE payload->>'user_id' = ...`` an index answers in milliseconds.
This store answers as mem0's ``PGVector`` does (mem0ai 2.2.1, ``vector_stores/pgvector.py``):
``OutputData`` rows, a listing wrapped in one more list, no order promised, search scored
``max(0, 1 - cosine distance)``, ``"*"`` meaning "the key is present". It keeps each user,
agent and run's memories in a set of their own, so a scoped listing costs its scope only.

Filters other than equality, ``"*"`` and ``in`` (what mem0's ``Memory`` and memsync send)
raise ``NotImplementedError``: a test reaching further must say so, not get a wrong answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mem0.vector_stores.base import VectorStoreBase

INDEXED = ("user_id", "agent_id", "run_id")


@dataclass(slots=True)
class OutputData:
    """A row with the fields of ``mem0.vector_stores.pgvector.OutputData`` (that module needs
    psycopg to import, which the double does not; a plain class is cheaper at 20,000 rows)."""

    id: str | None
    score: float | None
    payload: dict[str, Any] | None


class IndexedVectors(VectorStoreBase):
    """Points by id, and the ids of each user, agent and run (not thread-safe: the double
    calls its ``Memory`` under one lock)."""

    def __init__(self, collection_name: str = "memories") -> None:
        self.collection_name = collection_name
        self.points: dict[str, tuple[list[float], dict[str, Any]]] = {}
        self.index: dict[tuple[str, str], set[str]] = {}

    # writes -------------------------------------------------------------------------------

    def insert(
        self,
        vectors: list[list[float]],
        payloads: list[dict[str, Any]] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        assert ids is not None, "mem0 always names its ids"
        for point_id, vector, payload in zip(
            ids, vectors, payloads or [{}] * len(ids), strict=True
        ):
            self._put(str(point_id), list(vector), dict(payload))

    def update(
        self,
        vector_id: str,
        vector: list[float] | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        found = self.points.get(str(vector_id))
        if found is None:
            return  # pgvector's UPDATE of a missing row changes nothing, silently
        self._put(
            str(vector_id),
            list(vector) if vector is not None else found[0],
            dict(payload) if payload is not None else found[1],
        )

    def delete(self, vector_id: str) -> None:
        self._drop(str(vector_id))

    def _put(self, point_id: str, vector: list[float], payload: dict[str, Any]) -> None:
        self._drop(point_id)
        self.points[point_id] = (vector, payload)
        for key in INDEXED:
            if payload.get(key) is not None:
                self.index.setdefault((key, str(payload[key])), set()).add(point_id)

    def _drop(self, point_id: str) -> None:
        old = self.points.pop(point_id, None)
        if old is None:
            return
        for key in INDEXED:
            if old[1].get(key) is not None:
                ids = self.index.get((key, str(old[1][key])))
                if ids is not None:
                    ids.discard(point_id)
                    if not ids:
                        del self.index[(key, str(old[1][key]))]

    # reads --------------------------------------------------------------------------------

    def get(self, vector_id: str) -> OutputData | None:
        found = self.points.get(str(vector_id))
        if found is None:
            return None
        return OutputData(id=str(vector_id), score=None, payload=dict(found[1]))

    def list(
        self, filters: dict[str, Any] | None = None, top_k: int | None = 100
    ) -> list[list[OutputData]]:
        rows = []
        for point_id in self._matching(filters):
            if top_k is not None and len(rows) >= top_k:
                break
            rows.append(OutputData(id=point_id, score=None, payload=dict(self.points[point_id][1])))
        return [rows]

    def search(
        self,
        query: str,
        vectors: list[float],
        top_k: int | None = 5,
        filters: dict[str, Any] | None = None,
    ) -> list[OutputData]:
        scored = []
        for point_id in self._matching(filters):
            vector, payload = self.points[point_id]
            distance = 1.0 - _cosine(vectors, vector)
            scored.append((distance, point_id, payload))
        scored.sort(key=lambda row: (row[0], row[1]))
        if top_k is not None:
            scored = scored[:top_k]
        return [
            OutputData(id=point_id, score=max(0.0, 1.0 - distance), payload=dict(payload))
            for distance, point_id, payload in scored
        ]

    def _matching(self, filters: dict[str, Any] | None) -> Iterable[str]:
        conditions = dict(filters or {})
        candidates: set[str] | None = None
        for key in INDEXED:
            value = conditions.get(key)
            if isinstance(value, str) and value != "*":
                found = self.index.get((key, value), set())
                candidates = found if candidates is None else candidates & found
        pool: Iterable[str] = list(self.points) if candidates is None else sorted(candidates)
        return [pid for pid in pool if _matches(self.points[pid][1], conditions)]

    # the collection -----------------------------------------------------------------------

    def create_col(self, name: str, vector_size: int, distance: str) -> None:
        self.collection_name = name

    def list_cols(self) -> list[str]:
        return [self.collection_name]

    def delete_col(self) -> None:
        self.points.clear()
        self.index.clear()

    def col_info(self) -> dict[str, Any]:
        return {"name": self.collection_name, "count": len(self.points), "size": None}

    def reset(self) -> None:
        self.delete_col()


def _matches(payload: dict[str, Any], conditions: dict[str, Any]) -> bool:
    for key, value in conditions.items():
        if key in ("$or", "$not", "AND", "OR", "NOT", "$and"):
            raise NotImplementedError(f"IndexedVectors: filter {key!r} is not supported")
        if value == "*":
            if key not in payload:
                return False
        elif isinstance(value, dict):
            if set(value) == {"eq"}:
                if str(payload.get(key)) != str(value["eq"]) or key not in payload:
                    return False
            elif set(value) == {"in"}:
                if key not in payload or str(payload[key]) not in {str(v) for v in value["in"]}:
                    return False
            else:
                raise NotImplementedError(f"IndexedVectors: filter {value!r} is not supported")
        elif isinstance(value, list):
            if key not in payload or str(payload[key]) not in {str(v) for v in value}:
                return False
        elif key not in payload or payload[key] is None or str(payload[key]) != str(value):
            return False
    return True


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


__all__ = ["IndexedVectors"]
