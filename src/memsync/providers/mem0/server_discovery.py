"""Which users, agents or runs a self-hosted Mem0 server holds (``Mem0ServerProvider.discover``).

With a database connection (``database_url_env``/``database_url_file``), one query over the
server's own table lists every scope, at any size (``providers/mem0/server_database.py``).
Without one, the team may name its scopes (``scopes_file``/``scopes_command``,
``providers/named_scopes.py``): that list is taken as complete, and any scope the routes find
beside it is synced too and said. Otherwise upstream's routes, and memsync takes the better one
the server has:

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

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memsync.base.errors import AuthError, InvalidResponse, MemsyncError, ProviderError
from memsync.base.scopes import Scope
from memsync.providers.discovery import Discovery, scope_of
from memsync.providers.named_scopes import NamedScopes

if TYPE_CHECKING:
    from memsync.providers.mem0.server import Mem0ServerProvider

log = logging.getLogger(__name__)

ADMIN_CAP = 1000  # server/main.py: ALL_MEMORIES_LIMIT
# What would let discovery see every scope of a server that holds more than its routes show.
COMPLETE_ADVICE = (
    "give memsync read-only access to the server's database (database_url_env), or "
    "name the team in scopes_file; see docs/mem0-server.md#a-team-past-10000-memories"
)


def discover_server_scopes(
    provider: Mem0ServerProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The scopes a Mem0 server holds, as values of the wildcard ``keys``: from its own
    database where one is configured (complete at any size), else the scopes the team names
    and those the routes find, else the routes alone."""
    found = _discover(provider, keys, fixed)
    found.advice = COMPLETE_ADVICE
    return found


def _discover(
    provider: Mem0ServerProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    if provider.database is not None:
        census = provider.database.census(keys, fixed)
        scopes = {Scope.of(dict(zip(keys, values, strict=True))) for values in census.scopes}
        return Discovery(scopes, source="database")
    if provider.scopes_file is not None or provider.scopes_command is not None:
        return _named(provider, keys, fixed)
    return _from_routes(provider, keys, fixed)


def _named(
    provider: Mem0ServerProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The scopes the team names, complete because the team says so, and any more the
    routes find (said in the note: the list may be out of date)."""
    named = NamedScopes(provider.name, provider.scopes_file, provider.scopes_command)
    listed = named.read(keys, fixed)
    try:
        found = _from_routes(provider, keys, fixed).scopes
    except AuthError:
        raise  # a refused credential fails every scope's listing too: said as it is
    except MemsyncError as exc:
        log.debug(
            "%s: the routes found no scopes beside %s: %s", provider.name, named.describe(), exc
        )
        found = set()
    beyond = sorted(s.label for s in found - listed)
    note = None
    if beyond:
        shown = ", ".join(beyond[:3]) + (f" and {len(beyond) - 3} more" if len(beyond) > 3 else "")
        note = f"the server also holds {shown}, not in {named.describe()}"
    return Discovery(listed | found, note=note, source=named.describe())


def _from_routes(
    provider: Mem0ServerProvider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """Through ``GET /entities``, else the admin listing."""
    wildcard = " and ".join(f'{k} = "*"' for k in keys)
    census = provider.entities() if len(keys) == 1 and not fixed else None
    if census is not None:
        (key,) = keys
        scopes = {Scope.of({key: e.id}) for e in census.of_key(key)}
        if census.entities:
            return Discovery(
                scopes, complete=census.complete, note=census.note, source="GET /entities"
            )
        try:  # [] is also what a Qdrant-backed server answers: is the server really empty?
            held = _admin_rows(provider, wildcard, top_k=1)
        except AuthError as exc:
            if exc.status != 403:
                raise
            note = "GET /entities answered [] and only an admin may confirm the server is empty"
            return Discovery(set(), complete=False, note=note, source="GET /entities")
        if not held:
            return Discovery(set(), source="GET /entities")
    rows = _admin_rows(provider, wildcard, top_k=ADMIN_CAP, why=_why_listing(census, fixed))
    scopes = set()
    for row in rows:
        scope = scope_of(row, keys, fixed)
        if scope is not None:
            scopes.add(scope)
    source = "GET /memories without ids"
    if len(rows) >= ADMIN_CAP:
        return Discovery(
            scopes,
            complete=False,
            note=(
                f"GET /memories without ids lists at most {ADMIN_CAP} memories server-wide, so "
                "scopes beyond them are found only once their memories are among those"
            ),
            source=source,
        )
    return Discovery(scopes, source=source)


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
