"""Mem0's past as mnem's history, the pure part: events, each memory's versions, the commits.

``events``: a Mem0 history row or Platform entry as a ``HistoryEvent``, and what a source read
(``HistoryRead``). ``timeline``: each memory's versions, ending with what Mem0 lists now, and
what could not be trusted, by reason. ``windows``: the commits that carry them, as fine as the
disk budget allows. ``report``: what an import did. Reading Mem0 is the Mem0 providers'
business, writing mnem the mnem provider's; nothing here does I/O.
"""

from memsync.base.history.events import (
    HistoryEvent,
    HistoryRead,
    event_from_platform,
    event_from_row,
)
from memsync.base.history.report import HistoryReport
from memsync.base.history.timeline import MemoryPast, Timeline, Version, build_timeline
from memsync.base.history.windows import Plan, Step, plan_history

__all__ = [
    "HistoryEvent",
    "HistoryRead",
    "HistoryReport",
    "MemoryPast",
    "Plan",
    "Step",
    "Timeline",
    "Version",
    "build_timeline",
    "event_from_platform",
    "event_from_row",
    "plan_history",
]
