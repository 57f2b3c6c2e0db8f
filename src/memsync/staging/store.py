"""The staging store: a local SQLite file (through sqlite-utils) mirroring every provider.

WAL, a busy timeout, and short ``BEGIN IMMEDIATE`` write transactions: a writer takes the lock
up front instead of failing half-way, and no transaction is ever held across a network call.
The file is private (0600). A database that cannot be read is an error with a way out
(``memsync repair``), never treated as empty.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.base.errors import StagingError
from memsync.base.paths import make_private_dir
from memsync.base.records import Record, utc_now_iso
from memsync.staging.adoption import AdoptionSearch
from memsync.staging.conflicts import Conflicts
from memsync.staging.cycle_outcomes import CycleOutcomes
from memsync.staging.dirty import DirtySet
from memsync.staging.excluded import ExcludedRecords
from memsync.staging.journal import Journal
from memsync.staging.links import Links
from memsync.staging.outbox import Outbox
from memsync.staging.probe_tokens import ProbeTokens
from memsync.staging.providers import ProviderRegistry
from memsync.staging.records import Records
from memsync.staging.rollbacks import Rollbacks
from memsync.staging.rows import RECORD_COLUMNS, dumps, record_row, row_record
from memsync.staging.runs import Runs
from memsync.staging.schema import LATEST, MIGRATIONS
from memsync.staging.status_counts import StatusCounts
from memsync.staging.store_commits import StoreCommits
from memsync.staging.store_sizes import StoreSizes
from memsync.staging.verify_results import VerifyResults
from memsync.staging.webhooks import Webhooks
from memsync.staging.write_backs import WriteBacks

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["RECORD_COLUMNS", "StagingStore", "checkpoint", "dumps", "record_row", "row_record"]

MIN_SQLITE = (3, 31, 0)  # generated columns (schema 13); a migration would fail part way
BUSY_TIMEOUT_S = 10.0  # a writer waits this long for another's transaction, then fails
# SQLite's page cache: 32 MiB for a cycle, so a million-record mirror stays cache-friendly (a
# ceiling, not an allocation: small stores use what they need); 2 MiB for a look that only
# reads (StagingStore.open).
_CYCLE_CACHE = "PRAGMA cache_size = -32768"
_READER_CACHE = "PRAGMA cache_size = -2048"

_CORRUPT_HINT = (
    "run `memsync repair` to rebuild it from the providers (the providers hold the memories; "
    "the staging database is only a cache of them)"
)


class StagingStore:
    """One staging database. Open with ``StagingStore.open(path)``; close when done."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.scratch = False  # a throwaway copy (``scratch_copy``): a dry run works in one
        # the repositories: one per table family, each holding its SQL, all on this connection
        self.records = Records(conn)
        self.links = Links(conn)
        self.dirty = DirtySet(conn)
        self.outbox = Outbox(conn)
        self.journal = Journal(conn)
        self.providers = ProviderRegistry(conn)
        self.conflicts = Conflicts(conn)
        self.runs = Runs(conn)
        self.adoption = AdoptionSearch(conn)
        self.status_counts = StatusCounts(conn)
        self.verify_results = VerifyResults(conn)
        self.rollbacks = Rollbacks(conn)
        self.probe_tokens = ProbeTokens(conn)
        self.cycle_outcomes = CycleOutcomes(conn)
        self.excluded = ExcludedRecords(conn)
        self.store_commits = StoreCommits(conn)
        self.write_backs = WriteBacks(conn)
        self.webhooks = Webhooks(conn)
        self.store_sizes = StoreSizes(conn)

    @functools.cached_property
    def db(self) -> sqlite_utils.Database:
        """The same connection as a ``sqlite_utils.Database``, made on first use: importing
        sqlite-utils (and the numpy it looks for) is a fifth of a second that a sync, which
        needs none of it, would pay at every start."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    # opening ------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, create: bool = True, reading: bool = False) -> StagingStore:
        """Open (and migrate) the staging database. ``reading``: a look that only reads
        (status, the page, /metrics, a backup) gets a small page cache: scanning gains
        nothing from a large one, and in the daemon each is memory taken beside the cycle's."""
        path = Path(path)
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise StagingError(
                f"this Python's SQLite is {sqlite3.sqlite_version}; memsync's staging database "
                f"needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer (generated columns): "
                "run memsync with a Python built against a newer SQLite"
            )
        if not path.exists():
            if not create:
                raise StagingError(f"{path}: no staging database yet; run `memsync sync` first")
            make_private_dir(path.parent)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        try:
            conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_READER_CACHE if reading else _CYCLE_CACHE)
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            raise StagingError(
                f"{path}: the staging database is unreadable ({exc}); {_CORRUPT_HINT}"
            ) from None
        store = cls(conn, path)
        try:
            store.migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            if "locked" in str(exc):
                raise StagingError(
                    f"{path}: the staging database is locked by another memsync process; "
                    "wait for it to finish or stop it"
                ) from None
            raise StagingError(
                f"{path}: the staging database is corrupt ({exc}); {_CORRUPT_HINT}"
            ) from None
        return store

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def __enter__(self) -> StagingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # schema -------------------------------------------------------------------------------

    def schema_version(self) -> int:
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if not exists:
            return 0
        row = self.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def migrate(self) -> None:
        """Apply every migration newer than the database, each in its own transaction."""
        current = self.schema_version()
        if current > LATEST:
            raise StagingError(
                f"{self.path}: the staging database was written by a newer memsync "
                f"(schema {current}, this one knows {LATEST}); upgrade memsync"
            )
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            with self.transaction():
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, description TEXT)"
                )
                for statement in _statements(migration.sql):
                    self.conn.execute(statement)
                self.conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (migration.version, utc_now_iso(), migration.description),
                )

    def check_integrity(self) -> str:
        """SQLite's own integrity check: 'ok' or the first problem found."""
        row = self.conn.execute("PRAGMA quick_check").fetchone()
        return str(row[0])

    def data_version(self) -> int:
        """A number that changes when another connection commits: a poll that costs nothing."""
        row = self.conn.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    # transactions -------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction that takes the write lock up front (BEGIN IMMEDIATE)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    @contextlib.contextmanager
    def rehearsal(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that is always rolled back: a dry run sees its own changes
        (adoption's relinks) while it plans, and keeps none of them."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        finally:
            self.conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def scratch_copy(self) -> Iterator[StagingStore]:
        """A private copy of this database, deleted when the ``with`` ends.

        A dry run works in one from its first read to its last: it mirrors, adopts and plans
        exactly as a real cycle would, and none of it (records, journal, cursors, the run,
        the providers' last cycle) reaches this database, so the next real cycle does what
        it would have done without the dry run. The copy sits beside this file, in a
        directory only this user can read, and is a consistent snapshot (SQLite's backup).
        """
        directory = Path(tempfile.mkdtemp(prefix=".dry-run-", dir=self.path.parent))
        try:
            path = directory / self.path.name
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
            try:
                target = sqlite3.connect(path)
                try:
                    self.conn.backup(target)
                finally:
                    target.close()
            except sqlite3.Error as exc:
                raise StagingError(
                    f"{path}: cannot copy the staging database for a dry run ({exc}); "
                    "check the free disk space beside it"
                ) from None
            with StagingStore.open(path, create=False) as copy:
                copy.scratch = True
                yield copy
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    # records (kept here: the engine, the benchmarks and the tests stage through them) -----

    def upsert_records(self, rows: Iterable[Sequence[Any]]) -> None:
        """Insert or replace mirror rows (made by ``record_row``) in one statement batch."""
        self.records.upsert(rows)

    def count_records(self, provider: str | None = None) -> int:
        return self.records.count(provider)

    def iter_records(self, provider: str) -> Iterator[Record]:
        """The mirrored records of a provider, in id order, streamed."""
        return self.records.of_provider(provider)


def checkpoint(database: Path, timeout: float) -> None:
    """Fold the WAL into the database file without waiting for any reader (PASSIVE).

    Its own short connection, waiting at most TIMEOUT seconds for the lock; raises
    sqlite3.Error when the database cannot be reached.
    """
    conn = sqlite3.connect(database, timeout=timeout)
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    finally:
        conn.close()


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (no semicolons inside our own SQL strings)."""
    buffer: list[str] = []
    for line in script.splitlines():
        stripped = line.split("--", 1)[0]
        buffer.append(stripped)
        if stripped.rstrip().endswith(";"):
            statement = "\n".join(buffer).strip()
            buffer = []
            if statement.strip(";").strip():
                yield statement
    tail = "\n".join(buffer).strip()
    if tail:
        yield tail


__all__ = ["RECORD_COLUMNS", "StagingStore", "dumps", "record_row", "row_record"]
