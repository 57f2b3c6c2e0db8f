"""Discovering a team on a self-hosted Mem0 server: ``GET /entities`` where the server has it
(any valid key), the admin listing where it has not, "too old" where it has neither, and
never "0 scopes" from an answer memsync cannot read. Through a real scoped cycle into a
pmm-dir, against the double that answers as upstream (8d5b786) does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.orchestration.scopes.report import ScopedCycleReport
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mem0.server_entities import SCAN_LIMIT, EntityCensus, parse_entities
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_server_app import Mem0ServerDouble

ADMIN = "admin-key-0123456789abcdef"
MEMBER = "m0sk_member-key-0123456789abcdef"
FAST = RetryPolicy(attempts=2, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)


def team(**options: Any) -> Mem0ServerDouble:
    double = Mem0ServerDouble(api_key=ADMIN, user_keys={MEMBER: "member"}, **options)
    double.insert_many(["alice likes tea", "alice has a cat"], user_id="alice")
    double.insert_many(["bob rides a bike"], user_id="bob")
    double.insert_many(["bob asked the bot"], user_id="bob", agent_id="support-bot")
    double.insert_many(["the bot's own note"], agent_id="support-bot")
    return double


def config(tmp_path: Path, scope: str = '{ user_id = "*" }') -> Any:
    return parse_config(
        f"""
[sync]
active = "cloud"
[providers.cloud]
type = "mem0-server"
base_url = "https://mem0.test"
api_key_env = "MEM0_SERVER_KEY"
scope = {scope}
[providers.backup]
type = "pmm-dir"
path = "{tmp_path / "backup"}"
direction = "push"
"""
    )


def provider(double: Mem0ServerDouble, key: str, scope: dict[str, str] | None = None) -> Any:
    return Mem0ServerProvider(
        "cloud",
        "https://mem0.test",
        scope or {"user_id": "*"},
        secret=Secret(key, "$MEM0_SERVER_KEY"),
        transport=double.transport(),
        retry=FAST,
        sleep=lambda s: None,
    )


def run(
    double: Mem0ServerDouble,
    tmp_path: Path,
    key: str = ADMIN,
    scope: str = '{ user_id = "*" }',
    scope_ids: dict[str, str] | None = None,
) -> ScopedCycleReport:
    cfg = config(tmp_path, scope)
    backup = PmmDirProvider("backup", cfg.providers["backup"].path)
    cloud = provider(double, key, scope_ids)
    with StagingStore.open(tmp_path / "staging.db") as store:
        return run_scoped_cycle(cfg, store, {"cloud": cloud, "backup": backup}, SyncOptions())


def backup_texts(tmp_path: Path) -> dict[str, set[str]]:
    found = {}
    for file in sorted((tmp_path / "backup").glob("*.pmm.jsonl")):
        lines = file.read_text(encoding="utf-8").splitlines()[1:]
        found[file.name] = {json.loads(line)["content"] for line in lines}
    return found


@pytest.mark.parametrize("key", [ADMIN, MEMBER], ids=["admin-key", "member-key"])
def test_any_valid_key_discovers_the_users_through_entities(key: str, tmp_path: Path) -> None:
    double = team()
    report = run(double, tmp_path, key)
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=alice", "user_id=bob"}  # the agent is no user
    assert report.discovery["cloud"] == {
        "state": "ok",
        "scopes": 2,
        "complete": True,
        "note": None,
        "source": "GET /entities",
        "noun": "users",
    }
    assert backup_texts(tmp_path) == {
        "alice.pmm.jsonl": {"alice likes tea", "alice has a cat"},
        "bob.pmm.jsonl": {"bob rides a bike", "bob asked the bot"},
    }
    without_ids = [
        s for s in double.faults.requests("GET", "/memories") if "user_id" not in s.query
    ]
    assert without_ids == []  # the admin-only listing was never needed
    assert len(double.faults.requests("GET", "/entities")) == 1
    assert len(double.faults.requests("GET", "/openapi.json")) == 1  # once, not per scope


def test_a_wrong_key_is_reported_as_wrong_once_with_exit_5(tmp_path: Path) -> None:
    double = team()
    assert run(double, tmp_path).exit_code == 0  # both scopes are now known to staging
    before = len(double.faults.seen)
    report = run(double, tmp_path, "m0sk_not-a-key-of-this-server-0000")
    assert report.exit_code == 5
    (failure,) = report.provider_failures()
    line = failure.line()
    assert line.startswith("cloud: https://mem0.test refused the key from $MEM0_SERVER_KEY")
    assert "(HTTP 401: Invalid API key.)" in line and "wrong, expired or revoked" in line
    assert "admin" not in line.replace("ADMIN_API_KEY", "")  # not "only the admin key may..."
    assert "cloud: cloud" not in line and "\n" not in line
    asked = [(s.method, s.path) for s in double.faults.seen[before:]]
    assert asked == [("GET", "/openapi.json"), ("GET", "/entities")]  # no scope asked again


def test_a_server_without_entities_falls_back_to_the_admin_listing(tmp_path: Path) -> None:
    double = team(has_entities=False)
    report = run(double, tmp_path)
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=alice", "user_id=bob"}
    assert double.faults.requests("GET", "/entities") == []  # the schema said it has none


def test_without_entities_a_member_key_is_told_it_needs_an_admin(tmp_path: Path) -> None:
    double = team(has_entities=False)
    report = run(double, tmp_path, MEMBER)
    assert report.exit_code == 5
    (failure,) = report.provider_failures()
    assert "(HTTP 403: Admin role required to list all memories.)" in failure.line()
    assert "no GET /entities" in failure.line() and "admin" in failure.line()


def test_a_server_with_neither_is_too_old_and_says_how_to_name_scopes(tmp_path: Path) -> None:
    double = team(has_entities=False, lists_without_ids=False)
    report = run(double, tmp_path)
    assert report.exit_code == 5
    (failure,) = report.provider_failures()
    line = failure.line()
    assert "too old" in line and "At least one identifier is required." in line
    assert 'scope = { user_id = "alice" }' in line


def test_null_rows_are_an_error_naming_the_field_never_zero_scopes(tmp_path: Path) -> None:
    """Upstream on Qdrant: the admin listing answers rows whose every field is null and
    /entities answers []. memsync said "0 scope(s) discovered" and exited 0."""
    double = team(qdrant_list_bug=True)
    report = run(double, tmp_path)
    assert report.exit_code == 5
    assert report.discovery["cloud"]["state"] == "error"
    (failure,) = report.provider_failures()
    assert "row 0, has no id" in failure.line() and "every field is null" in failure.line()
    assert not (tmp_path / "backup").exists()


def test_an_empty_server_is_empty_once_the_listing_agrees(tmp_path: Path) -> None:
    double = Mem0ServerDouble(api_key=ADMIN)
    report = run(double, tmp_path)
    assert report.exit_code == 0, report.as_dict()
    assert report.discovery["cloud"]["complete"] and report.scopes == {}
    asked = [s.query.get("top_k") for s in double.faults.requests("GET", "/memories")]
    assert asked == [["1"]]  # [] from /entities, confirmed by one row asked of the listing


def test_a_wildcard_beside_a_fixed_key_finds_the_pairs_holding_memories(tmp_path: Path) -> None:
    double = team()
    report = run(
        double,
        tmp_path,
        scope='{ user_id = "*", agent_id = "support-bot" }',
        scope_ids={"user_id": "*", "agent_id": "support-bot"},
    )
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=bob"}
    assert backup_texts(tmp_path) == {"bob.pmm.jsonl": {"bob asked the bot"}}


def test_entities_past_the_scan_cap_make_discovery_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server scans at most 10,000 memories; here both sides count to 4 instead."""
    from memsync.providers.mem0 import server_entities

    double = team()
    double.entity_scan_limit = 4
    monkeypatch.setattr(server_entities, "SCAN_LIMIT", 4)
    report = run(double, tmp_path)
    found = report.discovery["cloud"]
    assert found["state"] == "partial" and not found["complete"]
    assert "at most 4 memories" in found["note"]


def test_the_census_is_complete_only_when_every_count_together_stays_below_the_cap() -> None:
    def census(*totals: int) -> EntityCensus:
        rows = [{"id": f"u{n}", "type": "user", "total_memories": t} for n, t in enumerate(totals)]
        return EntityCensus(tuple(parse_entities("s", rows)))

    assert census(SCAN_LIMIT - 1).complete
    assert not census(SCAN_LIMIT).complete  # it may have stopped at the cap
    assert not census(6_000, 4_000).complete
    assert census().complete and census().note is None
