"""Wildcard scopes end to end: a real Mem0 store (mem0ai offline) with several users, synced
through ``user_id = "*"`` into a pmm-dir and into one real mnem store per user (path template).

What a team moving to mnem would check: every user gets a store of their own holding exactly
their memories; a user added later gets a store on the next cycle; a user whose memories all
disappear is refused, not wiped elsewhere; a hostile user id is refused and written nowhere
while the others still sync; and status, verify, log and sync --json speak per scope.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import mnem  # the real SDK: a missing build is an error, not a skip
import pytest

from memsync.base.errors import RefusedError
from tests.conftest import write_config
from tests.mem0_fixtures import DIMS, Mem0App, mem0_payload

USERS = {"alice": 3, "bob": 2, "carol": 4}


def configure(home: Path, *, create: bool = True, extra: str = "") -> None:
    stores = home / "stores"
    write_config(
        home,
        f"""
[sync]
active = "mem0"

[providers.mem0]
type = "mem0-oss"
scope = {{ user_id = "*" }}
embedder = "hash"
mem0_config = {{ vector_store = {{ provider = "qdrant", config = {{ collection_name = "team", path = "{stores / "qdrant"}", embedding_model_dims = {DIMS} }} }}, history_db_path = "{stores / "history.db"}" }}

[providers.agents]
type = "mnem"
path = "{home / "agents"}/{{user_id}}/memory"
create = {"true" if create else "false"}

[providers.backup]
type = "pmm-dir"
path = "{home / "backup"}"
direction = "push"
{extra}
""",
    )


def insert(memory: Any, user: str, texts: list[str]) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in texts]
    memory.vector_store.insert(
        vectors=[[1.0] + [0.0] * (DIMS - 1) for _ in texts],
        payloads=[mem0_payload(text, user_id=user) for text in texts],
        ids=ids,
    )
    return ids


def texts_for(user: str, count: int) -> list[str]:
    return [f"{user} memory {i}" for i in range(count)]


def mnem_texts(path: Path) -> set[str]:
    store = mnem.open(str(path))
    try:
        return {node.content for node in store.working_memory().values()}
    finally:
        del store
        import gc

        gc.collect()


def pmm_texts(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return {json.loads(line)["content"] for line in lines}


@pytest.fixture
def team(home: Path) -> Path:
    configure(home)
    with Mem0App(home) as memory:
        for user, count in USERS.items():
            insert(memory, user, texts_for(user, count))
    return home


def sync_json(cli: Any, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("sync", "--json", *args)
    return result.exit_code, json.loads(result.output)


def test_three_users_each_get_their_own_mnem_store_and_pmm_file(team: Path, cli: Any) -> None:
    code, report = sync_json(cli)
    assert code == 0, report
    assert set(report["scopes"]) == {f"user_id={u}" for u in USERS}
    assert all(s["state"] == "ok" for s in report["scopes"].values())
    for user, count in USERS.items():
        assert mnem_texts(team / "agents" / user / "memory") == set(texts_for(user, count))
        assert pmm_texts(team / "backup" / f"{user}.pmm.jsonl") == set(texts_for(user, count))
    assert report["discovery"]["mem0"]["scopes"] == 3
    # A second cycle is quiet: nothing crosses scopes, nothing is rewritten.
    code, again = sync_json(cli)
    assert code == 0 and again["actions_total"] == 0
    assert sum(again["replayed"].values()) == 0


def test_a_user_added_later_gets_a_store_on_the_next_cycle(team: Path, cli: Any) -> None:
    assert cli("sync").exit_code == 0
    assert not (team / "agents" / "dave").exists()
    with Mem0App(team) as memory:
        insert(memory, "dave", ["dave likes tea"])
    code, report = sync_json(cli)
    assert code == 0, report
    assert report["scopes"]["user_id=dave"]["state"] == "ok"
    assert mnem_texts(team / "agents" / "dave" / "memory") == {"dave likes tea"}
    assert pmm_texts(team / "backup" / "dave.pmm.jsonl") == {"dave likes tea"}


def test_a_user_whose_memories_all_disappear_is_refused_not_wiped(team: Path, cli: Any) -> None:
    assert cli("sync").exit_code == 0
    with Mem0App(team) as memory:
        for item in memory.get_all(filters={"user_id": "bob"}, top_k=100)["results"]:
            memory.delete(item["id"])
    code, report = sync_json(cli)
    assert code == RefusedError.exit_code
    bob = report["scopes"]["user_id=bob"]
    assert bob["state"] == "refused" and bob["discovered"] is False
    assert "no longer discovered" in bob["error"]
    # Bob's memories are intact in his mnem store and his backup; the others synced.
    assert mnem_texts(team / "agents" / "bob" / "memory") == set(texts_for("bob", 2))
    assert pmm_texts(team / "backup" / "bob.pmm.jsonl") == set(texts_for("bob", 2))
    assert report["scopes"]["user_id=alice"]["state"] == "ok"


def test_a_hostile_user_id_is_refused_and_written_nowhere(team: Path, cli: Any) -> None:
    assert cli("sync").exit_code == 0
    with Mem0App(team) as memory:
        insert(memory, "..", ["climbs out of the root"])
        insert(memory, "x/../../escape", ["tries a path"])
    before = set(os.listdir(team))
    code, report = sync_json(cli)
    assert code == 1
    for label in ("user_id=..", "user_id=x%2F..%2F..%2Fescape"):
        hostile = report["scopes"][label]
        assert hostile["state"] == "error"
        assert "refused" in hostile["error"] and label in hostile["error"]
    assert set(os.listdir(team)) == before
    assert sorted(os.listdir(team / "agents")) == sorted(USERS)
    assert not any(
        "escape" in p.name or "climbs" in p.read_text() for p in (team / "backup").iterdir()
    )
    for user in USERS:  # the others still synced
        assert report["scopes"][f"user_id={user}"]["state"] == "ok"
    assert "refused" in cli("sync").output


def test_create_false_names_the_scope_of_a_missing_store(home: Path, cli: Any) -> None:
    configure(home, create=False)
    with Mem0App(home) as memory:
        insert(memory, "alice", ["a"])
    mnem.init(str(home / "agents" / "bob" / "memory"))
    with Mem0App(home) as memory:
        insert(memory, "bob", ["b"])
    code, report = sync_json(cli)
    assert code == 5  # a provider error (README: exit 5), not 1
    alice = report["scopes"]["user_id=alice"]
    assert alice["state"] == "error"
    assert "no mnem store" in alice["error"] and "user_id=alice" in alice["error"]
    assert "create = true" in alice["error"]
    assert report["scopes"]["user_id=bob"]["state"] == "ok"
    assert mnem_texts(home / "agents" / "bob" / "memory") == {"b"}


def test_status_verify_and_log_per_scope(team: Path, cli: Any) -> None:
    assert cli("sync").exit_code == 0
    status = json.loads(cli("status", "--json").output)
    assert status["providers"]["mem0"]["scope_count"] == 3
    assert set(status["providers"]["mem0"]["scopes"]) == {f"user_id={u}" for u in USERS}
    assert status["providers"]["mem0"]["records"] == sum(USERS.values())
    assert "mem0 (3 scopes)" in cli("status").output
    one = json.loads(cli("status", "--json", "--scope", "user_id=alice").output)
    assert set(one["providers"]) == {
        "mem0[user_id=alice]",
        "agents[user_id=alice]",
        "backup[user_id=alice]",
    }
    assert one["providers"]["mem0[user_id=alice]"]["records"] == 3
    text = cli("status").output
    assert "3 scopes" in text
    verified = cli("verify", "mem0", "agents", "--scope", "user_id=carol")
    assert verified.exit_code == 0, verified.output
    assert "mem0[user_id=carol]: 4 memories" in verified.output
    log = json.loads(cli("log", "--json", "--scope", "user_id=bob").output)
    assert log and all(entry["provider"].endswith("[user_id=bob]") for entry in log)
    assert {e["content"] for e in log if e["kind"] == "added"} == set(texts_for("bob", 2))


def test_check_reports_discovered_scopes_and_the_store_template(team: Path, cli: Any) -> None:
    result = cli("check")
    assert result.exit_code == 0, result.output
    assert "mem0 [mem0-oss] (active): reachable, 3 users discovered" in result.output
    assert f"one store per scope under {team / 'agents'} (created on first write)" in result.output


def test_one_scope_commands_refuse_a_wildcard_provider_with_one_line(team: Path, cli: Any) -> None:
    result = cli("export", "--provider", "mem0", "--output", str(team / "out.jsonl"))
    assert result.exit_code != 0
    assert "providers.mem0 is synced per scope (user_id)" in result.output
    assert "Traceback" not in result.output


def test_one_mnem_store_is_open_at_a_time_and_none_after_the_cycle(
    home: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsync.providers.mnem.on_demand import OnDemandMnemProvider

    configure(home)
    with Mem0App(home) as memory:
        for i in range(30):
            insert(memory, f"user{i:02d}", [f"note of user {i}"])
    open_now: set[int] = set()
    most = 0
    real_open, real_close = OnDemandMnemProvider.open, OnDemandMnemProvider.close

    def counting_open(self: OnDemandMnemProvider) -> None:
        nonlocal most
        real_open(self)
        open_now.add(id(self))
        most = max(most, len(open_now))

    def counting_close(self: OnDemandMnemProvider) -> None:
        real_close(self)
        open_now.discard(id(self))

    monkeypatch.setattr(OnDemandMnemProvider, "open", counting_open)
    monkeypatch.setattr(OnDemandMnemProvider, "close", counting_close)
    fds_before = len(os.listdir("/proc/self/fd"))
    code, report = sync_json(cli)
    assert code == 0, report
    assert len(report["scopes"]) == 30
    assert most == 1 and not open_now
    assert len(os.listdir("/proc/self/fd")) <= fds_before + 2  # no descriptor per scope
    for i in range(30):  # every store was released: the agent can open it at once
        assert mnem_texts(home / "agents" / f"user{i:02d}" / "memory") == {f"note of user {i}"}


def test_a_store_held_by_the_application_is_busy_in_every_scope_and_loses_nothing(
    team: Path, cli: Any
) -> None:
    configure(team, extra="")
    text = (team / "config" / "config.toml").read_text()
    (team / "config" / "config.toml").write_text(
        text.replace('embedder = "hash"', 'embedder = "hash"\nbusy_timeout = "1s"')
    )
    assert cli("sync").exit_code == 0
    with Mem0App(team):  # the application holds the local Qdrant store
        code, report = sync_json(cli)
    assert code == 1
    assert report["discovery"]["mem0"]["state"] == "busy"
    assert {s["state"] for s in report["scopes"].values()} == {"busy"}
    for user, count in USERS.items():
        assert mnem_texts(team / "agents" / user / "memory") == set(texts_for(user, count))
    assert cli("sync").exit_code == 0  # and the next cycle is whole again


def test_a_pmm_file_for_a_new_user_is_a_scope_discovered_from_the_directory(
    home: Path, cli: Any
) -> None:
    from memsync.base.pmm import Header, write_pmm_file
    from memsync.base.records import Record

    configure(home, extra="")
    config = home / "config" / "config.toml"
    config.write_text(config.read_text().replace('direction = "push"', 'direction = "both"'))
    with Mem0App(home) as memory:
        insert(memory, "alice", ["alice likes tea"])
    (home / "backup").mkdir()
    write_pmm_file(
        home / "backup" / "erin.pmm.jsonl",
        Header(source_provider="pmm", scope={"scope_key": "erin"}),
        [Record(id="pmm:erin-1", content="erin keeps bees", metadata={}, scope_key="erin")],
    )
    code, report = sync_json(cli)
    assert code == 0, report
    assert report["discovery"]["backup"]["scopes"] == 1
    assert set(report["scopes"]) == {"user_id=alice", "user_id=erin"}
    with Mem0App(home) as memory:
        erin = memory.get_all(filters={"user_id": "erin"}, top_k=10)["results"]
    assert [m["memory"] for m in erin] == ["erin keeps bees"]
    assert mnem_texts(home / "agents" / "erin" / "memory") == {"erin keeps bees"}


def remember(path: Path, node_id: str, text: str | None) -> None:
    """The user's agent writes (or, with None, forgets) a node of its own mnem store."""
    import gc

    store = mnem.open(str(path)) if (path / ".mnem").exists() else mnem.init(str(path))
    try:
        if text is None:
            mnem.agents.forget(store, node_id)
        else:
            mnem.agents.remember(store, node_id, text)
    finally:
        del store
        gc.collect()


def test_memories_with_the_same_id_in_two_scopes_never_touch_each_other(
    team: Path, cli: Any
) -> None:
    agents = team / "agents"
    remember(agents / "alice" / "memory", "profile", "alice is vegetarian")
    remember(agents / "bob" / "memory", "profile", "bob is vegan")
    assert cli("sync").exit_code == 0

    def mem0_texts(user: str) -> set[str]:
        with Mem0App(team) as memory:
            found = memory.get_all(filters={"user_id": user}, top_k=100)["results"]
        return {m["memory"] for m in found}

    assert "alice is vegetarian" in mem0_texts("alice")
    assert "bob is vegan" in mem0_texts("bob") and "alice is vegetarian" not in mem0_texts("bob")
    remember(agents / "alice" / "memory", "profile", None)  # alice's agent forgets hers
    code, report = sync_json(cli)
    assert code == 0, report
    assert "alice is vegetarian" not in mem0_texts("alice")
    assert "bob is vegan" in mem0_texts("bob")  # bob's memory of the same id is untouched
    assert "bob is vegan" in mnem_texts(agents / "bob" / "memory")


def test_verify_of_a_large_team_lists_only_the_scopes_that_do_not_hold(
    home: Path, cli: Any
) -> None:
    """At a thousand users, verify printed a thousand 'reconciled' lines around the one that
    mattered."""
    configure(home)
    with Mem0App(home) as memory:
        for number in range(25):
            insert(memory, f"user{number:02d}", [f"note of user {number}"])
    assert cli("sync").exit_code == 0
    with Mem0App(home) as memory:
        insert(memory, "user07", ["a note written after the sync"])
    result = cli("verify", "mem0", "agents")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("user_id=user07: 1 difference(s)")
    assert not any("reconciled (" in line for line in lines)
    assert "25 scope(s): 24 reconciled, 1 with differences" in result.output
    assert "--json lists every scope" in result.output
