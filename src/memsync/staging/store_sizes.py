"""How much each mnem provider's stores took on disk over time (``store_sizes``), so that
status, the page, ``/metrics`` and ``check`` can say how fast a layout grows
(``orchestration/status/disk``)."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class SizeSample(NamedTuple):
    at: str  # ISO instant, memsync's clock
    bytes: int
    stores: int


class StoreSizes:
    """The ``store_sizes`` table: provider → samples of its stores' bytes on disk."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, provider: str, sample: SizeSample) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO store_sizes (provider, at, bytes, stores) VALUES (?, ?, ?, ?)",
            (provider, *sample),
        )

    def newest(self, provider: str) -> SizeSample | None:
        row = self.conn.execute(
            "SELECT at, bytes, stores FROM store_sizes WHERE provider = ? ORDER BY at DESC LIMIT 1",
            (provider,),
        ).fetchone()
        return SizeSample(*row) if row else None

    def oldest_since(self, provider: str, since: str) -> SizeSample | None:
        """The oldest sample of PROVIDER taken at or after SINCE."""
        row = self.conn.execute(
            "SELECT at, bytes, stores FROM store_sizes WHERE provider = ? AND at >= ? "
            "ORDER BY at LIMIT 1",
            (provider, since),
        ).fetchone()
        return SizeSample(*row) if row else None

    def prune(self, before: str) -> None:
        """Forget samples older than BEFORE (a growth rate looks back a day at most)."""
        self.conn.execute("DELETE FROM store_sizes WHERE at < ?", (before,))
