"""A scope past the 1,000 cap of ``GET /memories``, read through ``POST /search``, and when that
read is provably the whole scope.

Scoped ``GET /memories`` caps ``top_k`` at 1,000 and has no cursor. Upstream's ``POST /search``
takes the scope in ``filters`` and an unbounded ``top_k``; with ``threshold: 0`` (the
default 0.1 drops memories whose similarity to the query is low) and ``show_expired: true`` it
ranks every memory of the scope and returns the first ``top_k``. Checked on the upstream server
(8d5b786, pgvector and Qdrant): all 2,501 memories of one user came back in one call.

A search is still a ranking, not a listing: it skips memories without text, and a store whose
scores can go below 0 (Qdrant's cosine) leaves those out even at ``threshold: 0``. So what it
returned is checked against ``GET /entities``, read just before it: the scope is complete only
when the rows (search and the capped listing together, by id) are exactly as many as the
entity's ``total_memories`` and their oldest ``created_at`` and newest ``updated_at`` are the
entity's own. Any write in between moves the count or the newest time and fails the check:
the listing is then partial and no delete is inferred.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memsync.providers.http.client import HttpClient
from memsync.providers.http.shapes import expect_list
from memsync.providers.mem0.server_entities import Entity

QUERY = "*"  # any non-empty query ranks every memory; an empty one is refused (400)


def search_scope(
    http: HttpClient, provider: str, scope: Mapping[str, str], top_k: int
) -> list[Any]:
    """Up to ``top_k`` memories of ``scope`` through ``POST /search``, expired ones included."""
    body = http.json(
        "POST",
        "/search",
        json={
            "query": QUERY,
            "filters": dict(scope),
            "top_k": top_k,
            "threshold": 0,
            "show_expired": True,
        },
        idempotent=True,  # a search writes nothing: safe to send again
    )
    if isinstance(body, dict):
        body = body.get("results")
    return expect_list(provider, body, "POST /search")


def search_top_k(expected: int) -> int:
    """Ask for more than the entity counts, so memories added since show up and fail the
    check instead of being cut off unseen."""
    return expected + expected // 8 + 16


def unproven(rows: Mapping[str, Mapping[str, Any]], entity: Entity) -> str | None:
    """Why ``rows`` (by id) are not provably every memory of ``entity``; None when they are."""
    if len(rows) != entity.total_memories:
        return (
            f"POST /search and GET /memories together returned {len(rows)} memories where "
            f"GET /entities counts {entity.total_memories}"
        )
    created = [_instant(r.get("created_at")) for r in rows.values()]
    updated = [
        _instant(r.get("updated_at")) or c for r, c in zip(rows.values(), created, strict=True)
    ]
    oldest = min((c for c in created if c), default=None)
    newest = max((u for u in updated if u), default=None)
    if oldest != _instant(entity.created_at) or newest != _instant(entity.updated_at):
        return "the scope changed while it was read (GET /entities shows other times)"
    return None


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)
