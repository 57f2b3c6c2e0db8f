"""Each memory's past, from Mem0's history and what Mem0 lists now: versions with their times.

A memory's versions are its texts in the order its history recorded them, each at the time of
the event that made it, ending with the memory as Mem0 lists it now (its *head*: written exactly
as the current-state import writes it) or, for a memory deleted before the move, with its
absence. What cannot be trusted is never made up; it is left out or clamped, and every memory
touched so is counted under the reason why (``reasons``):

- listed, but no history rows (written behind Mem0's API, a history database reset, or kept
  in memory): one version, the current one, at its ``updated_at`` (else ``created_at``);
- history unreadable for it (a route that failed after its retries): the same;
- rows that start with an edit or a delete (the add is missing): the first row's old text,
  at the memory's ``created_at``, then the rows;
- an edit whose old text is not the text before it (rows missing in between): counted, the
  edit's new text kept;
- the last text is not the text listed now: the rows, then the current version at its
  ``updated_at`` (or just after the last row);
- a delete, and Mem0 lists the memory still: the rows up to the delete, absent, then the
  current version;
- deleted before the move, and its scope unknown (the library's and the server's history
  name none; memsync's journal did not see it): not placed;
- a time earlier than the version before it, or none readable: just after that version; a
  time after the move: just before the move;
- an empty text: not a version (nothing empty is ever written, ADR-0024).

An edit that left the text as it was (metadata only) makes no version of its own; if it is the
memory's last event, the head is dated by it (the metadata it set is the head's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from memsync.base.history.events import SCOPE_IDS, HistoryEvent, HistoryRead, iso_of, ms_of
from memsync.base.records import Record, is_blank

NO_HISTORY: Final = "no history"
UNREADABLE: Final = "history unreadable"
MID_WAY: Final = "history starts mid-way"
GAPS: Final = "history has gaps"
DISAGREES: Final = "history disagrees with current text"
LISTED_AFTER_DELETE: Final = "listed after its delete"
SCOPE_UNKNOWN: Final = "deleted before the move, scope unknown"
NOT_DELETED: Final = "not listed, yet not deleted in its history"
REORDERED: Final = "times reordered"
UNDATED: Final = "event without a readable date"
AFTER_MOVE: Final = "dated after the move"
EMPTY: Final = "empty version"
REASONS: Final = (
    NO_HISTORY,
    UNREADABLE,
    MID_WAY,
    GAPS,
    DISAGREES,
    LISTED_AFTER_DELETE,
    SCOPE_UNKNOWN,
    NOT_DELETED,
    REORDERED,
    UNDATED,
    AFTER_MOVE,
    EMPTY,
)


@dataclass(frozen=True, slots=True)
class Version:
    """The memory's content from ``at_ms`` on: a text, or absent (``text is None``)."""

    at_ms: int
    text: str | None
    actor_id: str | None = None
    role: str | None = None
    head: bool = False  # the memory as Mem0 lists it now: the current-state import's node


@dataclass
class MemoryPast:
    """One memory's versions, oldest first, and why any of it was adjusted."""

    memory_id: str
    origin: str  # the logical memory (``mem0:{id}``, or the origin Mem0 holds as a marker)
    record: Record  # as listed now (``listed``), else as memsync's journal last saw it
    listed: bool
    versions: list[Version] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)

    @property
    def head(self) -> Version | None:
        last = self.versions[-1] if self.versions else None
        return last if last is not None and last.head else None


@dataclass
class Timeline:
    """Every memory's past for one store, and the memories counted by reason."""

    source: str
    cutover_ms: int
    pasts: list[MemoryPast] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    requests: int = 0

    @property
    def first_ms(self) -> int:
        return min((p.versions[0].at_ms for p in self.pasts if p.versions), default=self.cutover_ms)

    @property
    def versions(self) -> int:
        return sum(len(p.versions) for p in self.pasts)


def build_timeline(
    listed: Iterable[tuple[str, Record]],
    gone: Iterable[tuple[str, Record]],
    read: HistoryRead,
    *,
    cutover_ms: int,
    scope: Mapping[str, str] | None = None,
    scope_key: str = "",
) -> Timeline:
    """The pasts of the LISTED memories (origin, record as listed now) and of those memsync's
    journal saw before they were deleted (GONE: origin, record as last seen), from READ.

    A memory READ names that is in neither, whose history ends with its delete, is placed when
    its entries name SCOPE (the Platform's do) and counted as of unknown scope otherwise."""
    timeline = Timeline(read.source, cutover_ms, requests=read.requests)
    known: set[str] = set()
    for origin, record in listed:
        known.add(record.id)
        _add(timeline, _listed_past(origin, record, read, cutover_ms))
    for origin, record in gone:
        if record.id in known:
            continue
        known.add(record.id)
        events = read.events.get(record.id)
        if events:
            _add(timeline, _gone_past(origin, record, events, read.ordered, cutover_ms))
    for memory_id, events in read.events.items():
        if memory_id in known or not events:
            continue
        ordered = _ordered(events, read.ordered)
        if ordered[-1].kind != "DELETE":
            continue  # another scope's memory, alive: not this store's business
        named = _named_in_scope(memory_id, ordered, scope, scope_key)
        if named is None:
            timeline.reasons[SCOPE_UNKNOWN] += 1
            continue
        _add(timeline, _gone_past(f"mem0:{memory_id}", named, events, read.ordered, cutover_ms))
    timeline.reasons[SCOPE_UNKNOWN] += len(read.deleted_elsewhere - known - set(read.events))
    if not timeline.reasons[SCOPE_UNKNOWN]:
        del timeline.reasons[SCOPE_UNKNOWN]
    return timeline


def _add(timeline: Timeline, past: MemoryPast) -> None:
    timeline.reasons.update(past.reasons)
    if past.versions:
        timeline.pasts.append(past)


def _ordered(events: list[HistoryEvent], by_seq: bool) -> list[HistoryEvent]:
    return sorted(events, key=(lambda e: e.seq) if by_seq else HistoryEvent.sort_key)


def _named_in_scope(
    memory_id: str,
    events: list[HistoryEvent],
    scope: Mapping[str, str] | None,
    scope_key: str,
) -> Record | None:
    """A deleted memory whose entries name this store's scope, as a record to build on."""
    named = next((e.scope for e in events if e.scope), None)
    if not scope or not named or any(named.get(k) != v for k, v in scope.items()):
        return None
    first = next((e for e in events if e.kind == "ADD" and e.at_ms is not None), None)
    texts = [text for e in events for text in (e.new_text or e.old_text,) if text]
    return Record(
        id=memory_id,
        content=texts[-1] if texts else "",
        scope_key=scope_key,
        created_at=iso_of(first.at_ms) if first and first.at_ms is not None else None,
        provenance={k: named[k] for k in SCOPE_IDS if named.get(k)},
    )


def _listed_at(record: Record, cutover_ms: int) -> int:
    """When the version listed now was made, as far as the record says."""
    at = ms_of(record.updated_at)
    if at is None:
        at = ms_of(record.created_at)
    return min(at, cutover_ms - 1) if at is not None else cutover_ms - 1


def _listed_past(origin: str, record: Record, read: HistoryRead, cutover_ms: int) -> MemoryPast:
    past = MemoryPast(record.id, origin, record, listed=True)
    events = read.events.get(record.id)
    if record.id in read.unreadable or not events:
        past.reasons.add(UNREADABLE if record.id in read.unreadable else NO_HISTORY)
        past.versions.append(_head(record, _listed_at(record, cutover_ms)))
        return past
    walk = _Walk(past, cutover_ms, record)
    touched = walk.run(_ordered(events, read.ordered))
    listed_at = _listed_at(record, cutover_ms)
    if walk.text is None:  # deleted (or nothing but empty texts), yet listed now
        if walk.deleted:
            past.reasons.add(LISTED_AFTER_DELETE)
        past.versions.append(_head(record, walk.after(listed_at)))
    elif walk.text != record.content:
        past.reasons.add(DISAGREES)
        past.versions.append(_head(record, walk.after(listed_at)))
    elif touched is not None:  # metadata changed last: the head is dated by that edit
        past.versions.append(_head(record, walk.at(touched, None)))
    else:
        last = past.versions[-1]
        past.versions[-1] = Version(last.at_ms, record.content, last.actor_id, last.role, True)
    return past


def _gone_past(
    origin: str, record: Record, events: list[HistoryEvent], by_seq: bool, cutover_ms: int
) -> MemoryPast:
    past = MemoryPast(record.id, origin, record, listed=False)
    walk = _Walk(past, cutover_ms, record)
    walk.run(_ordered(events, by_seq))
    if walk.text is not None:  # its history says it lives on: nothing to be sure of
        past.versions.clear()
        past.reasons = {NOT_DELETED}
    return past


def _head(record: Record, at_ms: int) -> Version:
    source = record.provenance
    actor = source.get("actor_id")
    role = source.get("role")
    return Version(
        at_ms,
        record.content,
        actor if isinstance(actor, str) else None,
        role if isinstance(role, str) else None,
        head=True,
    )


class _Walk:
    """The versions one memory's events make, in order (see the module docstring)."""

    def __init__(self, past: MemoryPast, cutover_ms: int, record: Record) -> None:
        self.past = past
        self.cutover_ms = cutover_ms
        self.record = record
        self.text: str | None = None  # the memory's text after the events so far
        self.deleted = False
        self.previous: int | None = None  # the time of the last version made

    def run(self, events: list[HistoryEvent]) -> int | None:
        """Make the versions; the time of a trailing metadata-only edit, if there is one."""
        touched: int | None = None
        for number, event in enumerate(events):
            if number == 0 and event.kind != "ADD":
                self._start_mid_way(event)
            if event.kind == "DELETE":
                if self.text is not None:
                    self._version(None, event)
                    self.deleted = True
                touched = None
                continue
            new = event.new_text
            if new is None or is_blank(new):
                self.past.reasons.add(EMPTY)
                continue
            if event.kind == "UPDATE" and new == self.text:
                touched = event.at_ms if event.at_ms is not None else touched
                continue
            if event.kind == "UPDATE" and self.text is not None and event.old_text != self.text:
                self.past.reasons.add(GAPS)
            self._version(new, event)
            touched = None
        return touched

    def _start_mid_way(self, event: HistoryEvent) -> None:
        """The add is missing: the first row's old text, at the memory's created_at."""
        self.past.reasons.add(MID_WAY)
        old = event.old_text
        if old is None or is_blank(old):
            return
        created = ms_of(self.record.created_at)
        if created is None:
            created = event.created_ms
        if created is None and event.at_ms is not None:
            created = event.at_ms - 1
        self.text = old
        self._append(Version(self.at(created, event), old, event.actor_id, event.role))

    def _version(self, text: str | None, event: HistoryEvent) -> None:
        self.text = text
        self._append(Version(self.at(event.at_ms, event), text, event.actor_id, event.role))

    def _append(self, version: Version) -> None:
        self.past.versions.append(version)
        self.previous = version.at_ms

    def at(self, at_ms: int | None, event: HistoryEvent | None) -> int:
        """AT_MS as a version's time: before the move, after the version before it."""
        if at_ms is None:
            self.past.reasons.add(UNDATED)
            at_ms = self.previous + 1 if self.previous is not None else self.cutover_ms - 1
        if at_ms >= self.cutover_ms:
            self.past.reasons.add(AFTER_MOVE)
            at_ms = self.cutover_ms - 1
        if self.previous is not None and at_ms <= self.previous:
            if at_ms < self.previous:
                self.past.reasons.add(REORDERED)
            at_ms = self.previous + 1
        return at_ms

    def after(self, at_ms: int) -> int:
        """AT_MS, or just after the last version when that is later (never a reason)."""
        return max(at_ms, self.previous + 1) if self.previous is not None else at_ms
