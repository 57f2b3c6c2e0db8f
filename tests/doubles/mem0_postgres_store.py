"""The server double's memories in a real PostgreSQL table of upstream's shape.

Upstream's server keeps its memories through mem0's pgvector store (mem0ai 2.2.1
``mem0/vector_stores/pgvector.py``): a table named by the collection (``memories``) with
``id UUID``, ``vector vector(N)`` and ``payload JSONB``. ``PostgresStore`` IS that class, so
every insert, update, delete, get and list (the unordered ``LIMIT`` behind ``GET /entities``
and the admin listing) runs upstream's own SQL against a real server. Two methods change, and
only where the pgvector extension is not installed (Debian 12 packages none): the table's
``vector`` column is ``real[]``, and a similarity search ranks in Python by the cosine that
pgvector's ``<=>`` computes. A test or a benchmark can then read the same table through
memsync's database probe while the double serves it over HTTP.
"""

from __future__ import annotations

import math
from typing import Any

from mem0.vector_stores.pgvector import OutputData, PGVector, _build_filter_conditions
from psycopg import sql

from tests.postgres_server import memories_table


class PostgresStore(PGVector):  # type: ignore[misc]
    """mem0's own pgvector store on the database at URL (table ``collection``)."""

    def __init__(self, url: str, collection: str = "memories", dims: int = 64) -> None:
        super().__init__(
            dbname=None,
            collection_name=collection,
            embedding_model_dims=dims,
            user=None,
            password=None,
            host=None,
            port=None,
            diskann=False,
            hnsw=False,
            connection_string=url,
        )
        self.url = url
        self.connection_pool.wait(timeout=30)

    def create_col(self) -> None:
        if self._extension("pg_available_extensions", "name"):
            super().create_col()
        else:
            memories_table(self.url, self.collection_name, self.embedding_model_dims)

    def _extension(self, catalog: str, column: str) -> bool:
        """Whether pgvector is available (pg_available_extensions) or installed (pg_extension)."""
        with self._get_cursor() as cur:
            cur.execute(f"SELECT 1 FROM {catalog} WHERE {column} = 'vector'")
            return cur.fetchone() is not None

    def search(
        self,
        query: str,
        vectors: list[float],
        top_k: int | None = 5,
        filters: dict[str, Any] | None = None,
    ) -> list[OutputData]:
        self._ensure_collection()
        if self._extension("pg_extension", "extname"):
            return list(super().search(query, vectors, top_k, filters))
        conditions, params = _build_filter_conditions(filters)
        where = sql.SQL("WHERE " + " AND ".join(conditions)) if conditions else sql.SQL("")
        with self._get_cursor() as cur:
            cur.execute(
                sql.SQL("SELECT id, vector, payload FROM {} {}").format(self._col(), where),
                params,
            )
            rows = cur.fetchall()
        ranked = sorted(rows, key=lambda r: _cosine_distance(r[1], vectors))[: top_k or 5]
        return [
            OutputData(
                id=str(r[0]), score=max(0.0, 1.0 - _cosine_distance(r[1], vectors)), payload=r[2]
            )
            for r in ranked
        ]


def _cosine_distance(a: list[float] | None, b: list[float]) -> float:
    """pgvector's ``<=>``: 1 - cosine similarity."""
    if not a:
        return 1.0
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norm if norm else 1.0
