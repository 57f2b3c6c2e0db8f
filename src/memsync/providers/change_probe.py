"""A remote store's change probe: one cheap request that says which scopes changed.

Listing a remote store in full every few seconds would cost a request per scope and page; a
probe asks once (a Mem0 server's ``GET /entities`` or its own table, the Platform's list
filtered on ``updated_at``, a Hindsight bank's newest document) and the daemon lists only the
scopes it flags. A probe only hints (Syncthing's way): the full pass keeps its own schedule,
so whatever a probe cannot see is still found there. Each type that has one offers it from its
config alone (``change_probe`` beside its ``build``, found by the registry), so that the daemon
builds a provider only to probe it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memsync.base.errors import MemsyncError
from memsync.base.records import Record
from memsync.providers.base import Provider

WHOLE = ""  # the scope label of a provider that holds one scope


class ProbeUnsure(MemsyncError):
    """The probe answered, but its answer cannot say which scopes changed."""


@dataclass
class Flags:
    """What one probe found: the scopes (labels; ``WHOLE`` for a provider of one scope) that
    changed, or why every scope must be listed, and the tokens to keep once they are listed.
    ``changed``: the memories each flagged scope changed, by id, where the probe can tell (the
    daemon compares them with the events a store pushes)."""

    scopes: set[str] = field(default_factory=set)
    everything: str | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    changed: dict[str, set[str]] = field(default_factory=dict)


class StagedMirror(Protocol):
    """What memsync holds of a provider, read from staging for a probe that compares counts."""

    def labels(self, provider: str) -> list[str]:
        """The scopes (labels) of PROVIDER memsync syncs."""
        ...

    def count(self, provider: str, labels: Sequence[str] | None, created_by: str) -> int:
        """PROVIDER's records in these scopes (None: every scope) created at or before
        CREATED_BY (an ISO instant)."""
        ...


class ChangeProbe(ABC):
    """The probe of one configured provider; ``provider`` is built once and kept open."""

    def __init__(self, name: str, provider: Provider) -> None:
        self.name = name
        self.provider = provider
        # What memsync holds, for a probe that compares counts (the daemon sets it).
        self.staged: StagedMirror | None = None

    @abstractmethod
    def ask(self, known: Mapping[str, str]) -> Flags:
        """One probe against ``known`` (scope label → the token memsync last listed it with;
        ``""`` for a scope memsync syncs but holds no token for). Raises MemsyncError when it
        failed, ProbeUnsure when its answer cannot be trusted."""

    def deletions(self) -> set[str]:
        """Scopes (labels) that lost memories since memsync listed them, to list in full (an
        incremental listing cannot see a delete): asked by the daemon after each probe, for a
        probe that has its own way to tell (a count against ``staged``). None found: empty."""
        return set()

    def unseen(self, label: str) -> str | None:
        """The token of a scope the probe's answer did not name (None: it has none)."""
        return None

    def credible(self, label: str, token: str, listed: int) -> str | None:
        """Why TOKEN cannot be right for a scope whose complete listing (just after the probe)
        found LISTED memories; None when nothing says it is wrong."""
        return None

    def expected(self, label: str, records: Iterable[Record]) -> str | None:
        """The token the probe answers for a scope holding exactly RECORDS (memsync's mirror
        of it, its own writes included); None when the probe's token cannot be told from
        them. The daemon uses it so that memsync's own writes do not list the scope again."""
        return None

    def close(self) -> None:
        self.provider.close()


# A configured provider's probe, given the provider built for it.
ProbeMaker = Callable[[Provider], ChangeProbe]


__all__ = ["WHOLE", "ChangeProbe", "Flags", "ProbeMaker", "ProbeUnsure", "StagedMirror"]
