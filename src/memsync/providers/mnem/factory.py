"""The mnem provider a config entry names: a store that must exist, or one made on its first
write (``create = true``), with the entry's layout, and the scope its memories are filed under.

In the daemon the provider borrows its Store from the daemon's held stores (``held``); any
other process passes none, and the provider opens the store itself.
"""

from __future__ import annotations

from memsync.base.errors import ProviderUnavailable
from memsync.base.scopes import SCOPE_KEYS, WILDCARD
from memsync.config import Config, MnemConfig
from memsync.providers.mnem.held import HeldStores
from memsync.providers.mnem.layouts import layout_from_config
from memsync.providers.mnem.on_demand import OnDemandMnemProvider
from memsync.providers.mnem.opening import load_sdk
from memsync.providers.mnem.provider import MnemProvider


def build(
    name: str, entry: MnemConfig, config: Config, *, held: HeldStores | None = None
) -> MnemProvider:
    """The provider of ``providers.NAME``; ProviderUnavailable without the mnem SDK."""
    try:
        sdk = load_sdk()
    except ProviderUnavailable as exc:
        raise ProviderUnavailable(f"providers.{name}: {exc}") from None
    provider: MnemProvider
    scope_key = entry.scope_key or config_scope_key(config)
    if entry.create:
        provider = OnDemandMnemProvider(
            name,
            entry.path,
            create=True,
            config_name=name,
            branch=entry.branch,
            scope_key=scope_key,
            busy_timeout=entry.busy_timeout,
            sdk=sdk,
            held=held,
        )
    else:
        provider = MnemProvider(
            name,
            entry.path,
            branch=entry.branch,
            scope_key=scope_key,
            busy_timeout=entry.busy_timeout,
            sdk=sdk,
            held=held,
        )
    provider.layout = layout_from_config(entry.layout)
    return provider


def config_scope_key(config: Config) -> str | None:
    """The scope a store of a single-scope config holds: the one its Mem0 providers name (a
    user id, else agent, app or run id), so that its memories carry that scope's key (a PMM
    backup files them under it), not the store directory's name. None when there is none."""
    found = set()
    for entry in config.providers.values():
        scope = getattr(entry, "scope", None)
        if not entry.type.startswith("mem0") or not scope:
            continue
        if WILDCARD in scope.values():
            return None
        found.add(next((scope[k] for k in SCOPE_KEYS if scope.get(k)), ""))
    found.discard("")
    return found.pop() if len(found) == 1 else None
