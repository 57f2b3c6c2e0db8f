"""The watched stores as memsync left them: its own writes start no cycle, another program's do.

As each scope's cycle lets a store go, memsync notes its files (``WatchedFiles.signature``)
and what the store held (``Provider.left_token``, a mnem store's head). A watched change counts
only while the files differ from that note; files that moved over the same content (a mnem
handle closed on the store, which rewrites its file) are noted again, not taken for a change.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from memsync.base.scopes import Scope, scoped_name, split_scoped_name
from memsync.engine.report import USABLE, CycleReport
from memsync.providers.watched import Hint, Signature, WatchedFiles

log = logging.getLogger("memsync.live")


@dataclass(frozen=True)
class Left:
    """A local store as a cycle let it go: its files, and what it held (``left_token``)."""

    files: Signature
    token: str | None = None


class LocalStores:
    """The watched stores, each as memsync last left it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stores: list[WatchedFiles] = []
        self.left: dict[Hint, Left] = {}  # each local store as memsync left it
        self._held: dict[Hint, Left] = {}  # ...as a cycle released it, until it is kept
        self.own_changes = 0  # watched changes that were memsync's own writes (no cycle)

    def watch(self, stores: list[WatchedFiles]) -> None:
        """Watch these from now on (a new config)."""
        with self._lock:
            self.stores = stores

    def providers(self) -> set[str]:
        """The providers whose stores are watched."""
        with self._lock:
            return {store.provider for store in self.stores}

    def _store_of(self, provider: str) -> WatchedFiles | None:
        with self._lock:
            return next((s for s in self.stores if s.provider == provider), None)

    def changed(self, pending: set[Hint]) -> set[Hint]:
        """The watched changes whose store differs from what memsync left: another program's."""
        with self._lock:
            stores = {store.provider: store for store in self.stores}
            left = dict(self.left)
        changed = set()
        for hint in pending:
            store = stores.get(hint.provider)
            if store is None:
                continue
            if hint in left and self._unchanged(store, hint, left[hint]):
                log.debug("%s: changed by memsync itself; no cycle", hint.label)
                self.own_changes += 1
                continue
            changed.add(hint)
        return changed

    def _unchanged(self, store: WatchedFiles, hint: Hint, note: Left) -> bool:
        """Whether the store still holds what memsync left: the same files, or files that moved
        over the same content (a mnem handle closed on it), noted from then on."""
        if store.signature(hint.scope) == note.files:
            return True
        if note.token is None:
            return False
        files = store.settled(hint.scope, note.token)
        if files is None:
            return False
        with self._lock:
            if self.left.get(hint) == note:
                self.left[hint] = Left(files, note.token)
        return True

    def left_under(self, roots: list[Path]) -> set[Hint]:
        """What memsync left in every store under ROOTS, to compare again (a watch just began:
        a change made before it took hold gives no event)."""
        with self._lock:
            providers = {store.provider for store in self.stores if store.root in roots}
            return {hint for hint in self.left if hint.provider in providers}

    def not_synced(self, hint: Hint) -> None:
        """A change in a scope memsync does not sync: its files as they are, so that it is not
        taken for a change again."""
        store = self._store_of(hint.provider)
        if store is not None:
            note = Left(store.signature(hint.scope))
            with self._lock:
                self.left[hint] = note

    def released(self, name: str, token: str | None) -> None:
        """A cycle released provider NAME: its store's files as memsync left them, and TOKEN.

        Noted just after the close (closing a mnem handle rewrites its file), and kept once
        the scope's cycle says the provider was read (``scope_done``). A program that writes
        the moment memsync lets go changes the files again once it commits and closes, and
        its new head does not match TOKEN: a change, as it should be.
        """
        split = split_scoped_name(name)
        provider, scope = split if split is not None else (name, None)
        store = self._store_of(provider)
        if store is None:
            return
        # A store every scope shares is still held by the run: its files are noted as it ends.
        files = None if store.every_scope and scope is not None else store.signature(scope)
        with self._lock:
            self._held[Hint(provider, scope)] = Left(files, token)

    def scope_done(self, scope: Scope | None, report: CycleReport) -> None:
        """What memsync left in each local store it read for SCOPE, as that scope's cycle ended."""
        with self._lock:
            stores = list(self.stores)
        for store in stores:
            name = store.provider if scope is None else scoped_name(store.provider, scope)
            outcome = report.providers.get(name)
            hint = Hint(store.provider, None if store.every_scope else scope)
            with self._lock:
                held = self._held.pop(Hint(store.provider, scope), None)
            if outcome is None or outcome.state not in USABLE:
                continue  # not read this cycle (skipped, busy): another program's changes stand
            if store.every_scope and scope is not None:
                # Still held by the run: its files move when it lets go, over the same head.
                held = Left(store.signature(None), held.token if held is not None else None)
            if held is None:
                continue
            with self._lock:
                self.left[hint] = held


__all__ = ["Left", "LocalStores"]
