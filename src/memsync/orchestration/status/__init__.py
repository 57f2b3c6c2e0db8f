"""``memsync status``: one picture of config, daemon, providers, outbox, conflicts and backups.

Collected as plain data (the --json output) first, then rendered for a person. Never prints a
secret: only provider names, types and counts.

Collected in ``collect`` (with ``cutover`` readiness and ``cycle_state``), drawn in ``render``;
``page`` is what the status page polls.
"""

from memsync.orchestration.status.collect import collect_status, status_report
from memsync.orchestration.status.cycle_state import cycle_state
from memsync.orchestration.status.page import cycle_history, page_status, scope_page
from memsync.orchestration.status.render import render_status

__all__ = [
    "collect_status",
    "cycle_history",
    "cycle_state",
    "page_status",
    "render_status",
    "scope_page",
    "status_report",
]
