"""A Mem0 server's history comes along into a new mnem store: from its PostgreSQL ``history``
table (upstream PR #6968's, in the real PostgreSQL the tests start) in one read-only query, or,
without it, through ``GET /memories/{id}/history`` on the provider's lanes.

The server double serves upstream's routes over a real ``mem0.Memory`` whose memories live in a
``memories`` table and, where asked, whose history lives in a ``history`` table of a second
database (``mem0_app``), written by Mem0's own add, update and delete as the REST routes call
them. The reader role memsync uses may read that one table and nothing else.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsync.base.records import Record
from memsync.base.secrets import Secret
from memsync.orchestration.migrate import migrate
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mem0.server_database import ServerDatabase
from memsync.providers.mem0.server_history import ServerHistory
from memsync.providers.mnem.on_demand import OnDemandMnemProvider
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.mnem_sdk import real_sdk
from tests.postgres_server import Postgres, history_table

ADMIN = "admin-key-0123456789abcdef"
FAST = RetryPolicy(attempts=2, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)


class Team:
    """alice's memories written through the server's REST routes, as her agents write them."""

    def __init__(self, double: Mem0ServerDouble) -> None:
        self.client = httpx.Client(
            transport=double.transport(), base_url="https://mem0.test", headers={"X-API-Key": ADMIN}
        )

    def add(self, text: str) -> str:
        body = {"messages": [{"role": "user", "content": text}], "user_id": "alice", "infer": False}
        answer = self.client.post("/memories", json=body).raise_for_status().json()
        results = answer["results"] if isinstance(answer, dict) else answer
        return str(results[0]["id"])

    def edit(self, memory_id: str, text: str) -> None:
        self.client.put(f"/memories/{memory_id}", json={"text": text}).raise_for_status()

    def delete(self, memory_id: str) -> None:
        self.client.delete(f"/memories/{memory_id}").raise_for_status()


def provider(double: Mem0ServerDouble, history: ServerHistory | None = None) -> Mem0ServerProvider:
    return Mem0ServerProvider(
        "cloud",
        "https://mem0.test",
        {"user_id": "alice"},
        secret=Secret(ADMIN, "$MEM0_SERVER_KEY"),
        transport=double.transport(),
        retry=FAST,
        sleep=lambda s: None,
        history=history,
    )


def store(path: Path) -> OnDemandMnemProvider:
    return OnDemandMnemProvider("agent", path, create=True, config_name="agent", sdk=real_sdk())


def history_requests(double: Mem0ServerDouble) -> int:
    return sum(1 for seen in double.faults.seen if seen.path.endswith("/history"))


def fill(double: Mem0ServerDouble) -> Record:
    """Adds, edits and a delete through the routes; the deleted one as memsync saw it first."""
    team = Team(double)
    team.delete(team.add("a secret"))  # deleted before memsync ever listed it: scope unknown
    ids = {text: team.add(text) for text in ("likes tea", "lives in Lisbon", "works at Initech")}
    source = provider(double)
    with source:
        (seen,) = [r for p in source.listing().pages() for r in p.records if "Initech" in r.content]
    team.edit(ids["likes tea"], "likes matcha")
    team.edit(ids["lives in Lisbon"], "lives in Porto")
    team.delete(ids["works at Initech"])
    return seen


def nodes(path: Path) -> dict[str, Any]:
    import gc

    gc.collect()
    opened = real_sdk().open(str(path))
    try:
        return {k: v.to_dict() for k, v in opened.working_memory().items()}
    finally:
        del opened
        gc.collect()


def past_texts(path: Path) -> list[set[str]]:
    import gc

    gc.collect()
    opened = real_sdk().open(str(path))
    try:
        chain = reversed(opened.log(first_parent=True))
        return [{n.content for n in opened.state_at(c.id).values()} for c in chain]
    finally:
        del opened
        gc.collect()


@pytest.fixture
def app_database(postgres: Postgres) -> Iterator[tuple[str, str]]:
    """The server's app database (``mem0_app``) holding PR #6968's history table: its
    superuser URL and the URL of a role granted SELECT on ``history`` alone."""
    name = postgres.create_database()
    url = postgres.url(name)
    history_table(url)
    yield url, postgres.reader(name, "history")


def test_the_servers_history_table_is_read_in_one_query_and_the_past_comes_along(
    mem0_database: str, app_database: tuple[str, str], tmp_path: Path
) -> None:
    app_url, reader_url = app_database
    double = Mem0ServerDouble(
        api_key=ADMIN, database_url=mem0_database, history_database_url=app_url
    )
    seen = fill(double)
    database = ServerDatabase("cloud", Secret(reader_url, "$MEM0_HISTORY_URL"), "history")
    before = history_requests(double)
    report = migrate(
        provider(double, ServerHistory("cloud", database=database)),
        store(tmp_path / "agent"),
        history=True,
        gone=[seen],
    )
    assert history_requests(double) == before  # no route asked: the table answered
    assert report.history is not None and report.history.written
    assert report.history.source == "the database named by $MEM0_HISTORY_URL (table history)"
    assert report.history.memories == 3
    assert report.history.reasons == {"deleted before the move, scope unknown": 1}
    plain = migrate(provider(double), store(tmp_path / "plain"), history=False)
    assert plain.imported == 2 and nodes(tmp_path / "agent") == nodes(tmp_path / "plain")
    states = past_texts(tmp_path / "agent")
    assert any({"likes tea", "lives in Lisbon", "works at Initech"} <= s for s in states)
    assert any("lives in Porto" in s and "works at Initech" not in s for s in states)
    assert states[-1] == {"likes matcha", "lives in Porto"}


def test_without_the_grant_on_history_the_route_is_read_instead_and_the_report_says_why(
    mem0_database: str, app_database: tuple[str, str], postgres: Postgres, tmp_path: Path
) -> None:
    app_url, _ = app_database
    double = Mem0ServerDouble(
        api_key=ADMIN, database_url=mem0_database, history_database_url=app_url
    )
    seen = fill(double)
    no_grant = postgres.reader(app_url.rsplit("/", 1)[1], "messages")  # another table only
    database = ServerDatabase("cloud", Secret(no_grant, "$MEM0_HISTORY_URL"), "history")
    before = history_requests(double)
    report = migrate(
        provider(double, ServerHistory("cloud", database=database)),
        store(tmp_path / "agent"),
        history=True,
        gone=[seen],
    )
    assert report.history is not None and report.history.written
    assert report.history.source.startswith("the server's route GET /memories/{id}/history")
    assert "may not read table 'history'" in report.history.source
    assert no_grant.split("@")[0].split(":")[-1] not in report.history.source  # no password
    assert history_requests(double) - before == 3 == report.history.requests


class InFlight:
    """An ASGI middleware counting the history requests the server is serving at once."""

    def __init__(self, app: Any) -> None:
        self.app, self.now, self.peak = app, 0, 0
        self.lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        counted = scope["type"] == "http" and scope["path"].endswith("/history")
        with self.lock if counted else contextlib.nullcontext():
            if counted:
                self.now += 1
                self.peak = max(self.peak, self.now)
        try:
            await self.app(scope, receive, send)
        finally:
            if counted:
                with self.lock:
                    self.now -= 1


def test_without_a_database_the_route_is_read_on_the_providers_lanes(tmp_path: Path) -> None:
    double = Mem0ServerDouble(api_key=ADMIN)
    team = Team(double)
    for n in range(24):
        team.edit(team.add(f"fact {n}"), f"fact {n}, revised")
    double.faults.latency = 0.05  # each request waits: the lanes overlap the waits
    counting = InFlight(double.app)
    double.app = counting
    source = provider(double)
    report = migrate(source, store(tmp_path / "agent"), history=True)
    assert report.history is not None and report.history.written
    assert report.history.requests == 24 and report.history.reasons == {}
    assert report.history.versions == 48  # every add and every edit
    assert counting.peak == source.concurrency > 1  # read ahead, a lane each
