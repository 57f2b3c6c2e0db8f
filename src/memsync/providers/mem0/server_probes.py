"""A self-hosted Mem0 server, probed: which scopes changed since memsync last listed them.

- ``GET /entities`` (``server/routers/entities.py`` at 8d5b786), one live pass over the
  memories: per user, agent and run the count, the oldest ``created_at`` and the newest
  ``updated_at``. A scope's *token* is its entities' three values; a scope whose token differs
  from the one memsync stored when it last listed the scope is flagged. In upstream's
  ``Memory`` an edit stamps ``updated_at`` with the edit's time (metadata cannot override it),
  an add counts one more and a delete one fewer; an expiry moves nothing, and needs nothing
  (the scan and memsync's listing both include expired memories). What can hide: an add whose
  metadata backdates ``created_at`` (it becomes its ``updated_at`` too, and memsync's own writes
  do this) with a delete in the same window leaves all three as they were; the full pass finds
  it. Past the scan's 10,000 memories the answer is partial, and the probe is not used.
  Instants are compared as instants (a server keeps what each memory was written with), so
  memsync can also say what a scope's token is once its own writes landed (``expected``): a
  create memsync made is not a change the next probe lists again.
- With a database connection: one query over the server's own table
  (``server_database.py``): per scope the count and a digest of every id and payload. Complete
  at any size; nothing hides, backdated adds and deletes included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from memsync.base.errors import ProviderError
from memsync.base.records import Record, parse_instant
from memsync.base.scopes import Scope
from memsync.providers.base import Provider
from memsync.providers.change_probe import WHOLE, ChangeProbe, Flags, ProbeUnsure
from memsync.providers.mem0.server_entities import SCAN_LIMIT, parse_entities

ABSENT = "0//"  # the token of an entity the server does not list: it holds no memories
EMPTY_TABLE = "0/0"  # the database probe's token of a scope its table holds nothing of


class ServerEntitiesProbe(ChangeProbe):
    """``GET /entities``: a scope's token is its entities' count, oldest and newest instant."""

    def __init__(
        self, name: str, provider: Provider, keys: tuple[str, ...], fixed: Mapping[str, str]
    ) -> None:
        super().__init__(name, provider)
        self.keys = keys  # the wildcard keys; () for a provider of one scope
        self.fixed = dict(fixed)

    def ask(self, known: Mapping[str, str]) -> Flags:
        entities = self._entities()

        def token(values: Mapping[str, str]) -> str:
            return ";".join(entities.get((k, v), ABSENT) for k, v in sorted(values.items()))

        tokens: dict[str, str] = {}
        fresh: list[str] = []
        if not self.keys:
            tokens[WHOLE] = token(self.fixed)
        elif len(self.keys) == 1:
            (key,) = self.keys
            for entity_key, value in entities:
                if entity_key == key:
                    tokens[Scope.of({key: value}).label] = token({key: value})
        else:
            # Pairs (a user with an agent, say): /entities counts users and agents apart, so a
            # pair's token is both entities' tokens, for the pairs memsync knows; an entity that
            # no known pair names is new, and only a full listing can say which pairs it holds.
            named: set[tuple[str, str]] = set()
            for label in known:
                if label != WHOLE:
                    values = Scope.parse(label).as_dict()
                    named |= set(values.items())
            fresh = [f"{k}={v}" for (k, v) in entities if k in self.keys and (k, v) not in named]
        for label in known:
            if label != WHOLE and label not in tokens:
                tokens[label] = token(Scope.parse(label).as_dict())  # its memories went
        flags = Flags(tokens=tokens)
        flags.scopes = {label for label, now in tokens.items() if known.get(label) != now}
        if fresh:
            flags.everything = f"new on the server: {', '.join(sorted(fresh)[:3])}"
        return flags

    def unseen(self, label: str) -> str | None:
        """A scope /entities does not list holds no memories, as far as the server says."""
        values = self.fixed if label == WHOLE else Scope.parse(label).as_dict()
        return ";".join(ABSENT for _ in values)

    def credible(self, label: str, token: str, listed: int) -> str | None:
        """An entity of a scope holds every memory of the scope (expired ones included, as on
        both sides), so none where the listing found some means /entities does not see them:
        a Qdrant-backed server answers ``[]`` (upstream unwraps a list where Qdrant returns a
        tuple), and past its scan cap a user can be missing. (A lower count that is not zero
        may be an add between the probe and the listing: the next probe lists it again.)"""
        counted = min(int(part.split("/", 1)[0]) for part in token.split(";"))
        if counted > 0 or listed == 0:
            return None
        return (
            f"GET /entities counts {counted} memories for {label or 'its scope'} where the "
            f"listing found {listed} (a Qdrant-backed server answers [] to it)"
        )

    def expected(self, label: str, records: Iterable[Record]) -> str | None:
        """A user's (or agent's, or run's) count, oldest ``created_at`` and newest ``updated_at``
        (else ``created_at``), as /entities computes them. Only for one wildcard key and no
        fixed one: an entity beside others (a user's agent) counts the other scopes' too."""
        if len(self.keys) != 1 or self.fixed or label == WHOLE:
            return None
        count, oldest, newest = 0, None, None
        for record in records:
            count += 1
            created = parse_instant(record.created_at)
            updated = parse_instant(record.updated_at) or created
            if created is None or updated is None:
                return None  # the server stamped it, and memsync cannot know when
            oldest = created if oldest is None else min(oldest, created)
            newest = updated if newest is None else max(newest, updated)
        if count == 0:
            return ABSENT
        return f"{count}/{_instant(oldest)}/{_instant(newest)}"

    def _entities(self) -> dict[tuple[str, str], str]:
        http: Any = getattr(self.provider, "http", None)
        if http is None:
            raise ProviderError(f"{self.name}: cannot probe a provider without an HTTP client")
        entities = parse_entities(self.name, http.get("/entities"))
        scanned: dict[str, int] = {}
        for entity in entities:
            scanned[entity.type] = scanned.get(entity.type, 0) + entity.total_memories
        if max(scanned.values(), default=0) >= SCAN_LIMIT:
            raise ProbeUnsure(
                f"{self.name}: the server holds at least {SCAN_LIMIT} memories, more than "
                "GET /entities scans, so its counts may leave changes out"
            )
        return {
            (e.scope_key, e.id): f"{e.total_memories}/{_instant(e.created_at)}/"
            f"{_instant(e.updated_at)}"
            for e in entities
        }


def _instant(value: str | datetime | None) -> str:
    """An instant in one spelling (UTC, microseconds), whatever offset it was written with;
    a value that is not one stays as it was."""
    when = value if isinstance(value, datetime) else parse_instant(value)
    if when is None:
        return "" if value is None else str(value)
    return when.astimezone(UTC).isoformat(timespec="microseconds")


class ServerDatabaseProbe(ChangeProbe):
    """The server's own table, one query a period: a scope's token is its count and the digest
    of its memories' ids and payloads (``server_database.census``). Complete at any size: an
    add, an edit, a delete and a backdated add each change a digest."""

    def __init__(
        self, name: str, provider: Provider, keys: tuple[str, ...], fixed: Mapping[str, str]
    ) -> None:
        super().__init__(name, provider)
        self.keys = keys  # the wildcard keys; () for a provider of one scope
        self.fixed = dict(fixed)

    def ask(self, known: Mapping[str, str]) -> Flags:
        database: Any = getattr(self.provider, "database", None)
        if database is None:
            raise ProviderError(f"{self.name}: no database connection to probe")
        census = database.census(self.keys, self.fixed)
        tokens: dict[str, str] = {}
        for values, digest in census.scopes.items():
            label = (
                Scope.of(dict(zip(self.keys, values, strict=True))).label if self.keys else WHOLE
            )
            tokens[label] = digest.token
        for label in known:
            tokens.setdefault(label, EMPTY_TABLE)  # its memories went
        if not self.keys:
            tokens.setdefault(WHOLE, EMPTY_TABLE)
        flags = Flags(tokens=tokens)
        flags.scopes = {label for label, now in tokens.items() if known.get(label) != now}
        return flags

    def unseen(self, label: str) -> str | None:
        """A scope the table holds no memory of."""
        return EMPTY_TABLE

    def credible(self, label: str, token: str, listed: int) -> str | None:
        """The server lists what its table holds: a complete listing that found more memories
        than the table counts (just before) says the table is not the server's."""
        counted = int(token.split("/", 1)[0])
        if listed <= counted:
            return None
        return (
            f"the database counts {counted} memories for {label or 'its scope'} where the "
            f"server listed {listed}: is database_url the server's own database, and "
            "database_table its collection?"
        )


__all__ = ["ServerDatabaseProbe", "ServerEntitiesProbe"]
