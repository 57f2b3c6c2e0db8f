"""Scope discovery over HTTP: the Platform's ``GET /v1/entities/`` and the server's ``GET /entities``.

Both run against the in-process doubles (tests/doubles), through a real staging store, into a
pmm-dir with one file per discovered scope. Mem0's own ``MemoryClient`` must read the
Platform double's entity list, or the double is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.orchestration.scopes.report import ScopedCycleReport
from memsync.providers.base import Provider
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_platform_app import Mem0PlatformDouble

pytest.importorskip("mem0", reason="the server double serves a real mem0 Memory")
from tests.doubles.mem0_server_app import Mem0ServerDouble

KEY = "m0-platform-secret-0123456789"
ADMIN = "admin-secret-0123456789"
USER_KEY = "m0sk_alice-only-0123456789"
FAST = RetryPolicy(attempts=2, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)


def config_for(kind: str, scope: str, backup: Path) -> Any:
    base_url = "https://mem0.test"
    return parse_config(
        f"""
[sync]
active = "cloud"
[providers.cloud]
type = "{kind}"
base_url = "{base_url}"
scope = {scope}
[providers.backup]
type = "pmm-dir"
path = "{backup}"
direction = "push"
"""
    )


def run(config: Any, tmp_path: Path, cloud: Provider) -> ScopedCycleReport:
    backup = PmmDirProvider("backup", config.providers["backup"].path)
    with StagingStore.open(tmp_path / "staging.db") as store:
        return run_scoped_cycle(config, store, {"cloud": cloud, "backup": backup}, SyncOptions())


def backup_texts(path: Path) -> dict[str, set[str]]:
    found = {}
    for file in sorted(path.glob("*.pmm.jsonl")):
        lines = file.read_text(encoding="utf-8").splitlines()[1:]
        found[file.name] = {json.loads(line)["content"] for line in lines}
    return found


# --- the Platform ---------------------------------------------------------------------------


@pytest.fixture
def platform() -> Mem0PlatformDouble:
    double = Mem0PlatformDouble(api_key=KEY)
    double.insert("alice likes tea", user_id="alice")
    double.insert("alice has a cat", user_id="alice")
    double.insert("bob rides a bike", user_id="bob")
    double.insert("the bot's own note", agent_id="support-bot")
    double.insert("bob asked the bot", user_id="bob", agent_id="support-bot")
    return double


def platform_provider(double: Mem0PlatformDouble, scope: dict[str, str]) -> Mem0PlatformProvider:
    return Mem0PlatformProvider(
        "cloud",
        scope,
        secret=Secret(KEY, "$MEM0_API_KEY"),
        base_url="https://mem0.test",
        transport=double.transport(),
        retry=FAST,
        sleep=lambda s: None,
    )


def test_mem0s_own_client_reads_the_doubles_entity_list(platform: Mem0PlatformDouble) -> None:
    from mem0 import MemoryClient

    http = httpx.Client(transport=platform.transport())
    client = MemoryClient(api_key=KEY, host="https://mem0.test", client=http)
    entities = client.users()["results"]
    assert {(e["type"], e["name"]) for e in entities} == {
        ("user", "alice"),
        ("user", "bob"),
        ("agent", "support-bot"),
    }
    # The fields upstream's OpenAPI requires since mem0 5f77d86ca, which removed
    # total_memories "against live API behavior": nothing of memsync's may count on it.
    required = {"id", "name", "created_at", "updated_at", "owner", "type"}
    assert all(required <= set(e) and "total_memories" not in e for e in entities)


def test_platform_users_are_discovered_from_entities_and_each_synced(
    platform: Mem0PlatformDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM0_API_KEY", KEY)
    platform.entities_page_size = 1  # the client must follow `next` to see every entity
    config = config_for("mem0-platform", '{ user_id = "*" }', tmp_path / "backup")
    report = run(config, tmp_path, platform_provider(platform, {"user_id": "*"}))
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=alice", "user_id=bob"}  # the agent is no user
    assert backup_texts(tmp_path / "backup") == {
        "alice.pmm.jsonl": {"alice likes tea", "alice has a cat"},
        "bob.pmm.jsonl": {"bob rides a bike", "bob asked the bot"},
    }


def test_platform_with_a_fixed_key_finds_only_the_pairs_holding_memories(
    platform: Mem0PlatformDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM0_API_KEY", KEY)
    scope = {"user_id": "*", "agent_id": "support-bot"}
    config = config_for(
        "mem0-platform", '{ user_id = "*", agent_id = "support-bot" }', tmp_path / "backup"
    )
    report = run(config, tmp_path, platform_provider(platform, scope))
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=bob"}
    assert "cloud[user_id=bob]" in report.providers
    assert backup_texts(tmp_path / "backup") == {"bob.pmm.jsonl": {"bob asked the bot"}}


# --- the self-hosted server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Mem0ServerDouble:
    double = Mem0ServerDouble(api_key=ADMIN, user_keys={USER_KEY: "member"})
    for user, text in (("alice", "alice likes tea"), ("bob", "bob rides a bike")):
        double.memory.add([{"role": "user", "content": text}], user_id=user, infer=False)
    double.memory.add([{"role": "user", "content": "a run"}], run_id="r1", infer=False)
    return double


def server_provider(double: Mem0ServerDouble, key: str) -> Mem0ServerProvider:
    return Mem0ServerProvider(
        "cloud",
        "https://mem0.test",
        {"user_id": "*"},
        secret=Secret(key, "$MEM0_SERVER_KEY"),
        transport=double.transport(),
        retry=FAST,
        sleep=lambda s: None,
    )


def test_server_admin_key_discovers_scopes_from_the_listing_without_ids(
    server: Mem0ServerDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM0_SERVER_KEY", ADMIN)
    config = config_for("mem0-server", '{ user_id = "*" }', tmp_path / "backup")
    config = config.model_copy(
        update={
            "providers": {
                **config.providers,
                "cloud": config.providers["cloud"].model_copy(
                    update={"api_key_env": "MEM0_SERVER_KEY"}
                ),
            }
        }
    )
    report = run(config, tmp_path, server_provider(server, ADMIN))
    assert report.exit_code == 0, report.as_dict()
    assert report.discovery["cloud"]["scopes"] == 2
    assert backup_texts(tmp_path / "backup") == {
        "alice.pmm.jsonl": {"alice likes tea"},
        "bob.pmm.jsonl": {"bob rides a bike"},
    }


def test_server_member_key_discovers_through_entities_as_upstream_allows(
    server: Mem0ServerDouble, tmp_path: Path
) -> None:
    """Upstream's GET /entities answers any valid key; only the admin listing needs an admin.
    (This test used to expect a per-user key to be refused: upstream has no such key.)"""
    config = config_for("mem0-server", '{ user_id = "*" }', tmp_path / "backup")
    report = run(config, tmp_path, server_provider(server, USER_KEY))
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=alice", "user_id=bob"}
    assert USER_KEY not in json.dumps(report.as_dict())


def test_every_scope_talks_through_the_providers_one_client_closed_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client per scope cost a thousand users a minute: each loads the system's certificates
    (60 ms) and opens its own connections. One client, one pool, closed when the run ends."""
    from memsync.providers.http.client import HttpClient

    double = Mem0ServerDouble(api_key=ADMIN)
    for number in range(12):
        double.insert_many([f"user {number} likes tea"], user_id=f"u{number:02d}")
    made: list[HttpClient] = []
    real = HttpClient.__init__

    def counted(self: HttpClient, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(HttpClient, "__init__", counted)
    config = config_for("mem0-server", '{ user_id = "*" }', tmp_path / "backup")
    report = run(config, tmp_path, server_provider(double, ADMIN))
    assert report.exit_code == 0, report.as_dict()
    assert len(report.scopes) == 12 and len(backup_texts(tmp_path / "backup")) == 12
    assert len(made) == 1
    assert made[0]._client.is_closed


def test_a_teams_listings_are_read_ahead_a_few_at_a_time_each_once(tmp_path: Path) -> None:
    """Each user's listing is a round trip: read one after the other, a thousand of them added
    a thousand round trips to the local work. They are read a few scopes ahead, at once."""
    import asyncio

    double = Mem0ServerDouble(api_key=ADMIN)
    for number in range(12):
        double.insert_many([f"user {number} likes tea"], user_id=f"u{number:02d}")
    double.faults.latency = 0.05
    inner = double.app
    flight = {"now": 0, "most": 0}

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        listing = scope.get("path") == "/memories" and scope.get("method") == "GET"
        if listing:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        try:
            await inner(scope, receive, send)
        finally:
            if listing:
                flight["now"] -= 1
        await asyncio.sleep(0)

    double.app = counting
    config = config_for("mem0-server", '{ user_id = "*" }', tmp_path / "backup")
    report = run(config, tmp_path, server_provider(double, ADMIN))
    assert report.exit_code == 0, report.as_dict()
    texts = backup_texts(tmp_path / "backup")
    assert texts == {f"u{n:02d}.pmm.jsonl": {f"user {n} likes tea"} for n in range(12)}
    listings = [s for s in double.faults.seen if s.path == "/memories" and s.method == "GET"]
    assert sorted(s.query["user_id"][0] for s in listings) == [f"u{n:02d}" for n in range(12)]
    assert flight["most"] > 1
