"""Local stores, watched: which provider and scope a changed file is of, and whose change it was.

A mnem store (a fixed path, or every per-scope store under a template's root, stores made
after the daemon started included), a pmm-dir scope file and a Mem0 library's local vector
store all live in files. ``watchfiles`` reports a change within milliseconds; this module
turns a changed path into a ``Hint`` (provider and scope) and tells memsync's own writes from
another program's by the files themselves (``Signature``): as each cycle lets a store go,
memsync notes its files, and a change counts only while the files differ from that note.

mnem rewrites its store file whenever a handle is dropped, even one that only read (a
``verify``, a backup, an agent that looked and left): its time changes, its bytes do not. So a
mnem store is noted by content (``content_signature``: each file's size and the digest of its
first page, where redb keeps its commit slots, which every commit and every staged change
rewrite), not by times. A store whose content moved anyway is asked for the head commit
memsync left (``Provider.left_token``, ``settled``) before it counts as another program's.

A watcher only hints (Syncthing's way): a hint starts a cycle sooner, and the interval cycle
stays the safety net, so a missed or failed watch costs latency, never data.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.scopes import HostileScope, Scope, fill_template, template_keys, template_root
from memsync.config import Config, Mem0OssConfig, MnemConfig, PmmDirConfig
from memsync.config.scoping import is_template, scoped_config_keys
from memsync.orchestration.scopes.discovery import scope_from_pmm_key
from memsync.providers.mnem.held import HeldStores

log = logging.getLogger("memsync.watch")

# (name relative to the watched place, size, version) of each file, sorted, where the version
# is the mtime and inode, or a digest of the file's first page (content_signature); None when
# nothing is there.
Signature = tuple[tuple[str, int, str], ...] | None

HEADER_BYTES = 4096  # redb's header page: the commit slots every commit rewrites
RECHECK_MS = 2000  # how often a quiet watch looks for roots that vanished or appeared
QUIET_MS = 150  # a burst of changes is reported once it has been quiet this long
BURST_MS = 1000  # ...or after this long at most


@dataclass(frozen=True, order=True)
class Hint:
    """A provider (by its configured name) and the scope a change touched.

    ``scope`` None: the provider's only scope, or, beside wildcard scopes, a store whose files
    do not say which scope changed (a Mem0 library's vector store): every scope.
    """

    provider: str
    scope: Scope | None = None

    @property
    def label(self) -> str:
        return self.provider if self.scope is None else f"{self.provider}[{self.scope.label}]"


def signature_of(
    path: Path, *, keep: Callable[[str], bool] = lambda name: True, by_content: bool = False
) -> Signature:
    """What the files at PATH (a file, or every file under a directory) look like right now:
    by size, time and inode, or (``by_content``) by size and a digest of the first page."""
    try:
        if path.is_file():
            return (("", *_version(str(path), by_content)),)
        if not path.is_dir():
            return None
        found = []
        for root, _dirs, files in os.walk(path):
            for name in files:
                full = os.path.join(root, name)
                if not keep(name):
                    continue
                try:
                    found.append((os.path.relpath(full, path), *_version(full, by_content)))
                except FileNotFoundError:
                    continue
        return tuple(sorted(found))
    except OSError:
        return None


def _version(path: str, by_content: bool) -> tuple[int, str]:
    if not by_content:
        st = os.stat(path)
        return st.st_size, f"{st.st_mtime_ns}:{st.st_ino}"
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        head = file.read(HEADER_BYTES)
    return size, hashlib.blake2b(head, digest_size=16).hexdigest()


def content_signature(store: Path) -> Signature:
    """A mnem store's files by content: unmoved by a handle that only read and let go."""
    return signature_of(store / ".mnem", by_content=True)


class LocalStore(ABC):
    """One configured provider whose data lives in files under ``root``."""

    def __init__(self, provider: str, root: Path) -> None:
        self.provider = provider
        self.root = root

    @abstractmethod
    def hint_for(self, path: Path) -> Hint | None:
        """The hint a change at PATH (under ``root``) gives; None when it is not this store's."""

    @abstractmethod
    def signature(self, scope: Scope | None) -> Signature:
        """The files of one scope's store as they are now."""

    def settled(self, scope: Scope | None, token: str) -> Signature:
        """The store's files, when their content is still what TOKEN (``left_token``) names:
        they moved, but nothing was written. None when it was written, or cannot be told."""
        return None

    def describe(self) -> str:
        return f"{self.provider} ({self.root})"


def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def mnem_settled(store: Path, token: str, held: HeldStores | None = None) -> Signature:
    """The content of the mnem store at STORE, if its head is still TOKEN with nothing staged
    and nothing was written while memsync looked (the content before and after agree).

    Opened without waiting: a store someone holds is in use, and that is for a cycle to see
    (in the daemon, borrowed from its HELD stores, which hold it for the agents it serves).
    """
    from memsync.base.errors import MemsyncError
    from memsync.providers.mnem.provider import MnemProvider

    before = content_signature(store)
    handle = MnemProvider("watch", store, busy_timeout=0.0, held=held)
    try:
        handle.open()
        head = handle.left_token()
    except MemsyncError:
        head = None
    finally:
        handle.close()
    after = content_signature(store)
    return after if head == token and after == before else None


class MnemStore(LocalStore):
    """A mnem store at a fixed path: its ``.mnem`` directory."""

    def __init__(self, provider: str, root: Path, held: HeldStores | None = None) -> None:
        super().__init__(provider, root)
        self.held = held

    def hint_for(self, path: Path) -> Hint | None:
        return Hint(self.provider) if _within(path, self.root / ".mnem") else None

    def signature(self, scope: Scope | None) -> Signature:
        return content_signature(self.root)

    def settled(self, scope: Scope | None, token: str) -> Signature:
        return mnem_settled(self.root, token, self.held)


class MnemTemplate(LocalStore):
    """Every mnem store a path template names (one per scope), watched from the template's root,
    so that a store made after the daemon started is watched as soon as it appears."""

    def __init__(self, provider: str, template: Path, held: HeldStores | None = None) -> None:
        super().__init__(provider, template_root(template))
        self.held = held
        self.template = template
        self.keys = template_keys(str(template))
        self.pattern = _template_pattern(template)

    def hint_for(self, path: Path) -> Hint | None:
        for parent in path.parents:
            if parent.name != ".mnem":
                continue
            match = self.pattern.fullmatch(str(parent.parent))
            if match is None:
                return None
            scope = Scope.of({k: v for k, v in match.groupdict().items() if v is not None})
            try:
                if fill_template(self.template, scope, provider=self.provider) != parent.parent:
                    return None
            except HostileScope:
                return None
            return Hint(self.provider, scope)
        return None

    def signature(self, scope: Scope | None) -> Signature:
        path = self._store_of(scope)
        return None if path is None else content_signature(path)

    def settled(self, scope: Scope | None, token: str) -> Signature:
        path = self._store_of(scope)
        return None if path is None else mnem_settled(path, token, self.held)

    def _store_of(self, scope: Scope | None) -> Path | None:
        if scope is None:
            return None
        try:
            return fill_template(self.template, scope, provider=self.provider)
        except HostileScope:
            return None


def _template_pattern(template: Path) -> re.Pattern[str]:
    """A regex matching the store paths a template names, one path segment per placeholder."""
    pattern = ""
    seen: set[str] = set()
    for literal, field in re.findall(r"([^{]*)(?:\{(\w+)\})?", str(template)):
        pattern += re.escape(literal)
        if field:
            pattern += f"(?P={field})" if field in seen else f"(?P<{field}>[^/]+)"
            seen.add(field)
    return re.compile(pattern)


class PmmDir(LocalStore):
    """A pmm-dir: one PMM JSONL file per scope key, directly in its directory."""

    def __init__(
        self, provider: str, root: Path, *, fixed: str | None, keys: tuple[str, ...]
    ) -> None:
        super().__init__(provider, root)
        self.fixed = fixed
        self.keys = keys  # the wildcard keys beside it; () in a config without them

    def hint_for(self, path: Path) -> Hint | None:
        from memsync.providers.pmm_dir import SUFFIX, scope_file_name, scope_from_file_name

        if path.parent != self.root or not path.name.endswith(SUFFIX):
            return None
        if self.keys:
            scope = scope_from_pmm_key(scope_from_file_name(path.name), self.keys)
            return None if scope is None else Hint(self.provider, scope)
        if self.fixed is not None and path.name != scope_file_name(self.fixed):
            return None
        return Hint(self.provider)

    def signature(self, scope: Scope | None) -> Signature:
        from memsync.providers.pmm_dir import SUFFIX, scope_file_name

        if scope is not None:
            return signature_of(self.root / scope_file_name(scope.pmm_key))
        if self.fixed is not None:
            return signature_of(self.root / scope_file_name(self.fixed))
        return signature_of(self.root, keep=lambda name: name.endswith(SUFFIX))


class Mem0LocalStore(LocalStore):
    """A Mem0 library's local vector store (qdrant ``path``). Its files do not say which scope
    changed, so beside wildcard scopes a change hints every scope of the provider."""

    def hint_for(self, path: Path) -> Hint | None:
        return Hint(self.provider) if path.name != ".lock" else None

    def signature(self, scope: Scope | None) -> Signature:
        return signature_of(self.root, keep=lambda name: name != ".lock")


def local_stores(config: Config, held: HeldStores | None = None) -> list[LocalStore]:
    """Every configured provider whose data lives in local files, as a store to watch (``held``:
    the daemon's held stores, which a look into a mnem store borrows it from)."""
    keys = scoped_config_keys(config.providers)
    stores: list[LocalStore] = []
    for name, entry in config.providers.items():
        if isinstance(entry, MnemConfig):
            if is_template(entry):
                stores.append(MnemTemplate(name, Path(entry.path), held))
            else:
                stores.append(MnemStore(name, Path(entry.path), held))
        elif isinstance(entry, PmmDirConfig):
            stores.append(PmmDir(name, Path(entry.path), fixed=entry.scope_key, keys=keys))
        elif isinstance(entry, Mem0OssConfig):
            path = _mem0_store_path(name, entry)
            if path is not None:
                stores.append(Mem0LocalStore(name, path))
    return stores


def _mem0_store_path(name: str, entry: Mem0OssConfig) -> Path | None:
    """The local qdrant directory of a Mem0 library config; None when its store is not local."""
    from memsync.providers.mem0.oss_config import load_mem0_config

    try:
        config: dict[str, Any] = load_mem0_config(name, entry)
    except MemsyncError:
        return None
    store = config.get("vector_store") or {}
    settings = store.get("config") if isinstance(store, dict) else None
    if not isinstance(store, dict) or store.get("provider", "qdrant") != "qdrant":
        return None
    if not isinstance(settings, dict):
        return None
    path = settings.get("path")
    if not isinstance(path, str) or not path or settings.get("url") or settings.get("host"):
        return None
    return Path(path)


class Watcher:
    """A thread watching every local store's root, handing each burst of changes on as hints.

    It says once when it cannot watch (inotify limits, a root that vanished or is not there
    yet) and carries on with what it can; a root that appears (again) is watched from then on.
    """

    def __init__(
        self,
        stores: Iterable[LocalStore],
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
                if _within(path, store.root):
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


__all__ = [
    "Hint",
    "LocalStore",
    "Mem0LocalStore",
    "MnemStore",
    "MnemTemplate",
    "PmmDir",
    "Signature",
    "Watcher",
    "content_signature",
    "local_stores",
    "mnem_settled",
    "signature_of",
]
