"""Providers: build one from its config entry; each type lives in a module of its own."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from memsync.base.errors import ProviderUnavailable
from memsync.base.exclude import Exclusion
from memsync.config import Config, ProviderConfig
from memsync.providers.base import Provider
from memsync.providers.mnem.held import HeldStores

# type -> "module:function" building a Provider from (name, config, Config). Imported lazily:
# a type's heavy dependency (mem0ai, mnem) is only needed when that type is configured.
FACTORIES: dict[str, str] = {
    "pmm-dir": "memsync.providers.pmm_dir:build",
    "mem0-oss": "memsync.providers.mem0.oss:build",
    "mem0-server": "memsync.providers.mem0.server:build",
    "mem0-platform": "memsync.providers.mem0.platform:build",
    "mnem": "memsync.providers.mnem.factory:build",
    "hindsight": "memsync.providers.hindsight.provider:build",
    "cognee": "memsync.providers.cognee.provider:build",
}
# The types whose providers borrow their store from the daemon's held stores (``held=``).
BORROW_HELD = frozenset({"mnem"})


def build_provider(name: str, config: Config, *, held: HeldStores | None = None) -> Provider:
    """The provider called NAME, ready to open; ProviderUnavailable if its type can't run here.

    ``held``: the stores the daemon holds open and lends (``providers/mnem/held``); None in
    any other process, whose providers open their own."""
    entry: ProviderConfig = config.provider(name)
    target = FACTORIES[entry.type]
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("memsync.providers."):
            raise ProviderUnavailable(
                f"providers.{name}: type {entry.type!r} is not available in this version of "
                "memsync yet"
            ) from None
        raise
    factory: Callable[..., Provider] = getattr(module, function)
    if held is not None and entry.type in BORROW_HELD:
        provider = factory(name, entry, config, held=held)
    else:
        provider = factory(name, entry, config)
    provider.exclusion = Exclusion.of(entry)
    return provider


__all__ = ["FACTORIES", "Provider", "build_provider"]
