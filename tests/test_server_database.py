"""A Mem0 server's own database, read-only, against a real PostgreSQL: discovery finds every
user past ``GET /entities``' 10,000-memory scan, the probe sees what ``/entities`` hides (a
delete, an edit, a backdated add), nothing can be written through memsync's connection, and
its URL and password are never printed.

The server double keeps its memories in the database's ``memories`` table through mem0's own
pgvector store (``tests/doubles/mem0_postgres_store.py``), so the REST routes and the table
memsync reads are the same data, as on upstream's server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memsync.base.errors import ConfigError, MemsyncError, ProviderError
from memsync.base.scopes import Scope
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.orchestration.scopes.discovery import discover_scopes
from memsync.orchestration.scopes.report import ScopedCycleReport
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mem0.server_database import ServerDatabase
from memsync.providers.mem0.server_probes import ServerDatabaseProbe, ServerEntitiesProbe
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_server_app import Mem0ServerDouble

ADMIN = "admin-key-0123456789abcdef"
FAST = RetryPolicy(attempts=2, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)
USER = ("user_id",)


def provider(double: Mem0ServerDouble, url: str | None, scope: dict[str, str] | None = None) -> Any:
    return Mem0ServerProvider(
        "cloud",
        "https://mem0.test",
        scope or {"user_id": "*"},
        secret=Secret(ADMIN, "$MEM0_SERVER_KEY"),
        transport=double.transport(),
        retry=FAST,
        sleep=lambda s: None,
        database=None if url is None else ServerDatabase("cloud", Secret(url, "$MEM0_DB_URL")),
    )


def cycle(double: Mem0ServerDouble, url: str | None, tmp_path: Path) -> ScopedCycleReport:
    config = parse_config(
        f"""
[sync]
active = "cloud"
[providers.cloud]
type = "mem0-server"
base_url = "https://mem0.test"
api_key_env = "MEM0_SERVER_KEY"
scope = {{ user_id = "*" }}
[providers.backup]
type = "pmm-dir"
path = "{tmp_path / "backup"}"
direction = "push"
"""
    )
    bases = {
        "cloud": provider(double, url),
        "backup": PmmDirProvider("backup", config.providers["backup"].path),  # type: ignore[union-attr]
    }
    with StagingStore.open(tmp_path / "staging.db") as store:
        return run_scoped_cycle(config, store, bases, SyncOptions())


def past_the_scan(double: Mem0ServerDouble) -> None:
    """10,005 memories: two busy users first, then carol, whom an unordered scan of 10,000
    (upstream's ``LIMIT`` over the heap, in insertion order here) never reaches."""
    double.insert_many([f"alice {n}" for n in range(6_000)], user_id="alice")
    double.insert_many([f"bob {n}" for n in range(4_000)], user_id="bob")
    double.insert_many([f"carol {n}" for n in range(5)], user_id="carol")


def test_discovery_through_the_database_finds_every_user_past_the_entities_scan(
    mem0_database: str,
) -> None:
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    past_the_scan(double)

    through_routes = discover_scopes(provider(double, None), USER, {})
    assert {s.label for s in through_routes.scopes} == {"user_id=alice", "user_id=bob"}
    assert not through_routes.complete  # /entities saw 10,000 of 10,005 and says it may not

    through_database = discover_scopes(provider(double, mem0_database), USER, {})
    assert {s.label for s in through_database.scopes} == {
        "user_id=alice",
        "user_id=bob",
        "user_id=carol",
    }
    assert through_database.complete and through_database.source == "database"


def test_a_cycle_with_the_database_syncs_the_user_the_routes_never_show(
    mem0_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 10,000-memory scan, cut to 1 on both sides (the server and memsync's reading)."""
    from memsync.providers.mem0 import server_entities

    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    double.insert_many(["alice likes tea"], user_id="alice")
    double.insert_many(["carol rides a bike"], user_id="carol")
    double.entity_scan_limit = 1  # /entities sees one memory: carol is beyond it
    monkeypatch.setattr(server_entities, "SCAN_LIMIT", 1)

    without = cycle(double, None, tmp_path / "routes")
    assert without.exit_code == 1, without.as_dict()  # not ok: part of the team unseen
    assert set(without.scopes) == {"user_id=alice"}
    assert "cloud: 1 users found, more may exist" in "\n".join(without.scope_lines())

    report = cycle(double, mem0_database, tmp_path / "database")
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=alice", "user_id=carol"}
    assert report.discovery["cloud"]["complete"] is True
    assert "cloud: discovered 2 users through database" in report.scope_lines()
    carol = (tmp_path / "database" / "backup" / "carol.pmm.jsonl").read_text().splitlines()
    assert json.loads(carol[1])["content"] == "carol rides a bike"


def _backdated_add(double: Mem0ServerDouble, user: str, when: str) -> str:
    with double.lock:
        added = double.memory.add(
            [{"role": "user", "content": f"{user} remembers {when}"}],
            user_id=user,
            metadata={"created_at": when},
            infer=False,
        )
    return str(added["results"][0]["id"])


def _delete(double: Mem0ServerDouble, memory_id: str) -> None:
    with double.lock:
        double.memory.delete(memory_id)


def _edit(double: Mem0ServerDouble, memory_id: str, text: str) -> None:
    with double.lock:
        double.memory.update(memory_id, text)


def test_the_probe_sees_a_delete_with_a_backdated_add_that_entities_counts_hide(
    mem0_database: str,
) -> None:
    """Within the scan: alice loses a memory from the middle and gains one backdated between
    her oldest and newest: the count, oldest and newest /entities answers stay as they were."""
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    ids = double.insert_many(["first", "middle", "last"], user_id="alice")
    double.insert_many(["bob's"], user_id="bob")
    server = provider(double, mem0_database)
    entities = ServerEntitiesProbe("cloud", server, USER, {})
    database = ServerDatabaseProbe("cloud", server, USER, {})
    before_entities = entities.ask({}).tokens
    before_database = database.ask({}).tokens

    oldest = double.memory.vector_store.get(ids[0]).payload["created_at"]
    between = (datetime.fromisoformat(oldest) + timedelta(microseconds=1)).isoformat()
    _delete(double, ids[1])
    _backdated_add(double, "alice", between)

    assert entities.ask(before_entities).scopes == set()  # hidden from /entities' counts
    assert database.ask(before_database).scopes == {"user_id=alice"}


def test_past_the_scan_the_probe_flags_exactly_the_users_with_an_edit_a_delete_or_a_backdated_add(
    mem0_database: str,
) -> None:
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    past_the_scan(double)
    edited = double.insert_many(["dave's"], user_id="dave")[0]
    deleted = double.insert_many(["erin's"], user_id="erin")[0]
    double.insert_many(["frank's"], user_id="frank")
    double.insert_many(["quiet"], user_id="gina")
    server = provider(double, mem0_database)
    entities = ServerEntitiesProbe("cloud", server, USER, {})
    database = ServerDatabaseProbe("cloud", server, USER, {})
    first = database.ask({})
    assert len(first.tokens) == 7 and first.scopes == set(first.tokens)  # all new

    _edit(double, edited, "dave's, edited")
    _delete(double, deleted)
    _backdated_add(double, "frank", "2020-01-01T00:00:00+00:00")
    _backdated_add(double, "carol", "2020-01-01T00:00:00+00:00")  # beyond the scan too

    with pytest.raises(MemsyncError, match=r"more than\s+GET /entities scans"):
        entities.ask({})
    flags = database.ask(first.tokens)
    assert flags.scopes == {"user_id=dave", "user_id=erin", "user_id=frank", "user_id=carol"}
    assert flags.tokens["user_id=erin"] == "0/0"  # gone from the table: no memory left
    assert database.ask(flags.tokens).scopes == set()  # quiet again once kept


def test_nothing_can_be_written_through_memsyncs_connection(mem0_database: str) -> None:
    """The superuser's URL, so no grant is what stops it: the session is read-only."""
    database = ServerDatabase("cloud", Secret(mem0_database, "$MEM0_DB_URL"))
    database.census(USER, {})
    conn = database._connection()
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        conn.execute("INSERT INTO memories (id, payload) VALUES (gen_random_uuid(), '{}')")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), conn.transaction():
        conn.execute("DELETE FROM memories")
    assert conn.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
    database.close()


def test_every_transaction_is_read_only_even_where_the_sessions_default_is_lost(
    mem0_database: str,
) -> None:
    """The second safeguard alone: a session whose read-only default did not hold (a pooler that
    drops the startup options, a role's own setting) still cannot write, because every
    transaction memsync opens is READ ONLY."""
    database = ServerDatabase("cloud", Secret(mem0_database, "$MEM0_DB_URL"))
    database.census(USER, {})
    conn = database._connection()
    conn.execute("SET default_transaction_read_only = off")  # the first safeguard gone
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), conn.transaction():
        conn.execute("DELETE FROM memories")
    database.close()


def test_a_role_granted_select_alone_is_enough(postgres: Any, mem0_database: str) -> None:
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    double.insert_many(["alice likes tea"], user_id="alice")
    dbname = mem0_database.rsplit("/", 1)[1]
    found = discover_scopes(provider(double, postgres.reader(dbname)), USER, {})
    assert {s.label for s in found.scopes} == {"user_id=alice"} and found.complete


def test_pairs_and_fixed_keys_come_from_the_same_one_query(mem0_database: str) -> None:
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    double.insert_many(["a"], user_id="alice", agent_id="bot")
    double.insert_many(["b"], user_id="alice", agent_id="helper")
    double.insert_many(["c"], user_id="bob", agent_id="bot")
    double.insert_many(["d"], agent_id="bot")  # no user: no pair
    server = provider(double, mem0_database, {"user_id": "*", "agent_id": "*"})
    pairs = discover_scopes(server, ("user_id", "agent_id"), {})
    assert pairs.scopes == {
        Scope.of({"user_id": "alice", "agent_id": "bot"}),
        Scope.of({"user_id": "alice", "agent_id": "helper"}),
        Scope.of({"user_id": "bob", "agent_id": "bot"}),
    }
    with_bot = discover_scopes(server, USER, {"agent_id": "bot"})
    assert {s.label for s in with_bot.scopes} == {"user_id=alice", "user_id=bob"}
    one = ServerDatabaseProbe("cloud", server, (), {"user_id": "bob"}).ask({})
    assert set(one.tokens) == {""} and one.tokens[""].startswith("1/")


def test_a_wrong_password_is_one_line_that_carries_neither_the_url_nor_the_password(
    postgres: Any, mem0_database: str
) -> None:
    dbname = mem0_database.rsplit("/", 1)[1]
    wrong = postgres.url(dbname, password="s3cret-Pa55word")
    database = ServerDatabase("cloud", Secret(wrong, "$MEM0_DB_URL"))
    with pytest.raises(ProviderError) as caught:
        database.census(USER, {})
    message = str(caught.value)
    assert "s3cret-Pa55word" not in message and wrong not in message
    assert "$MEM0_DB_URL" in message and "password authentication failed" in message
    assert "\n" not in message


def test_a_database_that_does_not_answer_is_one_line() -> None:
    """libpq's error for a refused connection runs over two lines ("Is the server running on
    that host...?"): the first is said, with where the URL comes from."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://memsync:s3cret-Pa55word@127.0.0.1:{port}/mem0"
    database = ServerDatabase("cloud", Secret(url, "$MEM0_DB_URL"))
    with pytest.raises(ProviderError) as caught:
        database.census(USER, {})
    message = str(caught.value)
    assert "Connection refused" in message and "$MEM0_DB_URL" in message
    assert "\n" not in message and "s3cret-Pa55word" not in message


def test_a_password_libpq_splits_into_the_host_is_not_printed_in_any_part(
    postgres: Any, mem0_database: str
) -> None:
    """A password holding an unencoded '@' (as a generated one may): libpq takes what follows
    it for the host and its error quotes that host, the password's tail with it."""
    dbname = mem0_database.rsplit("/", 1)[1]
    password = "Pa55@word-s3cret"
    postgres.execute(f"CREATE ROLE at_sign LOGIN PASSWORD '{password}'")
    url = postgres.url(dbname, "at_sign", password)  # written as a user pastes it: unencoded
    database = ServerDatabase("cloud", Secret(url, "$MEM0_DB_URL"))
    with pytest.raises(MemsyncError) as caught:
        database.census(USER, {})
    message = str(caught.value)
    for part in (password, "word-s3cret", "Pa55"):
        assert part not in message, message
    assert "$MEM0_DB_URL" in message and "\n" not in message


def test_a_url_libpq_cannot_read_is_a_config_error_without_the_password() -> None:
    url = "postgresql://memsync:s3cret-Pa55word@[::1/mem0"  # libpq quotes the whole URL back
    database = ServerDatabase("cloud", Secret(url, "$MEM0_DB_URL"))
    with pytest.raises(ConfigError) as caught:
        database.census(USER, {})
    assert "s3cret-Pa55word" not in str(caught.value) and "$MEM0_DB_URL" in str(caught.value)


def test_a_table_that_is_not_there_names_the_key_to_set(postgres: Any) -> None:
    url = postgres.url(postgres.create_database())
    database = ServerDatabase("cloud", Secret(url, "$MEM0_DB_URL"), "memories")
    with pytest.raises(ConfigError, match="database_table"):
        database.census(USER, {})


def test_a_census_counts_expired_memories_as_the_listing_does(mem0_database: str) -> None:
    """Expiry is not deletion: the server lists expired memories with show_expired, and the
    table holds them: the counts agree, so a listing never contradicts the probe."""
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    with double.lock:
        double.memory.add(
            [{"role": "user", "content": "gone soon"}],
            user_id="alice",
            infer=False,
            expiration_date=(datetime.now(UTC) - timedelta(days=1)).date().isoformat(),
        )
    server = provider(double, mem0_database)
    token = ServerDatabaseProbe("cloud", server, USER, {}).ask({}).tokens["user_id=alice"]
    assert token.startswith("1/")
    assert (
        ServerDatabaseProbe("cloud", server, USER, {}).credible("user_id=alice", token, 1) is None
    )
    assert "is database_url the server's own database" in (
        ServerDatabaseProbe("cloud", server, USER, {}).credible("user_id=alice", token, 2) or ""
    )
