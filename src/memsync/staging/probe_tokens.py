"""What a remote store's change probe answered per scope (``probe_tokens``), kept so that the
next probe can tell which scopes moved since memsync last listed them
(``orchestration/live/probes.py``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping


class ProbeTokens:
    """The ``probe_tokens`` table: provider → scope label → token."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def of(self, provider: str) -> dict[str, str]:
        """Every scope's last token for PROVIDER (a configured name), by scope label."""
        cursor = self.conn.execute(
            "SELECT scope, token FROM probe_tokens WHERE provider = ?", (provider,)
        )
        return {str(scope): str(token) for scope, token in cursor}

    def save(self, provider: str, tokens: Mapping[str, str], now: str) -> None:
        """Keep TOKENS (scope label → token) for PROVIDER, replacing the scopes' earlier ones."""
        self.conn.execute(
            "INSERT INTO probe_tokens (provider, scope, token, seen_at) "
            "SELECT ?, key, value, ? FROM json_each(?) WHERE true "
            "ON CONFLICT (provider, scope) DO UPDATE SET token = excluded.token, "
            "seen_at = excluded.seen_at",
            (provider, now, json.dumps(dict(tokens))),
        )

    def forget(self, provider: str) -> None:
        """Drop PROVIDER's tokens: its next probe flags every scope it sees."""
        self.conn.execute("DELETE FROM probe_tokens WHERE provider = ?", (provider,))
