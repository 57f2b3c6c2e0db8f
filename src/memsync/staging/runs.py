"""Runs: one row per sync run (a cycle, or all scopes' cycles), with its summary."""

from __future__ import annotations

import sqlite3

# --- engine side: starting and finishing a run ---------------------------------------------


class Runs:
    """The runs table (``store.runs``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def start(self, started_at: str, pid: int) -> int:
        """A new run, under way in process ``pid``; its id."""
        cursor = self.conn.execute(
            "INSERT INTO runs (started_at, status, pid) VALUES (?, 'running', ?)",
            (started_at, pid),
        )
        return int(cursor.lastrowid or 0)

    def finish(self, run_id: int, finished_at: str | None, status: str, summary: str) -> None:
        """Record how a run ended: its status and its report as JSON."""
        self.conn.execute(
            "UPDATE runs SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
            (finished_at, status, summary, run_id),
        )
