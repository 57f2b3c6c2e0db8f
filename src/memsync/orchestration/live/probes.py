"""Remote stores, probed: one cheap request says which scopes changed, so only those are listed.

A probe only hints (Syncthing's way): a flagged scope is listed at once, and the full pass
keeps its own schedule (``[sync] interval``), so whatever a probe cannot see is still found
there; a probe that fails, or whose answer cannot be trusted, falls back to listing the
provider in full. What each store offers, checked against upstream:

- ``mem0-server``: ``GET /entities`` (``server/routers/entities.py`` at 8d5b786), one live
  pass over the memories: per user, agent and run the count, the oldest ``created_at`` and
  the newest ``updated_at``. A scope's *token* is its entities' three values; a scope whose
  token differs from the one memsync stored when it last listed the scope is flagged. In
  upstream's ``Memory`` an edit stamps ``updated_at`` with the edit's time (metadata cannot
  override it), an add counts one more and a delete one fewer; an expiry moves nothing, and
  needs nothing (the scan and memsync's listing both include expired memories). What can hide:
  an add whose metadata backdates ``created_at`` (it becomes its ``updated_at`` too, and
  memsync's own writes do this) with a delete in the same window leaves all three as they
  were; the full pass finds it. Past the scan's 10,000 memories the answer is partial, and the
  probe is not used. Instants are compared as instants (a server keeps what each memory was
  written with), so memsync can also say what a scope's token is once its own writes landed
  (``expected``): a create memsync made is not a change the next probe lists again.
- ``mem0-server`` with a database connection: one query over the server's own table
  (``providers/mem0/server_database.py``): per scope the count and a digest of every id and
  payload. Complete at any size; nothing hides, backdated adds and deletes included.
- ``mem0-platform``: the v3 list filtered on ``updated_at`` since the last probe (less the
  look-back) across every scope: one short page naming the scope of every memory added or
  edited. Deletes do not show (nor an add backdated out of the window): the full pass finds
  them. Not the entity listing (its ``updated_at`` is the entity's own, not its memories'), nor
  ``/v1/memories/events/`` (its order and which writes it logs are not documented), nor the
  total count (memsync's own backdated adds would make every one of its writes look like a
  delete): none is sure enough to stand on.
- ``hindsight`` (one bank): the bank's newest document (documents come newest ``updated_at``
  first) and the total: a retain stamps its document, a delete changes the total.
- ``cognee`` and the rest: no probe, the full pass. (Cognee makes an edit as an add and a
  delete, so its data count stays equal over one.)
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memsync.base.errors import InvalidResponse, MemsyncError, ProviderError
from memsync.base.records import Record, parse_instant
from memsync.base.scopes import Scope
from memsync.config import Config, HindsightConfig, Mem0ServerConfig
from memsync.config.scoping import fixed_keys, wildcard_keys
from memsync.providers.base import Provider

log = logging.getLogger("memsync.probe")

WHOLE = ""  # the scope label of a provider that holds one scope
PLATFORM_PAGES = 5  # pages of changed memories one probe reads before it lists every scope
ABSENT = "0//"  # the token of an entity the server does not list: it holds no memories
EMPTY_TABLE = "0/0"  # the database probe's token of a scope its table holds nothing of


class ProbeUnsure(MemsyncError):
    """The probe answered, but its answer cannot say which scopes changed."""


@dataclass
class Flags:
    """What one probe found: the scopes (labels; ``WHOLE`` for a provider of one scope) that
    changed, or why every scope must be listed, and the tokens to keep once they are listed."""

    scopes: set[str] = field(default_factory=set)
    everything: str | None = None
    tokens: dict[str, str] = field(default_factory=dict)


class Probe(ABC):
    """The probe of one configured provider; ``provider`` is built once and kept open."""

    def __init__(self, name: str, provider: Provider) -> None:
        self.name = name
        self.provider = provider

    @abstractmethod
    def ask(self, known: Mapping[str, str]) -> Flags:
        """One probe against ``known`` (scope label → the token memsync last listed it with;
        ``""`` for a scope memsync syncs but holds no token for). Raises MemsyncError when it
        failed, ProbeUnsure when its answer cannot be trusted."""

    def unseen(self, label: str) -> str | None:
        """The token of a scope the probe's answer did not name (None: it has none)."""
        return None

    def credible(self, label: str, token: str, listed: int) -> str | None:
        """Why TOKEN cannot be right for a scope whose complete listing (just after the probe)
        found LISTED memories; None when nothing says it is wrong."""
        return None

    def expected(self, label: str, records: Iterable[Record]) -> str | None:
        """The token the probe answers for a scope holding exactly RECORDS (memsync's mirror
        of it, its own writes included); None when the probe's token cannot be told from
        them. ``Live`` uses it so that memsync's own writes do not list the scope again."""
        return None

    def close(self) -> None:
        self.provider.close()


# --- mem0-server -------------------------------------------------------------------------------


class ServerEntitiesProbe(Probe):
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
        from memsync.providers.mem0.server_entities import SCAN_LIMIT, parse_entities

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


class ServerDatabaseProbe(Probe):
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


# --- mem0-platform -----------------------------------------------------------------------------


class PlatformChangesProbe(Probe):
    """The v3 list filtered on ``updated_at`` since the last probe, less the look-back.

    Its state is the window it last asked about, kept in memory (after a restart the start's
    full pass covers the gap): the changes it has flagged already are not flagged again.
    Deletes do not show in it: they are found by the full pass.
    """

    def __init__(
        self,
        name: str,
        provider: Provider,
        keys: tuple[str, ...],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        super().__init__(name, provider)
        self.keys = keys
        self.now = now
        self._asked: datetime | None = None  # when the last probe asked (local clock)
        self._seen: dict[str, str] = {}  # memory id -> the updated_at already flagged

    def ask(self, known: Mapping[str, str]) -> Flags:
        provider: Any = self.provider
        lookback: timedelta = provider.lookback
        asked = self.now()
        since = (self._asked or asked) - lookback
        changed, whole = self._changed(provider, since)
        flags = Flags()
        for raw in changed:
            memory_id, stamp = str(raw["id"]), str(raw.get("updated_at") or "")
            if self._seen.get(memory_id) == stamp:
                continue
            self._seen[memory_id] = stamp
            values = {**raw, "run_id": raw.get("run_id") or raw.get("session_id")}
            scope = {k: str(values[k]) for k in self.keys if values.get(k)}
            if not self.keys:
                flags.scopes.add(WHOLE)
            elif len(scope) == len(self.keys):
                flags.scopes.add(Scope.of(scope).label)
        if self._asked is None:
            flags.scopes.clear()  # the first probe sets the window; the start's full pass lists
        elif not whole:
            flags.everything = f"more than {PLATFORM_PAGES} pages of memories changed"
        self._seen = {
            i: s for i, s in self._seen.items() if (parse_instant(s) or asked) >= since - lookback
        }
        self._asked = asked
        return flags

    def _changed(self, provider: Any, since: datetime) -> tuple[list[dict[str, Any]], bool]:
        """The memories changed since SINCE, across every scope; False when pages remain."""
        from memsync.providers.mem0.platform_listing import utc_iso

        filters = _all_scopes_filter(provider, {"updated_at": {"gte": utc_iso(since)}})
        changed: list[dict[str, Any]] = []
        for number in range(1, PLATFORM_PAGES + 1):
            page = provider._page(number, filters)
            changed += [r for r in page["results"] if isinstance(r, dict) and r.get("id")]
            if not page.get("next") or not page["results"]:
                return changed, True
        return changed, False


def _all_scopes_filter(provider: Any, condition: dict[str, Any] | None) -> dict[str, Any]:
    """The configured scope (wildcards as "*", fixed keys as set), and CONDITION."""
    conditions: list[dict[str, Any]] = [{k: v} for k, v in provider.scope.items()]
    if condition is not None:
        conditions.append(condition)
    return conditions[0] if len(conditions) == 1 else {"AND": conditions}


# --- hindsight ------------------------------------------------------------------------------


class HindsightDocumentsProbe(Probe):
    """The bank's newest document and its total (``GET .../documents?limit=1``)."""

    def ask(self, known: Mapping[str, str]) -> Flags:
        provider: Any = self.provider
        path = f"{provider._bank_path(provider.bank)}/documents"
        body = provider.http.get(path, params={"limit": 1, "offset": 0})
        total = body.get("total") if isinstance(body, dict) else None
        if not isinstance(total, int) or isinstance(total, bool):
            raise InvalidResponse(f"{self.name}: GET {path} answered no total")
        items = body.get("items") or []
        newest = items[0] if items and isinstance(items[0], dict) else {}
        token = f"{total}/{newest.get('id', '')}/{newest.get('updated_at', '')}"
        changed = {WHOLE} if known.get(WHOLE) != token else set()
        return Flags(scopes=changed, tokens={WHOLE: token})


# --- which providers -----------------------------------------------------------------------------


def probes_for(config: Config, build: Callable[[str], Provider]) -> list[Probe]:
    """A probe for every configured provider that offers a cheap and sure one; a provider
    that cannot be built here is not probed (said once: its full pass says the rest)."""
    probes: list[Probe] = []
    for name, entry in config.providers.items():
        kind: type[Probe] | None = None
        if isinstance(entry, Mem0ServerConfig):
            kind = ServerDatabaseProbe if entry.database else ServerEntitiesProbe
        elif entry.type == "mem0-platform":
            kind = PlatformChangesProbe
        elif isinstance(entry, HindsightConfig) and entry.bank is not None:
            kind = HindsightDocumentsProbe
        if kind is None:
            continue
        try:
            provider = build(name)
        except MemsyncError as exc:
            log.warning("not probing %s: %s; its changes are found by the full pass", name, exc)
            continue
        if kind is ServerEntitiesProbe or kind is ServerDatabaseProbe:
            probes.append(kind(name, provider, wildcard_keys(entry), fixed_keys(entry)))
        elif kind is PlatformChangesProbe:
            probes.append(PlatformChangesProbe(name, provider, wildcard_keys(entry)))
        else:
            probes.append(HindsightDocumentsProbe(name, provider))
    return probes


__all__ = [
    "WHOLE",
    "Flags",
    "HindsightDocumentsProbe",
    "PlatformChangesProbe",
    "Probe",
    "ProbeUnsure",
    "ServerDatabaseProbe",
    "ServerEntitiesProbe",
    "probes_for",
]
