"""A namespace-sharded root: a mnem store per LangGraph namespace, under one directory.

Why: mnem 0.0.7 writes a commit's whole state, about 100 bytes per node in the store, so a
commit into one team store of 20,000 memories costs 2 MB, and live sync (a commit per change)
grows it by hundreds of gigabytes a day. A store per namespace makes a commit cost what one
user's memories cost (about 5 KB at 20 items), and memsync's clients serve the root as one
LangGraph store (``memsync.langgraph``, ``memsync mcp``).

On disk: ``ROOT/.memsync-shards`` (the marker by which clients know to route), and one store
per namespace, ``ROOT/<shard name>/.mnem``. A shard's node ids are mnem-langgraph's in full
(``memories:alice:<key>``), so each shard is itself a valid mnem-langgraph store. The shard
name is the namespace as node ids spell it (``memories:alice``), percent-encoded so that any
namespace is one directory name (``memories%3Aalice``); a name never starts with ``.``, so
the marker and temporary files are never taken for a shard. ROOT itself holds no ``.mnem``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote

from memsync.base.files import write_private_text
from memsync.base.mnem_items import namespace_id_of

MARKER = ".memsync-shards"
FORMAT = 1
EMPTY_NAMESPACE = "%"  # the shard of node ids without a namespace (mnem-mcp's "tea"); quote
# never makes a lone "%"
MAX_NAME = 255  # bytes in one directory name on the file systems memsync runs on


class ShardNameError(ValueError):
    """A namespace too long to be one directory name."""


def shard_name(namespace_id: str) -> str:
    """The directory of the namespace NAMESPACE_ID (``"memories:alice"``) under the root."""
    if not namespace_id:
        return EMPTY_NAMESPACE
    name = quote(namespace_id, safe="")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name.encode()) > MAX_NAME:
        raise ShardNameError(
            f"namespace {namespace_id[:60]!r}... is too long for a store of its own "
            f"({len(name.encode())} bytes encoded; at most {MAX_NAME})"
        )
    return name


def namespace_of_shard(name: str) -> str | None:
    """The namespace id a shard directory holds; None for a name no shard has."""
    if name == EMPTY_NAMESPACE:
        return ""
    if not name or name.startswith("."):
        return None
    namespace = unquote(name)
    try:
        return namespace if shard_name(namespace) == name else None
    except ShardNameError:
        return None


def shard_of_node(root: Path, node_id: str) -> Path:
    """The shard a node id belongs in: its namespace's (ShardNameError when it cannot be)."""
    return root / shard_name(namespace_id_of(node_id))


def is_sharded_root(path: Path) -> bool:
    """Whether PATH is a namespace-sharded root (it holds the marker)."""
    return (path / MARKER).is_file()


def mark_root(root: Path) -> None:
    """Make ROOT a sharded root: the directory and its marker (kept if already there).

    ValueError when ROOT is a mnem store itself: its shards would be nested stores, which
    ``mnem.open``'s "nearest store at or above" would confuse."""
    if (root / ".mnem").exists():
        raise ValueError(f"{root} is a mnem store itself; a sharded root must not be one")
    if is_sharded_root(root):
        return
    root.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"memsync": "namespace shards", "format": FORMAT, "shard": "<root>/<name>"})
    write_private_text(root / MARKER, text + "\n")


def shards(root: Path) -> Iterator[tuple[str, Path]]:
    """Each shard under ROOT as (namespace id, its directory), in node-id order of their
    items (namespace + ":" sorts as the node ids it prefixes): one ``readdir``, and a look
    for each one's ``.mnem`` (a directory a failed create left is no shard)."""
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return
    found = []
    for entry in entries:
        namespace = namespace_of_shard(entry.name)
        if namespace is not None and (Path(entry.path) / ".mnem").is_dir():
            found.append((namespace, Path(entry.path)))
    found.sort(key=lambda shard: shard[0] + ":")
    yield from found


__all__ = [
    "MARKER",
    "ShardNameError",
    "is_sharded_root",
    "mark_root",
    "namespace_of_shard",
    "shard_name",
    "shard_of_node",
    "shards",
]
