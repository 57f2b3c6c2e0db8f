"""The mnem Stores the daemon holds, one per store, lent to everyone in it: its cycles and the
agents it serves (``memsync.orchestration.serve``) share the one handle mnem allows.

mnem allows one open handle per store, across processes and within one. While the daemon holds
a store for the agents it serves, its own cycles, verifies and watches must use that handle
rather than open another. So the daemon makes one ``HeldStores`` and passes it to whatever
opens a store in it: the mnem providers it builds (``held=``) borrow their Store here, and the
served agents lease one (``lease``); the first borrower opens it, the last to give it back
drops it, after a linger when an agent's connection asked for one. A process that is not the
daemon (``memsync sync``, an agent's own) has none: each handle opens its own Store.

Every call into a held Store takes the store's ``Lane``: one thread at a time, as the SDK
wants (a Store may be used from any thread, one call at a time). mnem's staging is shared,
so whoever stages and commits holds the lane from the first ``add`` to the ``commit``
(``Lane.held``), and an agent comes first: a waiting agent is let in before the next sync
call, and a sync batch that sees one waiting commits what it staged so far and steps aside
(``Lane.yield_to_agents``), so an agent's write never waits for a whole batch.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("memsync.mnem")


class Lane:
    """Who may call into one held Store now: one thread at a time (re-entrant), agents first."""

    def __init__(self) -> None:
        self._turn = threading.Condition()
        self._owner: int | None = None
        self._depth = 0
        self._agents = 0  # agents waiting for the lane

    @contextlib.contextmanager
    def held(self, *, agent: bool = False) -> Iterator[None]:
        self.acquire(agent=agent)
        try:
            yield
        finally:
            self.release()

    def acquire(self, *, agent: bool = False) -> None:
        """Wait for the lane; memsync's own calls also wait while an agent does."""
        me = threading.get_ident()
        with self._turn:
            if self._owner == me:
                self._depth += 1
                return
            if agent:
                self._agents += 1
            try:
                self._turn.wait_for(lambda: self._owner is None and (agent or not self._agents))
            finally:
                if agent:
                    self._agents -= 1
            self._owner, self._depth = me, 1

    def release(self) -> None:
        with self._turn:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._turn.notify_all()

    def agents_waiting(self) -> bool:
        """Whether an agent waits for the lane (a glance: the answer may be a moment old)."""
        return self._agents > 0

    def yield_to_agents(self) -> None:
        """Step aside (the caller holds the lane, with nothing staged) until the agents waiting
        have had their turn, then take the lane back as deep as it was held."""
        me = threading.get_ident()
        with self._turn:
            if self._owner != me:
                raise RuntimeError("yield_to_agents() by a thread that does not hold the lane")
            depth, self._owner, self._depth = self._depth, None, 0
            self._turn.notify_all()
            self._turn.wait_for(lambda: self._owner is None and not self._agents)
            self._owner, self._depth = me, depth


class StoreLetGo(Exception):
    """A call on a shared Store after the process let go of it (a borrower kept it too long)."""


class HeldStore:
    """A held Store as its borrowers see it: the same methods, each called inside the lane.

    No method keeps the Store in a local variable: a traceback someone keeps must not pin the
    Store (and mnem's lock with it) once the process lets go of it.
    """

    __slots__ = ("_store", "lane", "notes", "root")

    def __init__(self, store: Any, lane: Lane, root: Path) -> None:
        self._store = store
        self.lane = lane
        self.root = root
        # What its users learn of the store and share while it is held (mnem's ``commits``:
        # the commits the agents' writes made, for the daemon's cycles to date them).
        self.notes: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        with self.lane.held():
            if not callable(getattr(self._live(), name)):
                return getattr(self._live(), name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.lane.held():
                return getattr(self._live(), name)(*args, **kwargs)

        return call

    def _live(self) -> Any:
        if self._store is None:
            raise StoreLetGo(f"the mnem store at {self.root} was let go; open it again")
        return self._store

    def __repr__(self) -> str:
        return f"<shared mnem store {self.root}>"


@dataclass
class _Held:
    root: Path
    lane: Lane = field(default_factory=Lane)
    store: HeldStore | None = None
    users: int = 0
    opening: threading.Lock = field(default_factory=threading.Lock)
    linger: threading.Timer | None = None


class HeldStores:
    """Every mnem Store the daemon holds, by the directory holding ``.mnem``."""

    def __init__(self) -> None:
        self.on_open: list[Callable[[HeldStore], None]] = []  # run once a store is opened
        self._lock = threading.Lock()
        self._held: dict[Path, _Held] = {}

    def borrow(self, root: Path, open_store: Callable[[], Any]) -> HeldStore:
        """The Store at ROOT, opened with OPEN_STORE by its first borrower; give it back."""
        with self._lock:
            held = self._held.setdefault(root, _Held(root))
            held.users += 1
            if held.linger is not None:
                held.linger.cancel()
                held.linger = None
        try:
            with held.opening:  # one opener at a time; the others wait for its handle
                if held.store is None:
                    held.store = HeldStore(open_store(), held.lane, root)
                    for hook in self.on_open:
                        hook(held.store)
                return held.store
        except BaseException:
            self.give_back(root)
            raise

    @contextlib.contextmanager
    def lease(
        self, root: Path, open_store: Callable[[], Any], *, linger: float = 0.0
    ) -> Iterator[HeldStore]:
        """The Store at ROOT while the ``with`` lasts (opened with OPEN_STORE by its first
        borrower); given back when it ends, and let go LINGER seconds after its last user."""
        store = self.borrow(root, open_store)
        try:
            yield store
        finally:
            del store
            self.give_back(root, linger=linger)

    def give_back(self, root: Path, *, linger: float = 0.0) -> None:
        """One borrower is done; the last one lets the store go, LINGER seconds later."""
        with self._lock:
            held = self._held.get(root)
            if held is None:
                return
            held.users -= 1
            if held.users > 0:
                return
            if linger > 0 and held.store is not None:
                held.linger = threading.Timer(linger, self._linger_over, args=(held,))
                held.linger.daemon = True
                held.linger.start()
                return
            del self._held[root]
        self._let_go(held)

    def is_held(self, root: Path) -> bool:
        with self._lock:
            held = self._held.get(root)
            return held is not None and held.store is not None

    def let_go_of_idle(self) -> None:
        """Let go at once of every store nobody borrows (lingering ones too): a stop."""
        with self._lock:
            idle = [held for held in self._held.values() if held.users <= 0]
            for held in idle:
                if held.linger is not None:
                    held.linger.cancel()
                del self._held[held.root]
        for held in idle:
            self._let_go(held)

    def _linger_over(self, held: _Held) -> None:
        with self._lock:
            if held.users > 0 or self._held.get(held.root) is not held:
                return
            del self._held[held.root]
        self._let_go(held)

    def _let_go(self, held: _Held) -> None:
        """Drop the Store once no call is in flight: mnem lets go of its lock when collected."""
        with held.opening, held.lane.held():
            if held.store is not None:
                held.store._store = None
                held.store = None
        gc.collect()
        log.debug("let go of the mnem store at %s", held.root)
