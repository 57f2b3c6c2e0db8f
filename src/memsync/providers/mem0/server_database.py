"""A Mem0 server's own PostgreSQL database, read-only: every scope it holds, in one query.

Upstream's server keeps its memories through mem0's pgvector store (mem0ai 2.2.1
``vector_stores/pgvector.py``): one table named by the collection (``memories`` by default)
with ``id UUID``, ``vector`` and ``payload JSONB``, the payload holding ``user_id``,
``agent_id``, ``run_id``, the text and the dates. Its REST routes see at most 10,000 of them
(``GET /entities``) or 1,000 (the admin listing), in no order; the table sees all.

``census`` groups the table by the configured scope keys in one query: per scope, how many
memories and a digest of every id and payload. Discovery reads the scopes from it; the probe
compares each scope's count and digest with those of its last listing, so an add, an edit, a
delete and an add backdated by its metadata all show, at any size. The digest is the sum of
PostgreSQL's 64-bit ``hashtextextended(id || payload)`` per memory: order-free, one pass, no
sort, twice as fast as an md5 of each (1,000 users of 200 memories: 0.65 s against 1.36 s on
a busy 2-core machine; the count alone takes 0.12 s). A server upgrade that changed the hash
would flag every scope once: one listing each, nothing more.

The connection is memsync's only way into the server's storage, so it can never write:
``default_transaction_read_only`` is set for the session and every transaction is opened
READ ONLY (a grant of SELECT alone is what the docs ask operators for, besides). The URL is a
secret (it carries a password): it comes from the environment or a file, and no message,
log line or exception carries it or its password.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memsync.base.errors import ConfigError, ProviderError, ProviderUnreachable
from memsync.base.secrets import Secret, redact

DEFAULT_TABLE = "memories"  # the server's collection_name (server/main.py's default config)
CONNECT_TIMEOUT = 10  # seconds
STATEMENT_TIMEOUT_MS = 120_000
EXTRA = "pip install 'memsync[postgres]' (psycopg 3)"


def psycopg_missing(provider: str) -> ConfigError | None:
    """The error for a config that names a database where psycopg is not installed."""
    if importlib.util.find_spec("psycopg") is not None:
        return None
    return ConfigError(
        f"providers.{provider}: a database connection needs the PostgreSQL driver; {EXTRA}"
    )


@dataclass(frozen=True)
class ScopeDigest:
    """One scope's memories as the table holds them now: how many, and their digest."""

    count: int
    digest: str

    @property
    def token(self) -> str:
        return f"{self.count}/{self.digest}"


@dataclass(frozen=True)
class DatabaseCensus:
    """Every scope the table holds for some scope keys: their values (in the keys' order)
    and digests. Complete by construction: the query reads every row."""

    keys: tuple[str, ...]
    scopes: dict[tuple[str, ...], ScopeDigest]
    memories: int  # rows the grouped scopes hold together

    def of(self, values: Mapping[str, str]) -> ScopeDigest | None:
        return self.scopes.get(tuple(values[k] for k in self.keys))


class ServerDatabase:
    """A read-only connection to one Mem0 server's database, opened on first use and kept
    until ``close`` (the probe asks once a period; discovery once a cycle)."""

    def __init__(
        self,
        provider: str,
        url: Secret,
        table: str = DEFAULT_TABLE,
        *,
        table_hint: str = "set database_table to the server's collection_name",
    ) -> None:
        """``table_hint``: what to do when the database has no such table (which setting)."""
        self.provider = provider
        self.url = url
        self.table = table
        self.table_hint = table_hint
        self._lock = threading.Lock()
        self._conn: Any = None

    def describe(self) -> str:
        """Where the URL comes from, never the URL: ``$MEM0_DATABASE_URL``, or a path."""
        return f"the database named by {self.url.source} (table {self.table})"

    def census(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> DatabaseCensus:
        """Every scope of the wildcard KEYS among the memories with the FIXED values (no keys:
        the one scope FIXED names), with its count and digest, in one query."""
        from psycopg import sql

        columns = [sql.SQL("payload->>{}").format(sql.Literal(k)) for k in keys]
        conditions = [
            sql.SQL("payload->>{} = {}").format(sql.Literal(k), sql.Literal(v))
            for k, v in sorted(fixed.items())
        ]
        conditions += [sql.SQL("coalesce({}, '') <> ''").format(c) for c in columns]
        digest = sql.SQL(
            "coalesce(sum(hashtextextended(id::text || coalesce(payload::text, ''), 0)), 0)::text"
        )
        query = sql.SQL("SELECT {} FROM {}{}{}").format(
            sql.SQL(", ").join([*columns, sql.SQL("count(*)"), digest]),
            sql.Identifier(self.table),
            sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL(""),
            sql.SQL(" GROUP BY ")
            + sql.SQL(", ").join(sql.SQL(str(n + 1)) for n in range(len(keys)))
            if keys
            else sql.SQL(""),
        )
        rows = self._select(query)
        scopes: dict[tuple[str, ...], ScopeDigest] = {}
        total = 0
        for row in rows:
            values, count, summed = tuple(row[: len(keys)]), int(row[-2]), str(row[-1])
            if count == 0:
                continue  # no keys and no memory: the one scope holds nothing
            scopes[values] = ScopeDigest(count, summed)
            total += count
        return DatabaseCensus(keys, scopes, total)

    def select(self, query: Any, params: Any = None) -> list[tuple[Any, ...]]:
        """One read-only query's rows (the history import's: ``server_history``)."""
        return self._select(query, params)

    def _select(self, query: Any, params: Any = None) -> list[tuple[Any, ...]]:
        import psycopg

        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    return list(conn.execute(query, params).fetchall())
            except psycopg.errors.UndefinedTable:
                self._drop()
                raise ConfigError(
                    f"providers.{self.provider}: {self.describe()} has no table "
                    f"{self.table!r}; {self.table_hint}"
                ) from None
            except psycopg.errors.InsufficientPrivilege:
                self._drop()
                raise ProviderError(
                    f"{self.provider}: {self.describe()}: the role may not read table "
                    f"{self.table!r}; GRANT SELECT ON {self.table} TO the role memsync uses"
                ) from None
            except psycopg.OperationalError as exc:
                self._drop()
                raise ProviderUnreachable(
                    f"{self.provider}: cannot read {self.describe()}: {self._safe(exc)}"
                ) from None
            except psycopg.Error as exc:
                self._drop()
                raise ProviderError(
                    f"{self.provider}: reading {self.describe()} failed: {self._safe(exc)}"
                ) from None

    def _connection(self) -> Any:
        import psycopg

        if self._conn is not None and not self._conn.closed:
            return self._conn
        options = f"-c default_transaction_read_only=on -c statement_timeout={STATEMENT_TIMEOUT_MS}"
        try:
            conn = psycopg.connect(
                self.url.reveal(),
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT,
                options=options,
                application_name="memsync",
            )
        except psycopg.ProgrammingError as exc:  # a URL libpq cannot parse
            raise ConfigError(
                f"providers.{self.provider}: {self.url.source} does not hold a PostgreSQL "
                f"URL libpq accepts ({self._safe(exc)}); expected "
                "postgresql://USER:PASSWORD@HOST:PORT/DBNAME"
            ) from None
        conn.read_only = True  # and every transaction opened READ ONLY besides
        self._conn = conn
        return conn

    def _safe(self, exc: BaseException) -> str:
        """EXC's first line, without the URL or its password."""
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return redact(text, self.url, *self._password())

    def _password(self) -> list[Secret]:
        """The URL's password, as libpq reads it and as it is written (a URL libpq cannot
        parse may still be quoted in part). Written with an unencoded @ / : ? or #, libpq reads
        the rest as the host, port or database, which its errors quote: so each piece of the
        password as written (up to the URL's last @) goes too, from four characters up."""
        url = self.url.reveal()
        found: list[str] = []
        written = re.search(r"://[^:/@?#]*:([^@]*)@", url)
        if written:
            found.append(written.group(1))
        whole = re.search(r"://[^:/@?#]*:(.*)@", url)
        if whole:
            found.append(whole.group(1))
            found += [p for p in re.split(r"[@/:?#,]", whole.group(1)) if len(p) >= 4]
        try:
            from psycopg.conninfo import conninfo_to_dict

            parsed = conninfo_to_dict(url).get("password")
        except Exception:  # unparsable: what is written is all there is
            parsed = None
        if parsed:
            found.append(str(parsed))
        longest_first = sorted({p for p in found if p}, key=len, reverse=True)
        return [Secret(p, self.url.source) for p in longest_first]

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken connection: nothing left to lose
                conn.close()

    def close(self) -> None:
        with self._lock:
            self._drop()
