"""Reaching each configured provider, as `memsync check` reports it.

Every provider is tried, one after the other, and each says how it answered: a provider that
is down does not hide what the others say.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from memsync.base.errors import MemsyncError, ProviderUnavailable
from memsync.config import Config
from memsync.config.scoping import is_template
from memsync.orchestration.scopes.views import IncompleteDiscovery, check_scoped
from memsync.providers import build_provider


@dataclass(frozen=True, slots=True)
class ProviderCheck:
    name: str
    type: str
    active: bool  # the backend at the centre of the star
    answer: Literal["ok", "unavailable", "failed", "incomplete"]
    detail: str  # what it said, or why it did not answer


def check_providers(config: Config) -> Iterator[ProviderCheck]:
    """Each provider in config order, yielded as soon as it answered (a slow one shows late)."""
    for name in config.providers:
        yield _check(config, name)


def _check(config: Config, name: str) -> ProviderCheck:
    entry = config.providers[name]

    def answer(
        state: Literal["ok", "unavailable", "failed", "incomplete"], detail: str
    ) -> ProviderCheck:
        return ProviderCheck(name, entry.type, name == config.sync.active, state, detail)

    try:
        provider = build_provider(name, config)
        if is_template(entry):  # a template names no store of its own to open
            detail = check_scoped(config, name, provider) or ""
        else:
            with provider:
                detail = check_scoped(config, name, provider) or provider.check()
    except ProviderUnavailable as exc:
        return answer("unavailable", str(exc))
    except IncompleteDiscovery as exc:
        return answer("incomplete", str(exc))
    except MemsyncError as exc:
        return answer("failed", str(exc))
    return answer("ok", detail)
