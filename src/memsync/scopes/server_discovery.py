"""Which users, agents or runs a self-hosted Mem0 server holds: the server part of discovery.

Upstream offers two ways, and memsync takes the better one the server has:

1. ``GET /entities`` (since 2026-04): any valid key; one pass over at most 10,000 memories;
   one row per user, agent and run with its ``total_memories``. A single wildcard
   (``user_id = "*"``) with no fixed key is read from it. Its answer is complete only when the
   scan provably saw every memory (``EntityCensus.complete``); otherwise scopes past the scan
   are not found this cycle, and those known from earlier cycles are synced anyway.
2. ``GET /memories`` without ids, the admin listing: admin only (403 for a dashboard user
   whose role is not admin), capped at 1,000 memories server-wide, so it is complete only
   while the server holds fewer. It serves the server without ``/entities``, a wildcard next
   to a fixed key (``{user_id = "*", agent_id = "bot"}``: the pairs that hold memories) and two
   wildcards.

A server with neither answers 400 ``At least one identifier is required.``: it is too old,
and the message says how to name the scopes instead. Rows memsync cannot read are never "no
scopes": a row without an id is an error naming it. A Qdrant-backed server at 8d5b786
answers the admin listing with rows whose every field is null and ``/entities`` with ``[]``
(upstream unwraps a list where Qdrant returns a tuple); an empty ``/entities`` is therefore
checked against the admin listing before it is believed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memsync.errors import AuthError, InvalidResponse, ProviderError
from memsync.scopes.discovery import Discovery, scope_of
from memsync.scopes.model import Scope

if TYPE_CHECKING:
    from memsync.providers.mem0.server import Mem0ServerProvider

ADMIN_CAP = 1000  # server/main.py: ALL_MEMORIES_LIMIT


def discover_server_scopes(
    provider: Mem0ServerProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The scopes a Mem0 server holds, as values of the wildcard ``keys``."""
    wildcard = " and ".join(f'{k} = "*"' for k in keys)
    census = provider.entities() if len(keys) == 1 and not fixed else None
    if census is not None:
        (key,) = keys
        scopes = {Scope.of({key: e.id}) for e in census.of_key(key)}
        if census.entities:
            return Discovery(scopes, complete=census.complete, note=census.note)
        try:  # [] is also what a Qdrant-backed server answers: is the server really empty?
            held = _admin_rows(provider, wildcard, top_k=1)
        except AuthError as exc:
            if exc.status != 403:
                raise
            note = "GET /entities answered [] and only an admin may confirm the server is empty"
            return Discovery(set(), complete=False, note=note)
        if not held:
            return Discovery(set())
    rows = _admin_rows(provider, wildcard, top_k=ADMIN_CAP, why=_why_listing(census, fixed))
    scopes = set()
    for row in rows:
        scope = scope_of(row, keys, fixed)
        if scope is not None:
            scopes.add(scope)
    if len(rows) >= ADMIN_CAP:
        return Discovery(
            scopes,
            complete=False,
            note=(
                f"GET /memories without ids lists at most {ADMIN_CAP} memories server-wide, so "
                "scopes beyond them are found only once their memories are among those"
            ),
        )
    return Discovery(scopes)


def _why_listing(census: Any, fixed: Mapping[str, str]) -> str:
    if census is None and not fixed:
        return "the server has no GET /entities"
    return "GET /entities counts users, agents and runs one by one, not the pairs this needs"


def _admin_rows(
    provider: Mem0ServerProvider, wildcard: str, *, top_k: int, why: str = ""
) -> list[Any]:
    """The admin listing's rows, each checked to be a memory with an id."""
    try:
        rows = provider.admin_listing(top_k)
    except AuthError as exc:
        if exc.status != 403 or top_k == 1:
            raise  # a wrong or expired credential is said as it is: no talk of admin keys
        raise ProviderError(
            f"{provider.name}: cannot discover scopes for {wildcard}: {why}, and the key from "
            f"{provider.http.credential} may not list every memory {_status(exc)}; use the "
            "admin key (ADMIN_API_KEY) or an admin user's key, or name each scope in a "
            "provider of its own"
        ) from None
    except ProviderError as exc:
        if exc.status != 400:
            raise
        raise ProviderError(
            f"{provider.name}: cannot discover scopes for {wildcard}: this Mem0 server is too "
            f"old to list its users (no GET /entities, and GET /memories without ids answered "
            f"{_status(exc)[1:-1]}); upgrade it (GET /entities arrived in 2026-04), or name each "
            'scope in a provider of its own, e.g. scope = { user_id = "alice" }'
        ) from None
    for number, row in enumerate(rows):
        where = f"{provider.name}: GET /memories without ids, row {number},"
        if not isinstance(row, dict):
            raise InvalidResponse(f"{where} is {type(row).__name__}, not a memory")
        memory_id = row.get("id")
        if not isinstance(memory_id, str) or not memory_id:
            null = all(v in (None, {}) for v in row.values())
            raise InvalidResponse(
                f"{where} has no id"
                + (
                    " (every field is null: a Qdrant-backed server at mem0 8d5b786 answers so, "
                    "and answers GET /entities with [])"
                    if null
                    else ""
                )
                + f"; memsync cannot discover scopes for {wildcard} here: name each scope in a "
                'provider of its own (scope = { user_id = "alice" })'
            )
    return rows


def _status(exc: Exception) -> str:
    """ "(HTTP 400: the server's reason)" from an HTTP error's message, whichever way the client
    wrote it ("(HTTP 403: reason)" for credentials, "(HTTP 400): reason" for the rest)."""
    text = str(exc)
    inside = re.search(r"\(HTTP \d{3}: [^)]*\)", text)
    if inside:
        return inside.group(0)
    after = re.search(r"\(HTTP (\d{3})\)(?:: (.*))?", text)
    if after:
        return f"(HTTP {after.group(1)}: {after.group(2)})" if after.group(2) else after.group(0)
    return f"({text})"
