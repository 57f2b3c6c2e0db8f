"""Scope discovery: which users, agents, apps or runs a wildcard provider holds memories for.

Each provider finds its scopes its own way (``Provider.discover``: a Mem0 server's routes or
database, the Platform's entities, a Mem0 library's payloads, a pmm-dir's files, a mnem store's
namespaces). A discovery that could not see everything says so (``complete = False``): scopes
it missed are not new this cycle, and scopes known from earlier cycles are still synced.
"""

from __future__ import annotations

from collections.abc import Mapping

from memsync.base.errors import ProviderError
from memsync.providers.base import Provider
from memsync.providers.discovery import Discovery


def discover_scopes(
    provider: Provider, keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Discovery:
    """The scopes an open provider holds, as values of the wildcard ``keys``; ProviderError
    when it cannot say."""
    found = provider.discover(keys, fixed)
    if found is None:
        raise ProviderError(f"{provider.name}: a {provider.type} provider cannot discover scopes")
    return found


__all__ = ["discover_scopes"]
