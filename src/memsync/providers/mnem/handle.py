"""One open mnem Store per provider, held so that mnem's exclusive lock goes back on close.

mnem holds an exclusive lock while a ``Store`` lives, across processes: ``open`` retries with
backoff while an agent holds the store, then raises ``ProviderBusy`` (``opening``); ``close``
drops every reference so the agent can have it back. For the same reason no method keeps the
Store in a local variable and no error memsync raises chains to an SDK exception: a traceback
kept alive by a caller would otherwise pin the Store, and with it the lock, after close().

Staged changes found at open belong to someone else (an agent that crashed between ``add``
and ``commit``, or staged and has not committed yet). mnem's staging is shared on disk and
any commit sweeps it in, so memsync neither commits nor discards them: it keeps reading
committed history, and refuses to write (``StagedChangesPresent``) until they are committed
or unstaged by whoever owns them. memsync unstages its own half-staged batch when a write
fails; a batch it was killed in the middle of is noted (``in_flight``), and unstaged at the
next open when nobody else staged anything since.

In the daemon the Store is borrowed from the held stores the daemon passes its providers
(``held``) instead: the daemon may hold it for the agents it serves, and everyone in the
process uses that one handle. Then others may commit between memsync's calls, so a sequence
that stages and commits holds the store (``writing``), and what agents committed since memsync
last read the store is never overwritten blind (``meanwhile``).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, Self, TypeVar

from memsync.base.errors import ProviderError, TransientProviderError
from memsync.providers.base import CommitBook, Provider
from memsync.providers.held import HeldStore, HeldStores
from memsync.providers.mnem.commits import KnownCommits, notes_of
from memsync.providers.mnem.in_flight import InFlight, store_identity, unstage_left_behind
from memsync.providers.mnem.layouts import MEM0, Layout
from memsync.providers.mnem.meanwhile import Meanwhile
from memsync.providers.mnem.opening import elsewhere, load_sdk, open_at, open_store, sdk_of

log = logging.getLogger("memsync.mnem")

AUTHOR = "memsync"  # the author of every commit memsync makes
T = TypeVar("T")


class StagedChangesPresent(ProviderError):
    """Another writer left changes staged; any commit would sweep them in, so none is made."""


def detached(error: ProviderError) -> ProviderError:
    """The error without traceback or chain, so keeping it pins no frame (nor the Store)."""
    error.__context__ = None
    error.__cause__ = None
    return error.with_traceback(None)


class StoreHandle(Provider):
    """A mnem provider's store at ``path`` (the directory holding ``.mnem``): opening it,
    closing it, and every SDK call on it with the SDK's errors as memsync's typed errors."""

    layout: Layout = MEM0  # where memories sit in the store, and their shape (``layouts``)

    def __init__(
        self,
        name: str,
        path: Path | str,
        *,
        branch: str | None = None,
        scope_key: str | None = None,
        busy_timeout: float = 10.0,
        sdk: ModuleType | None = None,
        held: HeldStores | None = None,
    ) -> None:
        """``held``: the daemon's held stores, to borrow the Store from (None: open our own)."""
        super().__init__(name)
        self.path = Path(path)
        self._resolved: Path | None = None
        self.branch = branch
        self._scope_key = scope_key
        self.busy_timeout = busy_timeout
        self.sdk = sdk if sdk is not None else load_sdk()
        self.held = held
        self._store: Any = None
        self._owns_store = True
        self._foreign_staging: list[str] = []
        self._in_flight: InFlight | None = None
        self._borrowed_at: Path | None = None  # the key of the Store borrowed from ``held``
        self.meanwhile = Meanwhile()  # what others committed since memsync last read the store
        self.commit_book: CommitBook | None = None  # the staging store's (``keep_commits_in``)
        self._own_commits = KnownCommits()  # commits noted on a Store opened for memsync alone

    @classmethod
    def attached(
        cls,
        store: Any,
        *,
        name: str = "mnem",
        sdk: ModuleType | None = None,
        scope_key: str | None = None,
    ) -> Self:
        """A provider over a Store the caller opened and keeps (close() leaves it open)."""
        provider = cls(
            name,
            Path(store.root),
            scope_key=scope_key,
            sdk=sdk if sdk is not None else sdk_of(store),
        )
        provider._store = store
        provider._owns_store = False
        provider._note_foreign_staging()
        return provider

    # identity ---------------------------------------------------------------------------

    def identity(self) -> str:
        return store_identity(self._where(), self.branch)

    def scope_key(self) -> str:
        return self._scope_key or self._where().name

    def _where(self) -> Path:
        """The store's directory, resolved once: every record read or written names its scope,
        and resolving a path asks the file system for each of its parts."""
        if self._resolved is None:
            self._resolved = self.path.expanduser().resolve()
        return self._resolved

    def commits_key(self) -> str:
        """The store's name in the commit book: its path and branch (one for all its scopes)."""
        return store_identity(self._where(), self.branch)

    # commits memsync knows (see ``commits``) ---------------------------------------------

    @property
    def commits(self) -> KnownCommits:
        """The commits noted for this store: a held store's are shared by everyone in the
        daemon (the agents' commits it served among them)."""
        return notes_of(self._store) or self._own_commits

    def keep_commits_in(self, book: CommitBook) -> None:
        self.commit_book = book

    def save_commits(self) -> None:
        """Keep the commits noted since the last save in the commit book (when there is one).
        The book is a cache: when it cannot be written, the commits are read again later."""
        if self.commit_book is None:
            return
        entries = self.commits.take_unsaved()
        if not entries:
            return
        rows = [(e.commit, e.time_ms, e.encoded()) for e in entries]
        try:
            self.commit_book.keep(self.commits_key(), rows, time.time())
        except Exception as exc:  # a cache: never the reason a cycle fails
            log.warning("%s: could not keep %d commit(s) read: %s", self.name, len(rows), exc)

    # lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        if self._store is not None:
            return
        if self.held is not None:
            self._borrow_held(self.held)
            return
        store = open_store(self.sdk, self.path, name=self.name, busy_timeout=self.busy_timeout)
        problem = self._problem_with(store)
        if problem is not None:
            del store
            gc.collect()
            raise ProviderError(problem)
        self._store = store
        del store
        self._owns_store = True
        self._note_foreign_staging()

    def _borrow_held(self, held: HeldStores) -> None:
        """The Store from the daemon's held stores (opened here when nobody holds it yet)."""
        key = self._where()
        self._store = held.borrow(key, self._open_checked)
        self._borrowed_at = key
        self._owns_store = True
        try:
            problem = self._problem_with(self._store)
            if problem is not None:
                raise ProviderError(problem)
            self._note_foreign_staging()
        except ProviderError as exc:
            self.close()
            raise detached(exc) from None

    def _open_checked(self) -> Any:
        return open_at(self.sdk, self.path, name=self.name, busy_timeout=self.busy_timeout)

    def close(self) -> None:
        """Drop every reference to the Store: mnem releases its lock only when it is collected."""
        self.save_commits()
        if self._borrowed_at is not None and self.held is not None:
            key, self._borrowed_at, self._store = self._borrowed_at, None, None
            self.held.give_back(key)
            return
        owned = self._owns_store and self._store is not None
        self._store = None
        if owned:
            gc.collect()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store from the first staged change to its commit: mnem's staging is shared,
        so nobody else's commit may sweep memsync's changes in, nor memsync's theirs."""
        store = self._store
        if not isinstance(store, HeldStore):
            yield
            return
        lane = store.lane
        del store
        with lane.held():
            yield

    @property
    def borrowed(self) -> bool:
        """Whether the Store is the daemon's held one (others may commit between calls)."""
        return isinstance(self._store, HeldStore)

    def agents_waiting(self) -> bool:
        """Whether an agent the daemon serves waits for this store (only a held one)."""
        return isinstance(self._store, HeldStore) and self._store.lane.agents_waiting()

    def yield_to_agents(self) -> None:
        """Let the waiting agents in (inside ``writing``, with nothing staged), then go on."""
        if isinstance(self._store, HeldStore):
            self._store.lane.yield_to_agents()

    def _problem_with(self, store: Any) -> str | None:
        """Why this store is not the one configured, or None when it is."""
        root = Path(store.root).expanduser().resolve()
        if root != self.path.expanduser().resolve():
            return elsewhere(self.name, self.path, root)
        head = store.head()
        if self.branch is not None and head != f"ref: {self.branch}":
            return (
                f"{self.name}: the store at {self.path} is on {head!r}, but "
                f"providers.{self.name}.branch is {self.branch!r}; memsync does not move HEAD "
                "under the agent: check that branch out in mnem, or remove `branch`"
            )
        return None

    @property
    def in_flight(self) -> InFlight:
        """The note of the batch memsync is staging into this store (see ``in_flight``)."""
        if self._in_flight is None:
            self._in_flight = InFlight(self.identity())
        return self._in_flight

    def _note_foreign_staging(self) -> None:
        pending = self.sdk_call(
            "read staging",
            lambda: unstage_left_behind(
                self.store, self.in_flight, label=f"{self.name} ({self.path})", unstage=self.unstage
            ),
        )
        self._foreign_staging = sorted(pending)
        if pending:
            log.warning(
                "%s: %d uncommitted change(s) staged in %s by another writer (%s); memsync reads "
                "committed history and will not write until they are committed or unstaged",
                self.name,
                len(pending),
                self.path,
                ", ".join(self._foreign_staging[:5]),
            )

    @property
    def store(self) -> Any:
        """The open SDK Store (for tests and the migration); ProviderError when not open."""
        if self._store is None:
            raise ProviderError(f"{self.name}: the mnem store is not open (call open() first)")
        return self._store

    def sdk_call(self, doing: str, call: Callable[[], T], *, bad_input: bool = False) -> T:
        """One SDK call, its errors as memsync's typed errors (raised with no chain to them)."""
        error: ProviderError
        try:
            return call()
        except self.sdk.StoreIoError as exc:
            error = TransientProviderError(f"{self.name}: cannot {doing}: {exc}")
        except self.sdk.MnemError as exc:
            error = ProviderError(f"{self.name}: cannot {doing}: {exc}")
        except (ValueError, TypeError, OverflowError) as exc:
            if not bad_input:
                raise
            error = ProviderError(f"{self.name}: cannot {doing}: {exc}")
        raise error

    def left_token(self) -> str | None:
        """The head commit, unless someone's changes are staged (then the head says too little)."""
        if self._store is None or self._foreign_staging:
            return None
        try:
            head: str | None = self.sdk_call(
                "read the head commit", lambda: self.store.head_commit()
            )
        except ProviderError:
            return None
        return head

    def unstage(self, node_ids: list[str]) -> bool:
        """Leave staging as memsync found it (clean) after a failed batch; False if some
        change could not be unstaged (logged; the batch's note then stays for the next open)."""
        clean = True
        for node_id in node_ids:
            try:
                self.sdk_call(f"unstage {node_id!r}", partial(self._unstage_one, node_id))
            except ProviderError as exc:
                log.error("%s after a failed batch", exc)
                clean = False
        return clean

    def note_batch(self, node_ids: list[str]) -> None:
        """Say durably which nodes memsync is about to stage, before it stages any."""
        try:
            self.in_flight.note(node_ids)
        except OSError as exc:
            raise ProviderError(
                f"{self.name}: cannot note the batch about to be written in "
                f"{self.in_flight.path} ({exc.strerror or exc}); nothing was written"
            ) from None

    def _unstage_one(self, node_id: str) -> bool:
        return bool(self.store.unstage(node_id))
