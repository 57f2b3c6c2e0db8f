"""Local stores, watched: a thread turning each burst of changed files into hints.

``watchfiles`` reports a change within milliseconds; each configured provider whose store lives
in files says where they are and which scope a changed path touches (``watched_files`` beside
its ``build``: ``providers/watched.py``). The hints go to the daemon's live side, which checks
them against what memsync left there (``local_stores.py``), so memsync's own writes never start
a cycle.

A watcher only hints (Syncthing's way): a hint starts a cycle sooner, and the interval cycle
stays the safety net, so a missed or failed watch costs latency, never data.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from memsync.config import Config
from memsync.config.scoping import scoped_config_keys
from memsync.providers import watched_files
from memsync.providers.held import HeldStores
from memsync.providers.watched import Hint, WatchedFiles, within

log = logging.getLogger("memsync.watch")

RECHECK_MS = 2000  # how often a quiet watch looks for roots that vanished or appeared
QUIET_MS = 150  # a burst of changes is reported once it has been quiet this long
BURST_MS = 1000  # ...or after this long at most


def watched_stores(config: Config, held: HeldStores | None = None) -> list[WatchedFiles]:
    """Every configured provider whose data lives in local files, as a store to watch (``held``:
    the daemon's held stores, which a look into a mnem store borrows it from)."""
    keys = scoped_config_keys(config.providers)
    stores: list[WatchedFiles] = []
    for name, entry in config.providers.items():
        files = watched_files(name, entry, keys, held=held)
        if files is not None:
            stores.append(files)
    return stores


class Watcher:
    """A thread watching every local store's root, handing each burst of changes on as hints.

    It says once when it cannot watch (inotify limits, a root that vanished or is not there
    yet) and carries on with what it can; a root that appears (again) is watched from then on.
    """

    def __init__(
        self,
        stores: Iterable[WatchedFiles],
        on_hints: Callable[[set[Hint]], None],
        stop: threading.Event,
        *,
        fallback: str,
        on_watch: Callable[[list[Path]], None] | None = None,
        watch: Callable[..., Iterator[set[tuple[Any, str]]]] | None = None,
    ) -> None:
        self.stores = list(stores)
        self.on_hints = on_hints
        self.on_watch = on_watch  # told once each watch is set up: look again at those roots
        self.stop = stop
        self.fallback = fallback  # what covers a store that is not watched, for the log line
        self._watch = watch
        self._restart = threading.Event()
        self._seen: set[Path] = set()  # roots that existed at some point
        self._said: set[Path] = set()  # roots whose vanishing was logged (once each)
        self.failed: str | None = None  # why watching stopped altogether
        self.watching: frozenset[Path] = frozenset()  # roots watched right now
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="store-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._restart.set()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        watch = self._watch
        if watch is None:
            import watchfiles

            watch = watchfiles.watch
        stop_either = _Either(self.stop, self._restart)
        while not self.stop.is_set() and not self._restart.is_set():
            roots = self._roots()
            if not roots:
                self.watching = frozenset()
                self.stop.wait(RECHECK_MS / 1000)
                continue
            self.watching = frozenset(roots)
            fresh = True
            try:
                for changes in watch(
                    *roots,
                    watch_filter=None,
                    debounce=BURST_MS,
                    step=QUIET_MS,
                    stop_event=stop_either,
                    rust_timeout=RECHECK_MS,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=True,
                ):
                    if fresh and self.on_watch is not None:
                        # A change made before the watch took hold (a root that just appeared,
                        # a restart) gives no event: the caller compares those stores again.
                        self.on_watch(roots)
                    fresh = False
                    hints = self._hints(Path(path) for _change, path in changes)
                    if hints:
                        self.on_hints(hints)
                    if self._roots() != roots:
                        break  # a root vanished or appeared: watch the new set
            except Exception as exc:  # inotify limits, a root that vanished mid-setup, ...
                if self.stop.is_set():
                    return
                if any(not root.is_dir() for root in roots):
                    continue  # a root vanished under us: _roots says so, once
                self.failed = str(exc) or type(exc).__name__
                self.watching = frozenset()
                log.warning(
                    "cannot watch the local stores (%s); their changes are found by %s",
                    self.failed,
                    self.fallback,
                )
                return

    def _roots(self) -> list[Path]:
        """The roots that exist now. One that vanished is said once (and again once it is
        back); one not made yet (memsync makes stores on their first write) is watched once
        it appears."""
        roots = []
        for store in self.stores:
            root = store.root
            if root.is_dir():
                if root in self._said:
                    self._said.discard(root)
                    log.info("watching %s again", store.describe())
                self._seen.add(root)
                if root not in roots:
                    roots.append(root)
            elif root in self._seen and root not in self._said:
                self._said.add(root)
                log.warning(
                    "not watching %s: the directory vanished; its changes are found by %s "
                    "until it is back",
                    store.describe(),
                    self.fallback,
                )
        return roots

    def _hints(self, paths: Iterable[Path]) -> set[Hint]:
        hints: set[Hint] = set()
        for path in paths:
            for store in self.stores:
                if within(path, store.root):
                    hint = store.hint_for(path)
                    if hint is not None:
                        hints.add(hint)
        return hints


class _Either:
    """Set when either event is: what watchfiles' ``stop_event`` reads."""

    def __init__(self, *events: threading.Event) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(event.is_set() for event in self.events)


__all__ = ["Watcher", "watched_stores"]
