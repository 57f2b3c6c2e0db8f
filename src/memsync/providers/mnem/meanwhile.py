"""What others committed to a mnem store since memsync last read it: never overwritten blind.

While a process opens a store for itself nobody else can commit to it, so memsync's writes in a
cycle always land on the state its listing read. A store borrowed from the daemon's held stores
(``held``) is different: the agents the daemon serves commit between memsync's calls. So the
provider remembers the head its listing read (``read_at``) and each commit it made itself
(``wrote``), and before it stages anything, inside the store's lane, it catches up with the
commits made by others since (``catch_up``): their nodes are changed meanwhile. Replay's
freshness check asks for them first (``versions``: the write is planned again next cycle, as a
conflict when it is one), and a batch refuses to write over them (``ChangedMeanwhile``) for the
moment between that check and its own commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from memsync.base.errors import TransientProviderError
from memsync.providers.mnem.convert import node_version

if TYPE_CHECKING:
    from memsync.providers.mnem.handle import StoreHandle

log = logging.getLogger("memsync.mnem")

EVERYTHING = "*"  # the head moved somewhere a diff cannot follow: every node counts as changed


class ChangedMeanwhile(TransientProviderError):
    """A node another writer changed since memsync read the store: not overwritten blind."""


class Meanwhile:
    """The head memsync last saw in a store, and the nodes others changed since its listing."""

    def __init__(self) -> None:
        self.read = False  # no listing yet: nothing to compare with
        self.head: str | None = None  # the head memsync last saw (None: the store had none)
        self.others: set[str] = set()

    def read_at(self, head: str | None) -> None:
        """A listing read the store at HEAD: what others did before is in it."""
        self.read = True
        self.head = head
        self.others = set()

    def wrote(self, commit: str) -> None:
        """memsync committed COMMIT on top of the head it had caught up with."""
        self.read = True
        self.head = commit

    def catch_up(self, handle: StoreHandle) -> set[str]:
        """The nodes others changed since the listing (call inside the lane, before staging).
        A store memsync opened for itself has no others: nobody can commit while it holds it."""
        if not self.read or not handle.borrowed:
            return self.others
        head = handle.sdk_call("read the head commit", lambda: handle.store.head_commit())
        if head is None or head == self.head:
            return self.others
        since = self.head
        try:
            if since is None:  # the store had no commit when memsync read it: all is new
                changed = set(
                    handle.sdk_call("read the head state", lambda: handle.store.state_at(head))
                )
            else:
                changes = handle.sdk_call(
                    f"diff {since[:12]}..{head[:12]}", lambda: handle.store.diff(since, head)
                )
                changed = {change.id for change in changes}
        except TransientProviderError:
            raise
        except Exception as exc:  # the branch moved under memsync: nothing can be trusted
            log.info("%s: cannot follow the head from %s (%s)", handle.name, since, exc)
            changed = {EVERYTHING}
        self.others |= changed
        self.head = head
        return self.others

    def covers(self, node_id: str) -> bool:
        return node_id in self.others or EVERYTHING in self.others

    def versions(
        self, handle: StoreHandle, holds: Callable[[str], bool] = lambda node_id: True
    ) -> dict[str, str | None]:
        """Each node others changed that HOLDS admits (the asking scope's own: a store holding
        many scopes shares one account), with its version now (None: gone), for replay's
        freshness check; every such node when the head moved where a diff cannot follow."""
        changed = self.catch_up(handle)
        if EVERYTHING in changed:
            nodes = handle.sdk_call("read working memory", lambda: handle.store.working_memory())
            return {n: node_version(node) for n, node in nodes.items() if holds(n)}
        versions: dict[str, str | None] = {}
        for node_id in sorted(n for n in changed if holds(n)):
            node = handle.sdk_call(
                f"read node {node_id!r}", partial(_working_node, handle, node_id)
            )
            versions[node_id] = None if node is None else node_version(node)
        return versions

    def refusal(self, handle: StoreHandle, node_id: str) -> ChangedMeanwhile:
        return ChangedMeanwhile(
            f"{handle.name}: node {node_id!r} in {handle.path} was changed by another writer "
            "while memsync was writing; not overwritten: planned again next cycle"
        )


def _working_node(handle: StoreHandle, node_id: str) -> Any:
    return handle.store.working_node(node_id)
