"""The local files a provider's store lives in, as the daemon's watcher sees them.

A mnem store, a pmm-dir's scope files and a Mem0 library's local vector store all live in
files. Each type says, from its config alone (``watched_files`` beside its ``build``, found by
the registry), where they are (``WatchedFiles.root``), which provider and scope a changed path
touches (``Hint``), and what its files look like now (``Signature``): as each cycle lets a store
go, memsync notes its files, and a change counts only while the files differ from that note.

A watcher only hints (Syncthing's way): a hint starts a cycle sooner, and the interval cycle
stays the safety net, so a missed or failed watch costs latency, never data.
"""

from __future__ import annotations

import functools
import hashlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memsync.base.scopes import Scope

# (name relative to the watched place, size, version) of each file, sorted, where the version
# is the mtime and inode, or a digest of the file's first page (``by_content``); None when
# nothing is there.
Signature = tuple[tuple[str, int, str], ...] | None

HEADER_BYTES = (
    4096  # the first page a signature by content digests (redb keeps its commit slots there)
)


@functools.total_ordering
@dataclass(frozen=True)
class Hint:
    """A provider (by its configured name) and the scope a change touched.

    ``scope`` None: the provider's only scope, or, beside wildcard scopes, a store whose files
    do not say which scope changed (a Mem0 library's vector store, a team's one mnem store):
    every scope. Hints of both kinds meet in one round (an agent's write to a team store is
    served with its scope, and watched without), so they sort: a provider's whole-store hint
    before its scopes'.
    """

    provider: str
    scope: Scope | None = None

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Hint):
            return NotImplemented
        return self._order() < other._order()

    def _order(self) -> tuple[str, bool, tuple[tuple[str, str], ...]]:
        return (self.provider, self.scope is not None, self.scope.items if self.scope else ())

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


def within(path: Path, root: Path) -> bool:
    """Whether PATH lies under ROOT."""
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


class WatchedFiles(ABC):
    """One configured provider whose data lives in files under ``root``."""

    # Every scope's memories live in these same files, which a run holds open for all of its
    # scopes (a Mem0 library's store, one mnem store with a namespace per scope): memsync notes
    # them as a whole, once the run lets go, not scope by scope.
    every_scope: bool = False

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


__all__ = ["HEADER_BYTES", "Hint", "Signature", "WatchedFiles", "signature_of", "within"]
