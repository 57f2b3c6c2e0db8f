"""Mem0's history, as its stores keep it: one event per add, edit and delete of a memory.

Every Mem0 flavour keeps each memory's history in the same ten columns (the library's SQLite
``history`` table, the self-hosted server's ``history`` table or route, which answers the
library's rows): ``memory_id``, ``old_memory``, ``new_memory``, ``event`` (ADD, UPDATE or
DELETE), ``created_at``, ``updated_at``, ``is_deleted``, ``actor_id`` and ``role``. The
Platform's route answers entries of its own shape (``created_at`` is the entry's own time, and
the entry names the memory's scope). Both become ``HistoryEvent``s here.

When an event happened, in the library's rows (mem0ai 2.2.1, ``memory/main.py``): an ADD is
dated by ``created_at`` (the memory's own, backdated when the add said so); an UPDATE and a
DELETE carry the *memory's* ``created_at`` and their own time in ``updated_at``. Dates are ISO
8601 with an offset and microseconds; they are compared as instants, never as strings (a
DELETE row's ``created_at`` is normalised to UTC, which string order gets wrong). Nothing here
invents a time: an event whose dates cannot be read keeps ``at_ms = None``, and the timeline
says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

from memsync.base.records import parse_instant

Kind = Literal["ADD", "UPDATE", "DELETE"]
KINDS: Final[tuple[Kind, ...]] = ("ADD", "UPDATE", "DELETE")
KIND_ORDER: Final = {kind: n for n, kind in enumerate(KINDS)}  # one instant: add, edit, delete
SCOPE_IDS: Final = ("user_id", "agent_id", "app_id", "run_id")
COLUMNS: Final = (
    "memory_id",
    "old_memory",
    "new_memory",
    "event",
    "created_at",
    "updated_at",
    "is_deleted",
    "actor_id",
    "role",
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms_of(value: Any) -> int | None:
    """An ISO instant (or a datetime) as Unix milliseconds, floored; None when unreadable."""
    if isinstance(value, datetime):
        instant: datetime | None = value if value.tzinfo else value.replace(tzinfo=UTC)
    else:
        instant = parse_instant(value if isinstance(value, str) else None)
    if instant is None:
        return None
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def iso_of(ms: int) -> str:
    """Unix milliseconds as an ISO instant in UTC (``...Z``)."""
    return (_EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")[:-6] + "Z"


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One add, edit or delete of one memory, as Mem0's history recorded it."""

    memory_id: str
    kind: Kind
    old_text: str | None
    new_text: str | None
    at_ms: int | None  # when it happened; None when the row's dates cannot be read
    created_ms: int | None  # the memory's created_at as the row carries it (library rows)
    actor_id: str | None
    role: str | None
    seq: int  # the row's place in the store (the library's rowid) or in the route's answer
    scope: Mapping[str, str] | None = None  # the scope the entry names (the Platform's)

    def sort_key(self) -> tuple[int, int, int]:
        """Time, then add before edit before delete, then the store's own order."""
        return (self.at_ms if self.at_ms is not None else -1, KIND_ORDER[self.kind], self.seq)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _kind(value: Any) -> Kind | None:
    kind = str(value or "").strip().upper()
    return kind if kind in KIND_ORDER else None


def event_from_row(row: Mapping[str, Any], seq: int) -> HistoryEvent | None:
    """A row of the library's (or the server's) ``history`` table, or one element of the
    server route's answer; None for a row that names no memory or no known event."""
    kind = _kind(row.get("event"))
    memory_id = row.get("memory_id")
    if kind is None or not memory_id:
        return None
    created = ms_of(row.get("created_at"))
    updated = ms_of(row.get("updated_at"))
    # an edit's or a delete's own time is updated_at alone: its created_at is the memory's
    at = (created if created is not None else updated) if kind == "ADD" else updated
    return HistoryEvent(
        memory_id=str(memory_id),
        kind=kind,
        old_text=_text(row.get("old_memory")),
        new_text=_text(row.get("new_memory")),
        at_ms=at,
        created_ms=created,
        actor_id=_text(row.get("actor_id")) or None,
        role=_text(row.get("role")) or None,
        seq=seq,
    )


def event_from_platform(entry: Mapping[str, Any], seq: int) -> HistoryEvent | None:
    """One entry of the Platform's ``GET /v1/memories/{id}/history/`` (upstream's OpenAPI:
    ``created_at`` is when the entry was made, the scope ids are the memory's; the entry has no
    actor, and its ``input`` messages carry a role)."""
    kind = _kind(entry.get("event"))
    memory_id = entry.get("memory_id")
    if kind is None or not memory_id:
        return None
    role = _text(entry.get("role"))
    messages = entry.get("input")
    if role is None and isinstance(messages, list) and messages:
        last = messages[-1]
        role = _text(last.get("role")) if isinstance(last, Mapping) else None
    scope = {k: str(entry[k]) for k in SCOPE_IDS if entry.get(k)}
    if not scope.get("run_id") and entry.get("session_id"):
        scope["run_id"] = str(entry["session_id"])  # the Platform's name for run_id
    return HistoryEvent(
        memory_id=str(memory_id),
        kind=kind,
        old_text=_text(entry.get("old_memory")),
        new_text=_text(entry.get("new_memory")),
        at_ms=ms_of(entry.get("created_at")),
        created_ms=None,
        actor_id=_text(entry.get("actor_id")) or None,
        role=role or None,
        seq=seq,
        scope=scope or None,
    )


@dataclass
class HistoryRead:
    """What a source's history said of the memories asked about.

    ``ordered``: ``seq`` is the order the events were recorded in (the library's rowid), so it
    is trusted over their dates; otherwise events are ordered by time.
    """

    source: str  # where it was read, for the report ("the history database at ...")
    events: dict[str, list[HistoryEvent]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # memory id -> why not
    ordered: bool = False
    requests: int = 0  # requests made (a route read per memory), for the report
    # memories not asked about that the history shows deleted (rows naming no scope)
    deleted_elsewhere: set[str] = field(default_factory=set)

    def add(self, event: HistoryEvent) -> None:
        self.events.setdefault(event.memory_id, []).append(event)
