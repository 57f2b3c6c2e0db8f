"""Deletes on the Platform found without relisting the organisation: counts, then bisection.

A list of what is there cannot show what is gone, and the Platform's entities no longer
document a count of memories (``total_memories`` left upstream's OpenAPI, mem0 5f77d86ca). What
its v3 list does document is ``count`` and the filters to narrow it (``v2-memory-filters.mdx``
at mem0 8d5b786): ``created_at`` with ``lte``, and ``in`` over a scope key. So, once a
``delete_check`` period, with no cycle running:

1. one request: the Platform's count of memories created at or before T, across every scope
   (page size 1, the listing's own flags: expired and merged memories included), against
   staging's count of the same (T: the start of the probe's last window, so both sides hold
   every memory created before it);
2. a difference is bisected over the scopes staging knows, ``{"user_id": {"in": half}}`` (or,
   for scopes of two keys, an ``OR`` of each scope's keys), one count a level: about
   ``log2(scopes) + 2`` requests to find one scope that moved;
3. each scope that moved is listed in full (the daemon's hinted cycle), which removes what
   its store no longer holds.

A scope may differ for good (a memory memsync skips, an exclude, ``latest_only``): after its
full listing the same difference twice in a row is taken as that scope's own, and compared
against from then on. Blind spot: a delete and an add backdated before T (one the probe's
window cannot see) in the same scope within one period cancel out; the full pass finds them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memsync.base.errors import MemsyncError
from memsync.base.scopes import Scope
from memsync.providers.change_probe import StagedMirror
from memsync.providers.mem0.platform_listing import utc_iso

if TYPE_CHECKING:
    from memsync.providers.mem0.platform import Mem0PlatformProvider

log = logging.getLogger("memsync.probe")


class DeleteCheck:
    """The count check of one Platform provider (module docstring)."""

    def __init__(
        self,
        name: str,
        provider: Mem0PlatformProvider,
        keys: tuple[str, ...],
        *,
        period: float,
        now: Callable[[], datetime],
    ) -> None:
        self.name = name
        self.platform = provider
        self.keys = keys
        self.period = period
        self.now = now
        self.requests = 0  # count requests made (tests and benchmarks read it)
        self._last: datetime | None = None
        self._own: dict[str, int] = {}  # scope -> its lasting difference, Platform less staging
        self._unplaced = 0  # a lasting difference no scope staging knows accounts for
        self._listed: dict[str, int] = {}  # scopes listed in full at the last check: their diff
        self._trouble: str | None = None

    def due(self) -> bool:
        now = self.now()
        return self._last is None or (now - self._last).total_seconds() >= self.period

    def run(self, staged: StagedMirror, *, created_by: datetime) -> set[str]:
        """The scopes (labels) that lost memories created by CREATED_BY: list them in full."""
        self._last = self.now()
        instant = utc_iso(created_by)
        try:
            moved = self._moved(staged, instant)
        except MemsyncError as exc:  # a count refused: the full pass finds deletes, said once
            if self._trouble is None:
                log.warning(
                    "delete check of %s failed (%s); deletes on the Platform are found by the "
                    "full pass until it answers again",
                    self.name,
                    exc,
                )
            self._trouble = str(exc)
            return set()
        if self._trouble is not None:
            log.info("delete check of %s answers again", self.name)
            self._trouble = None
        lost: set[str] = set()
        listed: dict[str, int] = {}
        for label, difference in moved.items():
            if self._listed.get(label) == difference:
                self._own[label] = difference  # the same after its full listing: its own
                continue
            lost.add(label)
            listed[label] = difference
        self._listed = listed
        return lost

    def _moved(self, staged: StagedMirror, instant: str) -> dict[str, int]:
        """Scopes whose difference moved, with their difference now (Platform less staging)."""
        labels = sorted(staged.labels(self.name))
        remote = self._count(None, instant)
        held = staged.count(self.name, None, instant)
        expected = held + sum(self._own.values()) + self._unplaced
        if remote == expected:
            return {}
        moved = self._bisect(staged, labels, instant, None)
        if not moved:  # memories in scopes staging does not know: compared against from now
            self._unplaced = remote - held - sum(self._own.values())
        return moved

    def _bisect(
        self, staged: StagedMirror, labels: list[str], instant: str, remote: int | None
    ) -> dict[str, int]:
        if not labels:
            return {}
        if remote is None:
            remote = self._count(labels, instant)
        held = staged.count(self.name, labels, instant)
        if remote == held + sum(self._own.get(label, 0) for label in labels):
            return {}
        if len(labels) == 1:
            return {labels[0]: remote - held}
        half = len(labels) // 2
        left = self._count(labels[:half], instant)
        found = self._bisect(staged, labels[:half], instant, left)
        found.update(self._bisect(staged, labels[half:], instant, remote - left))
        return found

    def _count(self, labels: Sequence[str] | None, instant: str) -> int:
        """The Platform's count of memories in these scopes (None: every scope) created by
        INSTANT."""
        created = {"created_at": {"lte": instant}}
        if labels is None:
            filters = self.platform.across_scopes(created)
        else:
            filters = self.platform.across_scopes(created, among=_among(labels))
        self.requests += 1
        count = self.platform.count(filters)
        if count is None:
            raise MemsyncError(f"{self.name}: the Platform's list answered no count")
        return count


def _among(labels: Sequence[str]) -> dict[str, Any]:
    """A filter for these scopes: ``in`` over their one key, or an ``OR`` of each scope."""
    scopes = [Scope.parse(label).as_dict() for label in labels]
    keys = {key for scope in scopes for key in scope}
    if len(keys) == 1 and all(len(scope) == 1 for scope in scopes):
        (key,) = keys
        return {key: {"in": [scope[key] for scope in scopes]}}
    return {
        "OR": [{"AND": [{k: v} for k, v in sorted(scope.items())]} for scope in scopes],
    }


__all__ = ["DeleteCheck"]
