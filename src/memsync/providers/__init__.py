"""Providers: build one from its config entry; each type lives in a module of its own."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from memsync.base.errors import ProviderUnavailable
from memsync.base.exclude import Exclusion
from memsync.config import Config, ProviderConfig
from memsync.providers.base import Provider

# type -> "module:function" building a Provider from (name, config, Config). Imported lazily:
# a type's heavy dependency (mem0ai, mnem) is only needed when that type is configured.
FACTORIES: dict[str, str] = {
    "pmm-dir": "memsync.providers.pmm_dir:build",
    "mem0-oss": "memsync.providers.mem0.oss:build",
    "mem0-server": "memsync.providers.mem0.server:build",
    "mem0-platform": "memsync.providers.mem0.platform:build",
    "mnem": "memsync.providers.mnem.provider:build",
    "hindsight": "memsync.providers.hindsight.provider:build",
    "cognee": "memsync.providers.cognee.provider:build",
}


def build_provider(name: str, config: Config) -> Provider:
    """The provider called NAME, ready to open; ProviderUnavailable if its type can't run here."""
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
    factory: Callable[[str, Any, Config], Provider] = getattr(module, function)
    provider = factory(name, entry, config)
    provider.exclusion = Exclusion.of(entry)
    return provider


__all__ = ["FACTORIES", "Provider", "build_provider"]
