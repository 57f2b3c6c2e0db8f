"""Reaching each configured provider, as `memsync check` reports it.

Every provider is tried, one after the other, and each says how it answered: a provider that
is down does not hide what the others say. Then a store whose layout grows past its budget at
the measured rate is named, with what would make it grow slower (``growth_warnings``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from memsync.base.errors import MemsyncError, ProviderUnavailable
from memsync.base.paths import Paths
from memsync.config import Config
from memsync.config.scoping import is_template
from memsync.orchestration.disk import disk_growth
from memsync.orchestration.scopes.views import IncompleteDiscovery, check_scoped
from memsync.providers import build_provider
from memsync.staging import StagingStore


@dataclass(frozen=True, slots=True)
class ProviderCheck:
    name: str
    type: str
    active: bool  # the backend at the centre of the star
    answer: Literal["ok", "unavailable", "failed", "incomplete"]
    detail: str  # what it said, or why it did not answer


def growth_warnings(paths: Paths, config: Config) -> list[str]:
    """Each provider whose stores grow past its ``growth_budget`` a day at the rate the
    daemon's cycles measured (``orchestration/disk``); none before a minute of samples."""
    if not paths.database.exists():
        return []
    with StagingStore.open(paths.database, create=False) as store:
        growth = disk_growth(store, config)
    return [warning for found in growth.values() if (warning := found.warning())]


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
