"""Sync runs (``runs``): one row per cycle, its status and its report, read back for status."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class RunRow(NamedTuple):
    id: int
    started_at: str
    finished_at: str | None
    status: str
    summary: str | None  # the cycle report, JSON


class RunSpan(NamedTuple):
    id: int
    started_at: str
    finished_at: str | None


class Runs:
    """The ``runs`` table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # reading (status, the status page's history) -------------------------------------------

    def latest(self) -> RunRow | None:
        """The newest run, finished or not."""
        row = self.conn.execute(
            "SELECT id, started_at, finished_at, status, summary FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else RunRow(*row)

    def newest_finished(self, limit: int) -> list[RunRow]:
        """The LIMIT newest finished runs, newest first."""
        cursor = self.conn.execute(
            "SELECT id, started_at, finished_at, status, summary FROM runs "
            "WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [RunRow(*row) for row in cursor]

    def latest_discovery(self) -> tuple[int, str | None, str] | None:
        """The newest finished run that discovered scopes: its id, end, and what each source's
        discovery found (JSON), so a discovery that was not complete stays said until one is."""
        row = self.conn.execute(
            "SELECT id, finished_at, discovery FROM runs WHERE discovery IS NOT NULL "
            "ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (int(row[0]), row[1], str(row[2]))

    def spans_of_last_cycles(self) -> list[RunSpan]:
        """When each run a provider's last cycle was part of started and ended (see
        providers.last_cycle); not their reports, which run to megabytes at thousands of
        scopes."""
        cursor = self.conn.execute(
            "SELECT id, started_at, finished_at FROM runs WHERE id IN "
            "(SELECT cycle_run_id FROM providers WHERE last_cycle IS NOT NULL)"
        )
        return [RunSpan(*row) for row in cursor]

    # the cycle's side ------------------------------------------------------------

    def start(self, started_at: str, pid: int) -> int:
        """A new run, under way in process ``pid``; its id."""
        cursor = self.conn.execute(
            "INSERT INTO runs (started_at, status, pid) VALUES (?, 'running', ?)",
            (started_at, pid),
        )
        return int(cursor.lastrowid or 0)

    def finish(
        self,
        run_id: int,
        finished_at: str | None,
        status: str,
        summary: str,
        discovery: str | None = None,
    ) -> None:
        """Record how a run ended: its status and its report as JSON, and apart, what its
        discovery found (JSON; None: it looked for no scopes)."""
        self.conn.execute(
            "UPDATE runs SET finished_at = ?, status = ?, summary = ?, discovery = ? WHERE id = ?",
            (finished_at, status, summary, discovery, run_id),
        )
