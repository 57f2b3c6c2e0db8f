"""What each `memsync verify A B` found (``verify_results``), for the cutover readiness view."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class VerifyResult(NamedTuple):
    a: str
    b: str
    at: str
    reconciled: bool
    count_a: int | None
    count_b: int | None
    differences: int
    error: str | None  # why verify could not compare
    journal_seq: int  # the newest journal entry before it ran


class VerifyResults:
    """The ``verify_results`` table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def record(
        self,
        a: str,
        b: str,
        at: str,
        *,
        reconciled: bool,
        counts: tuple[int, int] | None,
        differences: int,
        error: str | None,
    ) -> None:
        """Keep what a verify of A and B found (COUNTS None: it could not list them), with
        the journal's newest entry now, so later changes show as changes since."""
        count_a, count_b = counts if counts is not None else (None, None)
        self.conn.execute(
            "INSERT INTO verify_results (a, b, at, reconciled, count_a, count_b, differences, "
            "error, journal_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
            "(SELECT COALESCE(MAX(seq), 0) FROM changes))",
            (a, b, at, int(reconciled), count_a, count_b, differences, error),
        )

    def latest(self, a: str, b: str) -> VerifyResult | None:
        """The newest verify of A and B, in either order."""
        row = self.conn.execute(
            "SELECT a, b, at, reconciled, count_a, count_b, differences, error, journal_seq "
            "FROM verify_results WHERE (a = ? AND b = ?) OR (a = ? AND b = ?) "
            "ORDER BY id DESC LIMIT 1",
            (a, b, b, a),
        ).fetchone()
        if row is None:
            return None
        return VerifyResult(row[0], row[1], row[2], bool(row[3]), *row[4:])
