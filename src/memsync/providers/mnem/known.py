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
NodeFact = Record | Skipped | None  # a node as read (Skipped: one with no content), or absent


@dataclass
class KnownNodes:
    """Nodes of one open store as memsync last read or wrote them; ``complete`` once every
    node of the store is among them (after a full listing, or for a store memsync created)."""

    complete: bool = False
    nodes: dict[str, NodeFact] = field(default_factory=dict)

    def get(self, node_id: str) -> NodeFact | _Unknown:
        if node_id in self.nodes:
            return self.nodes[node_id]
        return None if self.complete else UNKNOWN

    def everything(self, items: Iterable[Record | Skipped]) -> None:
        """The whole store was read: these are all of its nodes."""
        self.nodes = {item.id: item for item in items}
        self.complete = True

    def learn(self, items: Iterable[Record | Skipped]) -> None:
        for item in items:
            self.nodes[item.id] = item

    def gone(self, node_ids: Iterable[str]) -> None:
        for node_id in node_ids:
            self.nodes[node_id] = None

    def forget_all(self) -> None:
        self.nodes = {}
        self.complete = False

    def count(self) -> int | None:
        """How many nodes the store holds, when every one is known."""
        if not self.complete:
            return None
        return sum(1 for fact in self.nodes.values() if fact is not None)
