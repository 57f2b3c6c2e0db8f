"""``exclude``: an adapter's bookkeeping nodes are never copied, written or deleted, anywhere.

The real mnem SDK is the active backend, with a real Mem0 library store (mem0ai offline) and a
PMM backup beside it. The agent writes its store as mnem's session adapters do
(``mnem-openai-agents``, ``mnem-autogen``: items ``{session}:{seq:010d}`` and a counter node
``{session}:_seq`` bumped in the same commit), through the CLI as a user runs it.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from memsync.base.exclude import CONTENT_KIND_KEY, Exclusion, check_glob
from memsync.cli import main
from memsync.providers.mnem import convert
from tests.conftest import write_config
from tests.engine_helpers import World
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, mem0_table
from tests.test_e2e_mnem import Agent

COUNTER = "*:_seq"


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


def configure(home: Path, exclude: str | None = COUNTER) -> None:
    rule = f'exclude = {{ ids = ["{exclude}"] }}\n' if exclude else ""
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n{rule}'
        + f'\n[providers.backup]\ntype = "pmm-dir"\npath = "{home / "pmm"}"\ndirection = "push"\n',
    )


def session_write(store: Any, session: str, *items: str) -> None:
    """What mnem-openai-agents' ``add_items`` does: new items and the counter, one commit."""
    counter = store.working_node(f"{session}:_seq")
    start = 0 if counter is None else counter.content
    for offset, item in enumerate(items):
        store.add(f"{session}:{start + offset:010d}", item)
    store.add(f"{session}:_seq", start + len(items))
    store.commit(f"add {len(items)} items to {session}", author="agent")


def memsync(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.setenv("MEMSYNC_HOME", str(home))
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def synced(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    report: dict[str, Any] = json.loads(out)
    return report


def mem0_texts(home: Path) -> dict[str, str]:
    """Mem0's memories: text -> id."""
    with App(home, "old") as memory:
        items = memory.get_all(filters={"user_id": "alice"}, top_k=1000)["results"]
    return {item["memory"]: item["id"] for item in items}


def backup_texts(home: Path) -> set[str]:
    texts = set()
    for path in (home / "pmm").glob("*.pmm.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            texts.add(json.loads(line)["content"])
    return texts


def node(mnem: ModuleType, home: Path, node_id: str) -> Any:
    with Agent(mnem, home / "agent") as agent:
        found = agent.store.working_node(node_id)
        return None if found is None else (found.content, found.content_kind)


def memsync_touched(mnem: ModuleType, home: Path) -> set[str]:
    """Every node a commit by memsync added, changed or removed."""
    with Agent(mnem, home / "agent") as agent:
        return {
            node_id
            for commit in agent.store.log()
            if commit.author == "memsync"
            for node_id in agent.store.changed_by(commit.id)
        }


@pytest.fixture
def agent_home(home: Path, mnem: ModuleType) -> Iterator[Path]:
    """A mnem store holding one session of two items (and its counter), and an empty Mem0."""
    mnem.init(home / "agent")
    gc.collect()
    with Agent(mnem, home / "agent") as agent:
        session_write(agent.store, "s1", "asked about the refund policy", "wants a call back")
    yield home


def test_counter_nodes_are_never_copied_nor_written(
    agent_home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = agent_home
    configure(home)
    report = synced(home, monkeypatch)
    assert report["providers"]["agent"]["excluded"] == 1
    assert set(mem0_texts(home)) == {"asked about the refund policy", "wants a call back"}
    assert backup_texts(home) == {"asked about the refund policy", "wants a call back"}
    # verify leaves the counter out too: mnem and Mem0 hold the same memories
    code, out = memsync(home, monkeypatch, "verify", "agent", "old")
    assert code == 0 and "agent: 2 memories, old: 2 memories" in out, out

    # The agent goes on; Mem0 adds one of its own, which memsync writes into mnem.
    with Agent(mnem, home / "agent") as agent:
        session_write(agent.store, "s1", "call booked for Tuesday")
    with App(home, "old") as memory:
        memory.add("prefers email", user_id="alice", infer=False)
    synced(home, monkeypatch)
    assert "3" not in mem0_texts(home) and "call booked for Tuesday" in mem0_texts(home)
    assert node(mnem, home, "s1:_seq") == (3, "note")  # still the agent's int
    touched = memsync_touched(mnem, home)
    assert touched and "s1:_seq" not in touched


def test_excluding_after_a_sync_keeps_every_copy_and_deletes_nothing(
    agent_home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = agent_home
    configure(home, exclude=None)
    synced(home, monkeypatch)
    copied = mem0_texts(home)
    assert "2" in copied and "2" in backup_texts(home)  # the counter, copied as a memory

    configure(home)
    report = synced(home, monkeypatch)
    agent = report["providers"]["agent"]
    assert agent["excluded"] == 1 and agent["excluded_copies"] == {"old": 1, "backup": 1}
    assert agent["removed"] == 0 and report["providers"]["old"]["removed"] == 0
    assert mem0_texts(home) == copied and "2" in backup_texts(home)  # no delete inferred
    code, out = memsync(home, monkeypatch, "status")
    assert code == 0, out
    assert "agent: 1 record excluded (ids *:_seq)" in out, out
    assert "copies made before the exclude stay: backup 1, old 1" in out, out
    code, out = memsync(home, monkeypatch, "verify", "agent", "old")  # the copy, told apart
    assert code == 1 and "only in old: '2'" in out, out

    # The counter moves on, the copy is edited in Mem0, then deleted there: none of it
    # reaches the counter, nor the copy.
    with Agent(mnem, home / "agent") as held:
        session_write(held.store, "s1", "call booked for Tuesday")
    report = synced(home, monkeypatch)
    agent = report["providers"]["agent"]  # a full listing (the rule changed) that omits it:
    assert agent["mode"] == "full" and agent["removed"] == 0  # still not a removal
    assert "2" in mem0_texts(home) and "3" not in mem0_texts(home)
    with App(home, "old") as memory:
        memory.update(copied["2"], "2 (edited in Mem0)")
    synced(home, monkeypatch)
    assert node(mnem, home, "s1:_seq") == (3, "note")
    with App(home, "old") as memory:
        memory.delete(copied["2"])
    report = synced(home, monkeypatch)
    assert report["providers"]["old"]["removed"] == 1 and not report["replayed"].get("delete")
    assert node(mnem, home, "s1:_seq") == (3, "note")
    assert "s1:_seq" not in memsync_touched(mnem, home)
    assert "2" in backup_texts(home)  # the backup keeps what it was given


def test_a_lost_staging_database_writes_no_copy_back_into_the_counter(
    agent_home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = agent_home
    configure(home, exclude=None)
    synced(home, monkeypatch)
    before = memsync_touched(mnem, home)
    with Agent(mnem, home / "agent") as held:
        session_write(held.store, "s1", "call booked for Tuesday")
    configure(home)
    (home / "state" / "staging.db").unlink()
    for suffix in ("-wal", "-shm"):
        (home / "state" / f"staging.db{suffix}").unlink(missing_ok=True)
    # The copy in Mem0 still says "2", with an origin marker pointing at s1:_seq: nothing
    # links it to the counter but that marker, and nothing is written over the counter.
    report = synced(home, monkeypatch)
    assert not report["replayed"].get("update"), report
    assert node(mnem, home, "s1:_seq") == (3, "note")
    assert memsync_touched(mnem, home) == before
    assert {"2", "call booked for Tuesday"} <= set(mem0_texts(home))


def test_taking_the_exclude_back_syncs_the_counter_again_without_duplicates(
    agent_home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = agent_home
    configure(home, exclude=None)
    synced(home, monkeypatch)
    configure(home)
    synced(home, monkeypatch)
    with Agent(mnem, home / "agent") as held:
        session_write(held.store, "s1", "call booked for Tuesday")
    synced(home, monkeypatch)
    assert "2" in mem0_texts(home)  # excluded: the copy stays as it was

    configure(home, exclude=None)
    synced(home, monkeypatch)  # notices the rule went; the next listing is a full one
    synced(home, monkeypatch)
    texts = list(mem0_texts(home))
    assert "3" in texts and "2" not in texts and len(texts) == len(set(texts)) == 4
    code, out = memsync(home, monkeypatch, "verify", "agent", "old")
    assert code == 0, out


def test_an_excluded_content_kind_is_left_alone_until_it_changes_back(
    home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    mnem.init(home / "agent")
    gc.collect()
    with Agent(mnem, home / "agent") as agent:
        mnem.agents.remember(agent.store, "tier", "on the Enterprise plan")
        agent.store.add("belief-1", "the customer is in Lisbon", content_kind="claim")
        agent.store.commit("a claim", author="agent")
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n'
        + 'exclude = { content_kinds = ["claim"] }\n',
    )
    synced(home, monkeypatch)
    assert set(mem0_texts(home)) == {"on the Enterprise plan"}

    # a synced note becomes a claim: frozen, its copy stays as it was
    with Agent(mnem, home / "agent") as agent:
        agent.store.add("tier", "on the Team plan", content_kind="claim")
        agent.store.commit("now a claim", author="agent")
    report = synced(home, monkeypatch)
    assert report["providers"]["agent"]["removed"] == 0
    assert set(mem0_texts(home)) == {"on the Enterprise plan"}
    # and back to a note: synced again, as an edit of the same memory
    with Agent(mnem, home / "agent") as agent:
        agent.store.add("tier", "on the Business plan")
        agent.store.commit("a note again", author="agent")
    synced(home, monkeypatch)
    assert set(mem0_texts(home)) == {"on the Business plan"}
    assert node(mnem, home, "belief-1") == ("the customer is in Lisbon", "claim")


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ('{ ids = ["s1:[0-9"] }', "providers.agent.exclude.ids: 's1:[0-9': the '[' at position 3"),
        ('{ ids = "*:_seq" }', "providers.agent.exclude.ids: expected a list of globs"),
        ('{ ids = ["**"] }', "providers.agent.exclude.ids: '**' excludes every record"),
        ('{ content_kinds = ["fact"] }', "exclude.content_kinds.0: expected 'note' or 'claim'"),
    ],
)
def test_a_bad_exclude_is_a_one_line_config_error(
    home: Path, monkeypatch: pytest.MonkeyPatch, rule: str, message: str
) -> None:
    write_config(
        home,
        f'[sync]\nactive = "agent"\n[providers.agent]\ntype = "mnem"\npath = "{home}"\n'
        f"exclude = {rule}\n",
    )
    code, out = memsync(home, monkeypatch, "check")
    assert code == 2, out
    assert message in out and len(out.strip().splitlines()) == 1, out
    assert "Traceback" not in out


def test_content_kinds_are_refused_where_the_store_has_none(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        home,
        f'[sync]\nactive = "notes"\n[providers.notes]\ntype = "pmm-dir"\npath = "{home}"\n'
        'exclude = { content_kinds = ["claim"] }\n',
    )
    code, out = memsync(home, monkeypatch, "check")
    assert code == 2 and "only mnem stores have content kinds" in out, out


def test_globs_match_whole_ids_across_separators() -> None:
    rule = Exclusion(("*:_seq", "scratch/??", "tmp-[!a]*"))
    assert rule.covers("s1:_seq") and rule.covers("memories:u1:plan:_seq")
    assert not rule.covers("s1:_seq:x") and not rule.covers("s1:_sequence")
    assert rule.covers("scratch/ab") and not rule.covers("scratch/abc")
    assert rule.covers("tmp-b1") and not rule.covers("tmp-a1")
    assert check_glob("a[]]b") == "a[]]b"  # a ']' first in a set is the character
    assert CONTENT_KIND_KEY == convert.CONTENT_KIND_KEY


def test_every_scope_of_a_store_template_keeps_the_exclude(
    home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.mem0_fixtures import DIMS, Mem0App
    from tests.test_scopes import insert

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
create = true
exclude = {{ ids = ["{COUNTER}"] }}
""",
    )
    with Mem0App(home) as memory:
        insert(memory, "alice", ["alice likes tea"])
        insert(memory, "bob", ["bob likes jazz"])
    synced(home, monkeypatch)
    for user in ("alice", "bob"):
        with Agent(mnem, home / "agents" / user / "memory") as agent:
            session_write(agent.store, f"{user}-chat", f"{user} asked for a refund")
    report = synced(home, monkeypatch)
    for user in ("alice", "bob"):
        assert report["providers"][f"agents[user_id={user}]"]["excluded"] == 1, report
    with Mem0App(home) as memory:
        for user in ("alice", "bob"):
            items = memory.get_all(filters={"user_id": user})["results"]
            assert {item["memory"] for item in items} == {
                f"{user} likes {'tea' if user == 'alice' else 'jazz'}",
                f"{user} asked for a refund",
            }
    code, out = memsync(home, monkeypatch, "status", "--json")
    assert code == 0, out
    assert json.loads(out)["providers"]["agents"]["last_cycle"]["excluded"] == 2


def test_migrate_and_export_leave_the_counter_out_too(
    agent_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = agent_home
    configure(home)
    code, out = memsync(home, monkeypatch, "migrate", "--from", "agent", "--to", "old")
    assert code == 0, out
    assert set(mem0_texts(home)) == {"asked about the refund policy", "wants a call back"}
    exported = tmp_path / "agent.pmm.jsonl"
    code, out = memsync(home, monkeypatch, "export", "--provider", "agent", "-o", str(exported))
    assert code == 0, out
    contents = [json.loads(line)["content"] for line in exported.read_text().splitlines()[1:]]
    assert sorted(contents) == ["asked about the refund policy", "wants a call back"]


def test_any_provider_type_takes_id_globs(tmp_path: Path) -> None:
    """The rule is generic: here on an in-process provider whose records have ids app0, app1..."""
    world = World(tmp_path, {"notes": "both", "copy": "both"}, "notes")
    notes = world.providers["notes"]
    draft = notes.app_add("draft: not ready")
    shared = notes.app_add("ready to share")
    assert world.sync().exit_code == 0
    assert world.contents("copy") == ["draft: not ready", "ready to share"]

    notes.exclusion = Exclusion((draft,))  # the draft's id as a glob: it and no other
    notes.app_edit(draft, "draft: still not ready")
    notes.app_add("shared later")
    report = world.sync()
    assert report.exit_code == 0 and report.providers["notes"].mirror.excluded == 1  # type: ignore[union-attr]
    # the draft's copy stays as it was: neither updated nor deleted
    assert world.contents("copy") == ["draft: not ready", "ready to share", "shared later"]
    copy = world.providers["copy"]
    copy.delete(next(r for r, rec in copy.store.records.items() if "draft" in rec.content))
    assert world.sync().exit_code == 0
    assert world.contents("notes") == ["draft: still not ready", "ready to share", "shared later"]
    assert shared != draft and not notes.exclusion.covers(shared)


def test_a_store_left_with_only_excluded_records_is_not_an_empty_listing(tmp_path: Path) -> None:
    """The empty-listing gate guards against a listing that returns nothing; one that returns
    only excluded records did answer, and its real delete goes through."""
    world = World(tmp_path, {"notes": "both", "copy": "both"}, "notes")
    notes = world.providers["notes"]
    notes.exclusion = Exclusion((notes.app_add("counter: 7"),))
    last = notes.app_add("the one memory")
    assert world.sync().exit_code == 0 and world.contents("copy") == ["the one memory"]
    notes.delete(last)
    report = world.sync()
    assert report.exit_code == 0 and report.providers["notes"].mirror.removed == 1  # type: ignore[union-attr]
    assert world.contents("copy") == []
    assert world.sync().exit_code == 0


def test_a_frozen_record_its_store_deleted_stays_until_the_rule_goes(tmp_path: Path) -> None:
    world = World(tmp_path, {"notes": "both", "copy": "both"}, "notes")
    notes = world.providers["notes"]
    counter = notes.app_add("counter: 7")
    notes.app_add("a memory")
    notes.app_add("another memory")
    assert world.sync().exit_code == 0
    notes.exclusion = Exclusion((counter,))
    assert world.sync().exit_code == 0
    notes.delete(counter)  # the adapter clears it while it is excluded: not a delete to carry
    assert world.sync().exit_code == 0 and world.sync().exit_code == 0
    assert "counter: 7" in world.contents("copy")
    notes.exclusion = Exclusion()  # the rule goes: now the record is a memory like any other
    assert world.sync().exit_code == 0 and world.sync().exit_code == 0
    assert world.contents("copy") == ["a memory", "another memory"]
