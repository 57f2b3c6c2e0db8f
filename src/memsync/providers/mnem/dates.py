"""When a mnem node's version was made, and when the node was added: read from the commits.

mnem keeps no date on a node's version (and its own clients, ``mnem-langgraph``'s ``put`` and
``mnem-mcp``'s ``remember``, write no ``event_time``); its history has them. A version was made
by the newest commit (first-parent, from the commit the listing read) that wrote the node: that
commit's time is the version's ``updated_at``, which ``conflict = "newest"`` compares. The
newest commit that *added* the node dates it (``created_at``) when it carries no date; a node
added, forgotten and added again dates from its last addition.

``blame`` answers for one node at a time, a second per node on a store of a few thousand
commits. Here the log is walked once per listing instead, newest first, as far as the nodes
asked for need, and each commit's changes come from what memsync already knows before mnem is
asked (``changed_by``, which in mnem 0.0.7 costs a scan of the whole store, see ``commits``):

- commits memsync made (its batches, its tombstones) and commits the daemon made for the
  agents it serves, noted as they were made, and every commit read before, kept in the staging
  store (``CommitBook``);
- on an incremental listing, what its diff since the cursor says: every node it names changed
  after the cursor, so when one commit after the cursor is left unknown, the nodes no other
  commit explains were written by that one (``_deduced``), unread;
- a commit read here is noted for next time.

The mirror asks only for memories new to it or whose version changed since it staged them: after
the first sync, the newest commit or two. The first listing of a store agents filled walks its
whole history, within ``WALK_BUDGET_S`` of reads; the versions it did not reach stay undated
(and are counted) until they change again. Nothing is guessed: a version is dated by the commit
that made it, or not at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memsync.providers.mnem.commits import CommitEntry, KnownCommits
from memsync.providers.mnem.handle import StoreHandle

log = logging.getLogger("memsync.mnem")

WALK_BUDGET_S = 10.0  # seconds of commit reads (changed_by) one listing may spend dating
LOG_PAGE = 64  # commits read from the log at first; the page grows eightfold when walked past
BOOK_PAGE = 256  # commits looked up in the staging store at once


@dataclass(frozen=True)
class Floor:
    """What an incremental listing knows: the commit it diffed from (its cursor) and the kind
    of change (added, modified, removed) of every node its diff named."""

    commit: str
    kinds: Mapping[str, str] = field(default_factory=dict)


class CommitDates:
    """The first-parent log of one store from the commit a listing read (``head``), walked
    back lazily; what it found about each node is kept while the store is held."""

    def __init__(
        self,
        handle: StoreHandle,
        head: str,
        known: KnownCommits,
        *,
        budget_s: float | None = None,
    ) -> None:
        self.handle = handle
        self.head = head
        self.known = known
        self.budget_s = WALK_BUDGET_S if budget_s is None else budget_s
        self.spent = 0.0  # seconds spent reading commits
        self.read = 0  # commits read from the store
        self.cut_short = False  # the budget ran out before every version asked was dated
        self._log: list[Any] = []  # first-parent commits from ``head``, newest first
        self._log_limit = 0
        self._log_done = False
        self._entries: dict[str, CommitEntry] = {}
        self._looked_up: set[str] = set()  # commit ids asked of the staging store
        self._next = 0  # the next commit (index into the log) the walk takes in
        self._updated: dict[str, int] = {}  # node -> time (ms) of the newest commit writing it
        self._created: dict[str, int] = {}  # node -> time of its newest addition, settled
        self._made_since_removal: dict[str, int] = {}  # node -> oldest write seen, newest first
        self._absent: set[str] = set()  # removed by a commit newer than any that wrote them
        # cursor -> _made_since_removal once the walk had taken in every commit after it
        self._at_floor: dict[str, dict[str, int]] = {}

    # asking -----------------------------------------------------------------------------------

    def find(
        self,
        created: Iterable[str],
        updated: Mapping[str, str | None],
        floor: Floor | None = None,
    ) -> tuple[dict[str, int], dict[str, int]]:
        """Times (ms) of the commits that added CREATED and that made UPDATED (node -> the
        listed version), for those the walk can tell. FLOOR: the listing's, when incremental."""
        created = list(created)
        want_created = {n for n in created if n not in self._created}
        want_updated = {n: v for n, v in updated.items() if n not in self._updated}
        if want_created or want_updated:
            self._walk(want_created, want_updated, floor)
        return (
            {n: self._created[n] for n in created if n in self._created},
            {n: self._updated[n] for n in updated if n in self._updated},
        )

    # the walk ---------------------------------------------------------------------------------

    def _walk(self, created: set[str], updated: dict[str, str | None], floor: Floor | None) -> None:
        floor_at = self._index_of(floor.commit) if floor is not None else None
        while self._unsettled(created, updated):
            index = self._next
            if floor is not None and floor_at is not None:
                if index == floor_at:
                    self._at_floor.setdefault(floor.commit, dict(self._made_since_removal))
                if floor.commit in self._at_floor:
                    self._added_since(floor, created)
                    if not self._unsettled(created, updated):
                        return
            commit = self._commit(index)
            if commit is None:
                self._log_ended()
                return
            entry = self._entry(index)
            if entry is None:
                if (
                    floor is not None
                    and floor_at is not None
                    and index < floor_at
                    and self._deduced(index, floor_at, floor, created, updated)
                ):
                    return
                if self.spent >= self.budget_s:
                    self.cut_short = True
                    return
                entry = self._read(commit)
            self._take_in(entry)
            self._next += 1

    def _unsettled(self, created: set[str], updated: dict[str, str | None]) -> bool:
        return any(n not in self._updated for n in updated) or any(
            n not in self._created for n in created
        )

    def _take_in(self, entry: CommitEntry) -> None:
        """The next commit, newest first: the first write of a node dates its version; its
        addition (or the oldest write after its newest removal) dates the node."""
        for node_id in entry.made:
            if node_id in self._absent:
                continue
            self._updated.setdefault(node_id, entry.time_ms)
            if node_id in self._created:
                continue
            if entry.added is not None and node_id in entry.added:
                self._created[node_id] = entry.time_ms
                self._made_since_removal.pop(node_id, None)
            else:
                self._made_since_removal[node_id] = entry.time_ms
        for node_id in entry.removed:
            if node_id in self._created or node_id in self._absent:
                continue
            made = self._made_since_removal.pop(node_id, None)
            if made is None:
                self._absent.add(node_id)  # gone at the head: older writes are another life
            else:
                self._created[node_id] = made

    def _added_since(self, floor: Floor, created: set[str]) -> None:
        """Once every commit after the cursor is taken in, a node its diff says was added
        since was added by the oldest of them that wrote it after its last removal."""
        made_then = self._at_floor[floor.commit]
        for node_id in created:
            if node_id in self._created or floor.kinds.get(node_id) != "added":
                continue
            if node_id in made_then:
                self._created[node_id] = made_then[node_id]

    def _log_ended(self) -> None:
        """The root is taken in: a node's oldest write is its addition."""
        for node_id, made in self._made_since_removal.items():
            self._created.setdefault(node_id, made)
        self._made_since_removal = {}

    def _deduced(
        self,
        index: int,
        floor_at: int,
        floor: Floor,
        created: set[str],
        updated: dict[str, str | None],
    ) -> bool:
        """Whether the commit at INDEX, if it is the only one after the cursor whose changes are
        not known, need not be read: every node still asked of this listing changed after the
        cursor (its diff says so), so a node no known commit older than this one explains was
        written by this one. True once each is dated so; False (nothing dated) when one is
        not certain, e.g. an older known commit wrote the node at a version that is not known."""
        below: list[CommitEntry] = []
        for later in range(index + 1, floor_at):
            entry = self._entry(later)
            if entry is None:
                return False
            below.append(entry)
        this = self._commit(index)
        assert this is not None
        dated_updated: dict[str, int] = {}
        for node_id, version in updated.items():
            if node_id in self._updated:
                continue
            if floor.kinds.get(node_id) not in ("added", "modified"):
                return False
            first = next((e for e in below if node_id in e.made or node_id in e.removed), None)
            if first is None or node_id in first.removed:
                dated_updated[node_id] = this.time
            elif first.made[node_id] is not None and version is not None:
                same = first.made[node_id] == version
                dated_updated[node_id] = first.time_ms if same else this.time
            else:
                return False
        dated_created: dict[str, int] = {}
        for node_id in created:
            if node_id in self._created:
                continue
            if floor.kinds.get(node_id) != "added" or node_id in self._made_since_removal:
                return False  # a newer commit wrote it: this one may have removed it before
            added = None
            for entry in below:
                if node_id in entry.removed:
                    break
                if node_id in entry.made:
                    added = entry.time_ms
            dated_created[node_id] = this.time if added is None else added
        self._updated.update(dated_updated)
        self._created.update(dated_created)
        return True

    # the commits ------------------------------------------------------------------------------

    def _commit(self, index: int) -> Any:
        """The INDEX-th commit of the walk (0: ``head``), None past the root."""
        while index >= len(self._log) and not self._log_done:
            self._read_log()
        return self._log[index] if index < len(self._log) else None

    def _index_of(self, commit_id: str) -> int | None:
        index = 0
        while (commit := self._commit(index)) is not None:
            if commit.id == commit_id:
                return index
            index += 1
        return None

    def _read_log(self) -> None:
        """More of the first-parent log: from the store's head, down to the walk's ``head``
        and on (agents may have committed after the listing, on a store the daemon holds)."""
        limit = LOG_PAGE if not self._log_limit else self._log_limit * 8
        commits: list[Any] = self.handle.sdk_call(
            "read the log", lambda: self.handle.store.log(first_parent=True, limit=limit)
        )
        start = next((i for i, c in enumerate(commits) if c.id == self.head), None)
        self._log_limit = limit
        if len(commits) < limit:
            self._log_done = True
        if start is None:
            if self._log_done:  # not on this line of history: nothing can be dated
                self._log = []
            return
        self._log = commits[start:]

    def _entry(self, index: int) -> CommitEntry | None:
        """What memsync knows of the INDEX-th commit without asking mnem (None: nothing)."""
        commit = self._commit(index)
        if commit is None:
            return None
        entry = self._entries.get(commit.id) or self.known.get(commit.id)
        if entry is None and commit.id not in self._looked_up:
            self._look_up(index)
            entry = self._entries.get(commit.id)
        if entry is not None:
            self._entries[commit.id] = entry
        return entry

    def _look_up(self, index: int) -> None:
        """The staging store's entries for the INDEX-th commit and the next ``BOOK_PAGE`` - 1."""
        self._commit(index + BOOK_PAGE - 1)  # the log as far as the page goes
        ids = [c.id for c in self._log[index : index + BOOK_PAGE] if c.id not in self._looked_up]
        self._looked_up.update(ids)
        book = self.handle.commit_book
        if book is None:
            return
        kept = book.commits(self.handle.identity(), ids)
        for commit_id, (time_ms, changes) in kept.items():
            self._entries[commit_id] = CommitEntry.decoded(commit_id, time_ms, changes)

    def _read(self, commit: Any) -> CommitEntry:
        """COMMIT's changes from mnem (a scan of the store in 0.0.7), noted for next time."""
        started = time.monotonic()
        changes: dict[str, str] = self.handle.sdk_call(
            f"read commit {commit.id[:12]}", partial(self.handle.store.changed_by, commit.id)
        )
        self.spent += time.monotonic() - started
        self.read += 1
        entry = CommitEntry.read(commit.id, int(commit.time), changes)
        self._entries[commit.id] = entry
        self.known.note(entry)
        return entry
