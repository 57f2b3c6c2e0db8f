"""A Mem0 library's local vector store, as the daemon's watcher sees it (``watched.py``).

Only a local qdrant ``path`` lives in files memsync can watch; a store behind a URL or host,
or another vector store, is found changed by the interval cycle instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.scopes import Scope
from memsync.config import Mem0OssConfig
from memsync.providers.mem0.oss_config import load_mem0_config
from memsync.providers.watched import Hint, Signature, WatchedFiles, signature_of


class Mem0LocalStore(WatchedFiles):
    """A Mem0 library's local vector store (qdrant ``path``). Its files do not say which scope
    changed, so beside wildcard scopes a change hints every scope of the provider."""

    every_scope = True  # one Memory serves every scope, held by the run for all of them

    def hint_for(self, path: Path) -> Hint | None:
        return Hint(self.provider) if path.name != ".lock" else None

    def signature(self, scope: Scope | None) -> Signature:
        return signature_of(self.root, keep=lambda name: name != ".lock")


def local_store(name: str, entry: Mem0OssConfig) -> Mem0LocalStore | None:
    """The local qdrant directory of a Mem0 library config; None when its store is not local."""
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
    return Mem0LocalStore(name, Path(path))


__all__ = ["Mem0LocalStore", "local_store"]
