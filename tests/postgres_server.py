"""A real PostgreSQL server for the tests and benchmarks, started and stopped by them.

Debian's PostgreSQL 15 (``apt-get install postgresql``; ``.ci/run`` installs it where it is
missing). One server per test session: ``initdb`` into a private directory, ``postgres`` on a
free loopback port with its socket in that directory, password authentication over TCP (so a
URL carries a password, as a real one does), torn down at the end. PostgreSQL refuses to run
as root: as root, the server runs as ``nobody`` through ``setpriv``, in a directory it owns.

A missing server is an error that says what to install, never a skip.

``history_table`` makes the history table of upstream PR #6968 (a server that keeps each
memory's history in its PostgreSQL app database). ``memories_table`` makes upstream's table (mem0 2.2.1 ``vector_stores/pgvector.py``
``create_col``: ``id UUID PRIMARY KEY, vector vector(N), payload JSONB`` and the GIN index on
``payload->>'text_lemmatized'``). Where the pgvector extension is not installed (Debian 12 has
no package for it), the ``vector`` column is ``real[]``: memsync never reads that column.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
INSTALL = "apt-get install -y postgresql (Debian's PostgreSQL 15)"
START_DEADLINE = 60.0


class PostgresMissing(RuntimeError):
    """PostgreSQL's binaries are not on this machine."""


@dataclass
class Postgres:
    """A running server: its superuser is ``postgres``, with PASSWORD, on 127.0.0.1:PORT."""

    port: int
    password: str
    directory: Path

    def url(
        self, dbname: str = "postgres", user: str = "postgres", password: str | None = None
    ) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{dbname}"

    def execute(self, sql: str, *params: object, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            conn.execute(sql, params or None)  # type: ignore[arg-type]

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; its name."""
        name = name or f"db_{secrets.token_hex(6)}"
        self.execute(f'CREATE DATABASE "{name}"')
        return name

    def reader(self, dbname: str, table: str = "memories") -> str:
        """A role that may only read TABLE of DBNAME (as an operator grants memsync): its URL."""
        role = f"reader_{secrets.token_hex(4)}"
        password = secrets.token_urlsafe(12)
        self.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        self.execute(f'GRANT CONNECT ON DATABASE "{dbname}" TO {role}')
        self.execute(f'GRANT SELECT ON "{table}" TO {role}', dbname=dbname)
        return self.url(dbname, role, password)

    def has_pgvector(self) -> bool:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        return row is not None


def memories_table(url: str, name: str = "memories", dims: int = 64) -> None:
    """Upstream's collection table (``PGVector.create_col``), in the database at URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        vector = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        if vector:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            column = sql.SQL("vector({})").format(sql.Literal(dims))
        else:
            column = sql.SQL("real[]")
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id UUID PRIMARY KEY, vector {}, payload JSONB)"
            ).format(sql.Identifier(name), column)
        )
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON {} "
                "USING gin(to_tsvector('simple', payload->>'text_lemmatized'))"
            ).format(sql.Identifier(f"{name}_text_lemmatized_idx"), sql.Identifier(name))
        )


def history_table(url: str) -> None:
    """Upstream PR #6968's history and messages tables (its migration 007, and
    ``PostgresHistoryStore``'s DDL), in the database at URL (the server's app database)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS history (id TEXT PRIMARY KEY, memory_id TEXT, "
            "old_memory TEXT, new_memory TEXT, event TEXT, created_at TEXT, updated_at TEXT, "
            "is_deleted INTEGER, actor_id TEXT, role TEXT)"
        )
        conn.execute(
            "CREATE INDEX IF NOT EXISTS ix_history_memory_id_created_at "
            "ON history (memory_id, created_at)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS messages (id TEXT PRIMARY KEY, session_scope TEXT, "
            "role TEXT, content TEXT, name TEXT, created_at TEXT)"
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> tuple[list[str], int | None]:
    """The command prefix that runs PostgreSQL's binaries, and the uid that must own its files."""
    if os.geteuid() != 0:
        return [], None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise PostgresMissing("running as root, and setpriv (util-linux) is missing")
    nobody = pwd.getpwnam("nobody")
    prefix = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    return prefix, nobody.pw_uid


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A fresh PostgreSQL server for the block; stopped and removed after it."""
    for tool in ("initdb", "postgres", "pg_ctl"):
        if not (BIN / tool).exists():
            raise PostgresMissing(f"{BIN / tool} not found: {INSTALL}")
    prefix, owner = _as_server_user()
    directory = Path(tempfile.mkdtemp(prefix="memsync-pg-"))
    data = directory / "data"
    password = secrets.token_urlsafe(16)
    pwfile = directory / "pw"
    pwfile.write_text(password)
    if owner is not None:
        os.chown(directory, owner, -1)
        os.chown(pwfile, owner, -1)
    log = directory / "server.log"
    process: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [
                *prefix,
                str(BIN / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--pwfile",
                str(pwfile),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
        )
        port = _free_port()
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [
                    *prefix,
                    str(BIN / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(port),
                    "-k",
                    str(directory),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        server = Postgres(port, password, directory)
        _wait_until_ready(server, process, log)
        yield server
    finally:
        if process is not None:
            process.send_signal(signal.SIGINT)  # fast shutdown: clients still connected go
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=60)
        shutil.rmtree(directory, ignore_errors=True)


def _wait_until_ready(server: Postgres, process: subprocess.Popen[bytes], log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + START_DEADLINE
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            with psycopg.connect(server.url(), connect_timeout=5):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres not ready: {log.read_text()[-2000:]}") from None
            time.sleep(0.05)
