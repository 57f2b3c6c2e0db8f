"""What memsync knows each node of an open mnem store holds, so that writes need not ask mnem.

In mnem 0.0.7 reading one node (``working_node``) costs time in proportion to the whole store,
so a batch that asked for each node it writes was quadratic. What memsync already read during
its hold on the store is exact until someone else writes, and nobody else can while memsync
holds the store's one handle: a full listing knows every node, an incremental listing the
nodes its diff named, and each of memsync's commits what it wrote. ``KnownNodes`` keeps that,
and forgets it all when the handle is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from memsync.base.records import Record, Skipped


class _Unknown:
    """The answer for a node memsync has not seen this hold (mnem was not asked)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()


@dataclass(frozen=True, slots=True)
class StagedAhead:
    """A node a writer process staged ahead for a memory (``ahead``): what it holds
    (``NodeSpec.identity``), for which memory, and whether a commit took it in yet."""

    identity: str
    origin: str
    committed: bool = False


# a node as read (Skipped: one with no content), staged ahead, or absent
NodeFact = Record | Skipped | StagedAhead | None
# node id -> (identity, origin) of the nodes staged ahead: plain strings, which the garbage
# collector does not walk (a first sync stages every node of a new store ahead)
Ahead = dict[str, tuple[str, str]]


@dataclass
class KnownNodes:
    """Nodes of one open store as memsync last read or wrote them; ``complete`` once every
    node of the store is among them (after a full listing, or for a store memsync created)."""

    complete: bool = False
    nodes: dict[str, NodeFact] = field(default_factory=dict)
    ahead: Ahead = field(default_factory=dict)  # staged ahead (``ahead``), unless in ``nodes``
    ahead_in: bool = False  # a commit took them in

    def get(self, node_id: str) -> NodeFact | _Unknown:
        if node_id in self.nodes:
            return self.nodes[node_id]
        staged = self.ahead.get(node_id)
        if staged is not None:
            return StagedAhead(staged[0], staged[1], committed=self.ahead_in)
        return None if self.complete else UNKNOWN

    def everything(self, items: Iterable[Record | Skipped]) -> None:
        """The whole store was read: these are all of its nodes."""
        self.nodes = {item.id: item for item in items}
        self.ahead, self.ahead_in = {}, False
        self.complete = True

    def learn_ahead(self, staged: Ahead) -> None:
        """The nodes staged ahead in this store, for the creates planned (not committed yet)."""
        self.ahead, self.ahead_in = staged, False

    def staged_ahead(self) -> list[str]:
        """The nodes staged ahead and not committed yet."""
        if self.ahead_in:
            return []
        return [node_id for node_id in self.ahead if node_id not in self.nodes]

    def ahead_committed(self) -> None:
        """A commit took in every node staged ahead."""
        self.ahead_in = True

    def learn(self, items: Iterable[Record | Skipped]) -> None:
        for item in items:
            self.nodes[item.id] = item

    def gone(self, node_ids: Iterable[str]) -> None:
        for node_id in node_ids:
            self.nodes[node_id] = None

    def forget_all(self) -> None:
        self.nodes, self.ahead = {}, {}
        self.complete = False

    def count(self) -> int | None:
        """How many nodes the store holds, when every one is known."""
        if not self.complete:
            return None
        ahead = sum(1 for n in self.ahead if n not in self.nodes) if self.ahead_in else 0
        return ahead + sum(1 for fact in self.nodes.values() if fact is not None)
