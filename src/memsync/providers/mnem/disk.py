"""What a configured mnem provider's stores take on disk, read from the file system alone.

mnem 0.0.7 keeps every commit's whole state, so a store grows with every commit made into it
(about 100 bytes per node in the store, plus the changed nodes), and never shrinks. How much
a layout costs is then what ``status``, the page and ``/metrics`` show, and what ``check``
warns about: the bytes each store's ``.mnem`` directory holds on disk (allocated blocks, as
``du`` counts them, not apparent sizes: a redb file is sparse), summed over the provider's
stores (one store, every store a path template names, or every shard of a sharded root).
Nothing is opened: a store held by an agent or by the daemon is measured all the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from memsync.base.mnem_shards import shards
from memsync.base.scopes import template_keys, template_root
from memsync.config import MnemConfig
from memsync.config.scoping import is_template, scoped_in_store, sharded
from memsync.providers.disk import DiskUse


def store_bytes(store: Path) -> int:
    """Allocated bytes of the store at STORE (the directory holding ``.mnem``); 0 if none."""
    total = 0
    for root, _dirs, files in os.walk(store / ".mnem"):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue  # a file mnem replaced while we looked
    return total


def stores_of(entry: MnemConfig) -> list[Path]:
    """Every store the provider's config names that exists now."""
    path = Path(entry.path).expanduser()
    if sharded(entry):
        return [shard for _, shard in shards(path)]
    if is_template(entry):
        root = template_root(path)
        pattern = str(path.relative_to(root))
        for key in template_keys(str(path)):
            pattern = pattern.replace("{" + key + "}", "*")
        return sorted(found for found in root.glob(pattern) if (found / ".mnem").is_dir())
    return [path] if (path / ".mnem").is_dir() else []


def disk_use(entry: MnemConfig) -> DiskUse:
    """What the provider's stores take on disk now, and what its layout could do about it."""
    found = stores_of(entry)
    return DiskUse(sum(store_bytes(store) for store in found), len(found), advice(entry))


def advice(entry: MnemConfig) -> str:
    """What would make this layout's stores grow slower."""
    if is_template(entry) or sharded(entry):
        return (
            "each commit already costs one scope's memories alone; what is left is fewer "
            "commits (agents writing several memories at once: remember_many)"
        )
    many = "every user's" if scoped_in_store(entry) else "all its"
    return (
        f"on mnem 0.0.7 a commit into one store costs about {BYTES_PER_NODE} bytes per memory "
        f"it holds ({many} memories); a store per namespace (layout stores = "
        '"per-namespace") or per user (a path template) makes it cost one user\'s: see '
        'docs/configuration.md "What a layout costs on disk"'
    )


# What one commit costs on mnem 0.0.7 (redb 2.6.3), measured on the real SDK
# (docs/configuration.md "What a layout costs on disk"): about this much per node in the
# store, plus this much per changed node; and a store's floor.
BYTES_PER_NODE = 115
BYTES_PER_CHANGE = 700
STORE_FLOOR = 1_609_728


def commit_cost(nodes: int) -> int:
    """Bytes one commit changing one node adds to a store of NODES nodes (the model above)."""
    return BYTES_PER_CHANGE + BYTES_PER_NODE * nodes


__all__ = ["DiskUse", "commit_cost", "disk_use", "store_bytes", "stores_of"]
