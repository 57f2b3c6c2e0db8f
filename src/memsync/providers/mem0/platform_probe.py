"""The Platform's change probe: the memories changed since the last probe, across every scope.

One v3 list filtered on ``updated_at`` from the last probe's moment (less ``OVERLAP``, for clock
skew and writes that become visible late), across every scope: usually one short page naming
the scope of every memory added or edited. Past ``PLATFORM_PAGES`` pages the window is split in
halves by time, again as needed, so that a busy organisation costs requests in proportion to
its changes and the probe never lists every scope instead (issue 39 §5: past 1,000 changes in
a ten-minute look-back it did, continuously). Each memory is flagged once per edit.

Deletes do not show in a list of what is there: ``platform_deletes`` compares counts for them,
once a ``delete_check`` period (the daemon gives the probe what staging holds). Not the entity
listing (its ``updated_at`` is the entity's own), nor ``/v1/memories/events/`` (its order and
which writes it logs are not documented): neither is sure enough to stand on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memsync.base.records import parse_instant
from memsync.base.scopes import Scope
from memsync.providers.change_probe import WHOLE, ChangeProbe, Flags
from memsync.providers.mem0.platform_deletes import DeleteCheck
from memsync.providers.mem0.platform_listing import utc_iso

if TYPE_CHECKING:
    from memsync.providers.mem0.platform import Mem0PlatformProvider

PLATFORM_PAGES = 5  # pages of changed memories read in one window before it is split in two
OVERLAP = timedelta(seconds=30)  # each window starts this long before the last probe asked
SHORTEST = timedelta(milliseconds=10)  # a window this short is read whole, however many pages


class PlatformChangesProbe(ChangeProbe):
    """The v3 list filtered on ``updated_at`` since the last probe (module docstring).

    Its state is the moment it last asked, kept in memory: after a restart the start's full
    pass covers the gap, so the first probe only sets the window (and notes what changed just
    before it, not to flag that again). ``delete_check``: seconds between count checks for
    deletes (None: off).
    """

    def __init__(
        self,
        name: str,
        provider: Mem0PlatformProvider,
        keys: tuple[str, ...],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        *,
        delete_check: float | None = None,
    ) -> None:
        super().__init__(name, provider)
        self.platform = provider
        self.keys = keys
        self.now = now
        self.requests = 0  # list requests the probe made (tests and benchmarks read it)
        self._asked: datetime | None = None  # when the last probe asked (local clock)
        self._began: datetime | None = None  # where the last probe's window began
        self._seen: dict[str, str] = {}  # memory id -> the updated_at already flagged
        self.deletes = (
            DeleteCheck(name, provider, keys, period=delete_check, now=now)
            if delete_check is not None and keys
            else None
        )

    def ask(self, known: Mapping[str, str]) -> Flags:
        asked = self.now()
        flags = Flags()
        first = self._asked is None
        since = (self._asked or asked) - OVERLAP
        for raw in self._window(since, asked):
            memory_id, stamp = str(raw["id"]), str(raw.get("updated_at") or "")
            if self._seen.get(memory_id) == stamp:
                continue
            self._seen[memory_id] = stamp
            label = self._label(raw)
            if label is not None and not first:  # the first sets the window: the start's
                flags.scopes.add(label)  # full pass lists what it holds
                flags.changed.setdefault(label, set()).add(memory_id)
        horizon = since - OVERLAP
        self._seen = {i: s for i, s in self._seen.items() if (parse_instant(s) or asked) >= horizon}
        self._began, self._asked = since, asked
        return flags

    def deletions(self) -> set[str]:
        """Scopes that lost memories, by the count check when it is due (``platform_deletes``).

        Only memories created before the last window began are compared: a probe before it
        flagged them, and their scopes were listed since, so staging holds them all."""
        check, staged, began = self.deletes, self.staged, self._began
        if check is None or staged is None or began is None or not check.due():
            return set()
        return check.run(staged, created_by=began)

    def _label(self, raw: Mapping[str, Any]) -> str | None:
        """The scope (label) a listed memory belongs to; None outside the configured keys."""
        if not self.keys:
            return WHOLE
        values = {**raw, "run_id": raw.get("run_id") or raw.get("session_id")}
        scope = {k: str(values[k]) for k in self.keys if values.get(k)}
        return Scope.of(scope).label if len(scope) == len(self.keys) else None

    def _window(self, since: datetime, asked: datetime) -> list[dict[str, Any]]:
        """The memories changed since SINCE: read whole when they fit a page (the quiet case:
        one request); past that, what is new since the last probe, and the overlap with its
        window only when the count there differs from what the last probe saw (a write that
        became visible late): a burst is read once, not again at every probe of the overlap."""
        first = self._first(since, None)
        last = self._asked
        if (first["count"] or 0) <= self.platform.page_size and not first.get("next"):
            return _with_ids(first["results"])
        if last is None or last <= since:
            return self._changed(since, None, asked, first)
        newer = self._changed(last, None, asked)
        older = (first["count"] or 0) - len(newer)
        seen = sum(1 for stamp in self._seen.values() if _within(stamp, since, last))
        if older == seen:
            return newer
        return self._changed(since, last, asked) + newer

    def _first(self, since: datetime, until: datetime | None) -> dict[str, Any]:
        self.requests += 1
        return self.platform._page(1, self._filters(since, until))

    def _filters(self, since: datetime, until: datetime | None) -> dict[str, Any]:
        condition: dict[str, Any] = {"gte": utc_iso(since)}
        if until is not None:
            condition["lt"] = utc_iso(until)
        return self.platform.across_scopes({"updated_at": condition})

    def _changed(
        self,
        since: datetime,
        until: datetime | None,
        asked: datetime,
        first: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Every memory with SINCE <= updated_at (< UNTIL), any scope; a window holding more
        than ``PLATFORM_PAGES`` pages is read as its two halves (ASKED: the probe's moment,
        the end of an open window when it must be split; FIRST: its first page, if read)."""
        filters = self._filters(since, until)
        first = first if first is not None else self._first(since, until)
        count = first["count"] or 0
        pages = -(-count // self.platform.page_size)
        end = until or asked
        if pages > PLATFORM_PAGES and end - since > SHORTEST:
            middle = since + (end - since) / 2
            later = self._changed(middle, until, asked)
            return self._changed(since, middle, asked) + later
        found = _with_ids(first["results"])
        page, number = first, 2
        while page.get("next") and page["results"] and number <= pages + 1:
            page = self.platform._page(number, filters)
            self.requests += 1
            found += _with_ids(page["results"])
            number += 1
        return found


def _within(stamp: str, since: datetime, until: datetime) -> bool:
    instant = parse_instant(stamp)
    return instant is not None and since <= instant < until


def _with_ids(results: list[Any]) -> list[dict[str, Any]]:
    return [r for r in results if isinstance(r, dict) and r.get("id")]


__all__ = ["OVERLAP", "PLATFORM_PAGES", "PlatformChangesProbe"]
