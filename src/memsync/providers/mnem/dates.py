"""When a node an agent wrote was created: the commit that added it, read from mnem's log.

mnem's own clients (``mnem-langgraph``'s ``put``, ``mnem-mcp``'s ``remember``) write nodes with
no ``event_time``, so a native node says nothing of its age; its history does. ``blame`` answers
for one node by walking the history back from the head until that node's value changes, which
costs a second per node on a store with a few thousand commits. Here the log is walked once
instead, newest first, reading each commit's changes (``changed_by``), as far back as the nodes
asked for need and no further; what was read is kept, so the next question goes on from there.

The mirror asks only for memories it sees for the first time without a date, never per cycle:
after the first sync that is a node an agent added since the last cycle, found in the newest
few commits. The first sync of a store agents filled walks as far back as its oldest such
node's commit. A node added, forgotten and added again dates from its last addition.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from memsync.providers.mnem.convert import iso_from_ms
from memsync.providers.mnem.handle import StoreHandle


class CommitDates:
    """The first-parent log of one open store, walked back lazily for when nodes were added."""

    def __init__(self, handle: StoreHandle) -> None:
        self.handle = handle
        self._commits: list[Any] | None = None
        self._next = 0  # the next commit to read, newest first
        self._added: dict[str, int] = {}  # node id -> time (ms) of the newest commit adding it

    def created_at(self, node_ids: list[str]) -> dict[str, str]:
        """ISO instants of the commits that added these nodes, for those the log shows."""
        wanted = {node_id for node_id in node_ids if node_id not in self._added}
        if wanted:
            self._walk(wanted)
        return {n: iso_from_ms(self._added[n]) for n in node_ids if n in self._added}

    def _walk(self, wanted: set[str]) -> None:
        if self._commits is None:
            self._commits = self.handle.sdk_call(
                "read the log", lambda: self.handle.store.log(first_parent=True)
            )
        commits = self._commits
        while wanted and self._next < len(commits):
            commit = commits[self._next]
            self._next += 1
            changes: dict[str, str] = self.handle.sdk_call(
                f"read commit {commit.id[:12]}", partial(self.handle.store.changed_by, commit.id)
            )
            for node_id, kind in changes.items():
                if kind == "added" and node_id not in self._added:
                    self._added[node_id] = int(commit.time)
                    wanted.discard(node_id)
