"""Providers: build one from its config entry; each type lives in a module of its own.

The module a type's ``build`` lives in may also say, from the config entry alone, what the
daemon can do for it before anything is built: ``watched_files(name, entry, keys)``, the local
files its store lives in (``watched.py``), ``change_probe(name, entry)``, how one cheap
request says which scopes changed (``change_probe.py``), ``pushed_changes(name, entry)``,
the changes its store pushes to a URL (``pushed.py``), ``disk_use(name, entry)``, what its
store files take on disk (``disk.py``), and ``disk_advice(name, entry)``, what would make them
grow slower. This registry is the one place that
looks a type up; everything above it asks through these functions or the ``Provider``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from memsync.base.dream import MERGED, Dream
from memsync.base.errors import ProviderUnavailable
from memsync.base.exclude import Exclusion
from memsync.config import Config, ProviderConfig
from memsync.providers.base import Provider
from memsync.providers.change_probe import ProbeMaker
from memsync.providers.disk import DiskUse
from memsync.providers.held import HeldStores
from memsync.providers.pushed import PushMaker
from memsync.providers.watched import WatchedFiles

# type -> "module:function" building a Provider from (name, config, Config). Imported lazily:
# a type's heavy dependency (mem0ai, mnem) is only needed when that type is configured.
FACTORIES: dict[str, str] = {
    "pmm-dir": "memsync.providers.pmm_dir:build",
    "mem0-oss": "memsync.providers.mem0.oss:build",
    "mem0-server": "memsync.providers.mem0.server:build",
    "mem0-platform": "memsync.providers.mem0.platform:build",
    "mnem": "memsync.providers.mnem.configured:build",
    "hindsight": "memsync.providers.hindsight.provider:build",
    "cognee": "memsync.providers.cognee.provider:build",
}
# What a store of each type stops serving while memsync keeps it, as status counts it apart:
# a memory whose date passed (Mem0 hides it from default reads; mnem and Hindsight hold
# memsync's tombstone; Cognee keeps serving it, a PMM backup keeps everything), and what Dream
# retired (mnem holds memsync's tombstone of a superseded or merged memory; the Platform hides
# a merged one from default reads).
_HIDES_EXPIRED = frozenset({"mem0-oss", "mem0-server", "mem0-platform", "mnem", "hindsight"})


def not_served(provider_type: str, *, expired: bool, dream: Dream) -> str | None:
    """Why a store of PROVIDER_TYPE does not serve a memory memsync keeps: "expired",
    "retired", or None when it serves it."""
    if expired and provider_type in _HIDES_EXPIRED:
        return "expired"
    if provider_type == "mnem" and dream.retired:
        return "retired"
    if provider_type == "mem0-platform" and dream.lifecycle_state == MERGED:
        return "retired"
    return None


# The types whose providers borrow their store from the daemon's held stores (``held=``).
BORROW_HELD = frozenset({"mnem"})


def _module_of(name: str, provider_type: str) -> tuple[ModuleType, str]:
    """The module holding a type's ``build``, and the function's name in it."""
    module_name, _, function = FACTORIES[provider_type].partition(":")
    try:
        return importlib.import_module(module_name), function
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("memsync.providers."):
            raise ProviderUnavailable(
                f"providers.{name}: type {provider_type!r} is not available in this version of "
                "memsync yet"
            ) from None
        raise


def build_provider(name: str, config: Config, *, held: HeldStores | None = None) -> Provider:
    """The provider called NAME, ready to open; ProviderUnavailable if its type can't run here.

    ``held``: the stores the daemon holds open and lends (``providers/held``); None in
    any other process, whose providers open their own."""
    entry: ProviderConfig = config.provider(name)
    module, function = _module_of(name, entry.type)
    factory: Callable[..., Provider] = getattr(module, function)
    if held is not None and entry.type in BORROW_HELD:
        provider = factory(name, entry, config, held=held)
    else:
        provider = factory(name, entry, config)
    provider.exclusion = Exclusion.of(entry)
    return provider


def _hook(name: str, entry: ProviderConfig, hook: str) -> Callable[..., Any] | None:
    """A type's optional function HOOK beside its ``build``; None when it has none, or when
    the type cannot run here (building it says why)."""
    try:
        module, _ = _module_of(name, entry.type)
    except ProviderUnavailable:
        return None
    found: Callable[..., Any] | None = getattr(module, hook, None)
    return found


def watched_files(
    name: str, entry: ProviderConfig, keys: tuple[str, ...], *, held: HeldStores | None = None
) -> WatchedFiles | None:
    """The local files provider NAME's store lives in, for the daemon to watch (KEYS: the
    config's wildcard keys; ``held``: the daemon's held stores, for the types that borrow
    theirs there); None when it has none."""
    hook = _hook(name, entry, "watched_files")
    if hook is None:
        return None
    found: WatchedFiles | None
    if held is not None and entry.type in BORROW_HELD:
        found = hook(name, entry, keys, held=held)
    else:
        found = hook(name, entry, keys)
    return found


def change_probe(name: str, entry: ProviderConfig) -> ProbeMaker | None:
    """How to make provider NAME's change probe once it is built; None when it has none."""
    hook = _hook(name, entry, "change_probe")
    maker: ProbeMaker | None = None if hook is None else hook(name, entry)
    return maker


def pushed_changes(name: str, entry: ProviderConfig) -> PushMaker | None:
    """How to read and subscribe to the changes provider NAME's store pushes (the Platform's
    webhooks) once it is built; None when it pushes none."""
    hook = _hook(name, entry, "pushed_changes")
    maker: PushMaker | None = None if hook is None else hook(name, entry)
    return maker


def disk_use(name: str, entry: ProviderConfig) -> DiskUse | None:
    """What provider NAME's local store files take on disk now (``disk_use`` beside its
    build); None for a type that keeps no store files of its own to measure."""
    hook = _hook(name, entry, "disk_use")
    found: DiskUse | None = None if hook is None else hook(name, entry)
    return found


def disk_advice(name: str, entry: ProviderConfig) -> str:
    """What would make provider NAME's store files grow slower, from its config alone (a look
    over budget says it without walking thousands of stores); "" when its type says nothing."""
    hook = _hook(name, entry, "disk_advice")
    return "" if hook is None else str(hook(name, entry))


def check_for_daemon(config: Config) -> None:
    """Each type's refusal (a ConfigError) of what would stop a long-running daemon, asked at
    its start and before a reload: ``check_for_daemon(name, entry, config)`` beside its build."""
    for name, entry in config.providers.items():
        hook = _hook(name, entry, "check_for_daemon")
        if hook is not None:
            hook(name, entry, config)


__all__ = [
    "FACTORIES",
    "Provider",
    "build_provider",
    "change_probe",
    "check_for_daemon",
    "disk_advice",
    "disk_use",
    "not_served",
    "pushed_changes",
    "watched_files",
]
