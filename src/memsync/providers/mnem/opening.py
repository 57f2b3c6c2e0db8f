"""Opening a mnem store: the SDK, waiting while another process holds the store, saying who.

mnem holds an exclusive lock while a ``Store`` lives, across processes. ``open_store`` retries
with backoff while someone holds the store, then raises ``ProviderBusy`` naming the holder
(when it is the memsync daemon, which serves the store to agents, it says so). mnem opens the
nearest store at or above a path, so ``open_at`` refuses a store found above the one asked
for. Every error is built outside the SDK's ``except``, so none chains to an SDK exception (a
traceback kept alive by a caller would pin the Store, and mnem's lock with it).
"""

from __future__ import annotations

import gc
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
    wait_random,
)

from memsync.base.errors import (
    ProviderBusy,
    ProviderError,
    ProviderUnavailable,
    TransientProviderError,
)
from memsync.base.lock import read_daemon_info
from memsync.base.mnem_lock import held_elsewhere
from memsync.base.paths import resolve_paths
from memsync.providers.mnem.holder import store_holder


def load_sdk() -> ModuleType:
    """The mnem SDK, or ProviderUnavailable saying how to get it."""
    try:
        return importlib.import_module("mnem")
    except ImportError:
        raise ProviderUnavailable(
            "type 'mnem' needs the mnem SDK: pip install 'memsync[mnem]' (mnem-agents 0.0.7; "
            "PyPI has a macOS arm64 wheel, elsewhere it builds from source with a Rust toolchain)"
        ) from None


def sdk_of(store: Any) -> ModuleType:
    """The SDK module a Store came from (the real ``mnem`` or a test double)."""
    module = importlib.import_module(type(store).__module__)
    if hasattr(module, "StoreIoError") and hasattr(module, "Provenance"):
        return module
    return importlib.import_module(type(store).__module__.split(".")[0])


def open_store(sdk: ModuleType, path: Path, *, name: str, busy_timeout: float) -> Any:
    """The Store mnem opens for PATH, waiting up to BUSY_TIMEOUT seconds while another holds
    it; memsync's typed errors (``ProviderBusy`` names the holder), for provider NAME."""

    def busy(exc: BaseException) -> bool:
        return held_elsewhere(exc, sdk.StoreIoError)

    retrying = Retrying(
        stop=stop_after_delay(busy_timeout),
        wait=wait_exponential(multiplier=0.05, max=1.0) + wait_random(0, 0.05),
        retry=retry_if_exception(busy),
        reraise=True,
    )
    error: ProviderError
    try:
        return retrying(sdk.open, str(path))
    except sdk.StoreIoError as exc:
        if busy(exc):
            error = _busy(path, name=name, busy_timeout=busy_timeout)
        else:
            error = TransientProviderError(f"{name}: cannot open {path}: {exc}")
    except sdk.NoStoreError:
        error = ProviderError(
            f"{name}: no mnem store at {path}; set create = true in "
            f"providers.{name} to make it on the first write, create one with "
            f"python -c \"import mnem; mnem.init('{path}')\", or fix "
            f"providers.{name}.path"
        )
    except sdk.MnemError as exc:
        error = ProviderError(f"{name}: cannot open the store at {path}: {exc}")
    raise error


def open_at(sdk: ModuleType, path: Path, *, name: str, busy_timeout: float) -> Any:
    """``open_store``, refusing a store mnem found above PATH (``elsewhere``)."""
    store = open_store(sdk, path, name=name, busy_timeout=busy_timeout)
    root = Path(store.root).expanduser().resolve()
    if root != path.expanduser().resolve():
        del store
        gc.collect()
        raise ProviderError(elsewhere(name, path, root))
    return store


def elsewhere(name: str, path: Path, root: Path) -> str:
    """Why the store mnem opened at ROOT is not the one configured at PATH."""
    return (
        f"{name}: no mnem store at {path} (mnem found the one at {root}, "
        f"above it); point providers.{name}.path at {root}, or create a store at "
        f"{path}"
    )


def _busy(path: Path, *, name: str, busy_timeout: float) -> ProviderBusy:
    holder = store_holder(path)
    who = holder.describe() if holder else "an agent or the mnem CLI"
    if holder is not None and holder.pid == _daemon_pid():
        return ProviderBusy(
            f"{name}: store busy: {path} is held by the memsync daemon "
            f"({who}), which serves it to agents and syncs it itself; this process "
            "can open it once no agent has used it for a few seconds",
            retry_after=max(busy_timeout, 1.0),
        )
    return ProviderBusy(
        f"{name}: store busy: {path} is held by another process ({who}) "
        f"for more than {busy_timeout:g}s; memsync tries again next cycle",
        retry_after=max(busy_timeout, 1.0),
    )


def _daemon_pid() -> int | None:
    """The running memsync daemon's pid (the one that may hold a store for its agents)."""
    pid = read_daemon_info(resolve_paths()).get("pid")
    return pid if isinstance(pid, int) else None
