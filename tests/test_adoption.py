"""Adoption as a user meets it: stores that held the same memories before memsync linked them.

Through the CLI on PMM directories (real files), and through the engine on in-memory stores
where a test needs to look inside (the journal, the conflicts table, write counts).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import Result

from memsync.engine.journal import memory_history
from memsync.staging import StagingStore
from tests.conftest import run_memsync, write_config
from tests.engine_helpers import World
from tests.test_cli_foundation import pmm_file

TEXTS = ["likes tea", "lives in Lisbon", "works on memsync", "has a cat", "prefers mornings"]

TWO_DIRS = """
[sync]
active = "a"
{extra}
[providers.a]
type = "pmm-dir"
path = "{home}/a"

[providers.b]
type = "pmm-dir"
path = "{home}/b"
"""


def held(home: Path, name: str) -> Counter[str]:
    texts: Counter[str] = Counter()
    for path in (home / name).glob("*.pmm.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            texts[json.loads(line)["content"]] += 1
    return texts


def two_dirs_holding_the_same(cli, home: Path, tmp_path: Path, extra: str = "") -> None:  # type: ignore[no-untyped-def]
    """Two PMM directories holding TEXTS under different ids (a restore under new ids)."""
    write_config(home, TWO_DIRS.format(home=home, extra=extra))
    for name in ("a", "b"):
        records = [
            {"id": f"{name}{i}", "content": t, "scope_key": "alice"} for i, t in enumerate(TEXTS)
        ]
        source = pmm_file(tmp_path / f"{name}.jsonl", *records)
        assert cli("import", str(source), "--into", name).exit_code == 0


def test_two_stores_holding_the_same_memories_stay_as_they_are(
    cli, home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    two_dirs_holding_the_same(cli, home, tmp_path)
    before = {name: (home / name / "alice.pmm.jsonl").read_text() for name in ("a", "b")}
    dry = cli("sync", "--dry-run")
    assert dry.exit_code == 0
    assert dry.output.count("\n  adopt mem0:a") == len(TEXTS) and "would adopt 5" in dry.output
    result: Result = cli("sync", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 0
    assert {n: p["adopted"] for n, p in report["providers"].items()} == {"a": 5, "b": 5}
    assert report["replayed"] == {}
    # Ids stay: nothing was rewritten to add markers, the files are byte for byte the same.
    assert {n: (home / n / "alice.pmm.jsonl").read_text() for n in ("a", "b")} == before
    assert held(home, "a") == held(home, "b") == Counter(TEXTS)
    assert cli("verify", "a", "b").exit_code == 0
    log = json.loads(cli("log", "--json").output)
    assert sorted(e["provider_id"] for e in log if e["kind"] == "adopted") == [
        f"mem0:b{i}" for i in range(5)
    ]
    history = cli("history", "mem0:b1")
    assert history.exit_code == 0 and "adopted (same text as a mem0:a1)" in history.output


def test_with_adoption_off_the_copies_double_and_verify_says_so(
    cli, home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    two_dirs_holding_the_same(cli, home, tmp_path, extra='adopt = "off"')
    assert cli("sync").exit_code == 0
    assert held(home, "a") == held(home, "b") == Counter(TEXTS * 2)
    verdict = cli("verify", "a", "b", "--json")
    report = json.loads(verdict.output)
    assert verdict.exit_code == 1 and not report["reconciled"]
    assert sorted(d["content"] for d in report["duplicated"]) == sorted(TEXTS)
    assert "duplicated (a x2, b x2): 'likes tea'" in cli("verify", "a", "b").output


def test_repair_adopts_again_instead_of_duplicating(home: Path, tmp_path: Path) -> None:
    write_config(home, TWO_DIRS.format(home=home, extra=""))
    for name in ("a", "b"):
        records = [{"id": f"{name}{i}", "content": t} for i, t in enumerate(TEXTS)]
        source = pmm_file(tmp_path / f"{name}.jsonl", *records)
        assert run_memsync(home, "import", str(source), "--into", name).returncode == 0
    assert run_memsync(home, "sync").returncode == 0
    (home / "state" / "staging.db").unlink()
    for suffix in ("-wal", "-shm"):
        (home / "state" / f"staging.db{suffix}").unlink(missing_ok=True)
    repaired = run_memsync(home, "repair")
    assert repaired.returncode == 0, repaired.stderr
    assert "adopted 5" in repaired.stdout
    assert held(home, "a") == held(home, "b") == Counter(TEXTS)


def test_a_second_migrate_into_a_store_holding_the_texts_under_other_ids_imports_nothing(
    cli, home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    two_dirs_holding_the_same(cli, home, tmp_path)
    extra = {"id": "a-extra", "content": "only in a", "scope_key": "alice"}
    assert cli("import", str(pmm_file(tmp_path / "x.jsonl", extra)), "--into", "a").exit_code == 0
    first = json.loads(cli("migrate", "--from", "a", "--to", "b", "--json").output)
    assert (first["imported"], first["already_present"]) == (1, 5)
    again = json.loads(cli("migrate", "--from", "a", "--to", "b", "--json").output)
    assert (again["imported"], again["already_present"]) == (0, 6)
    assert held(home, "b") == Counter([*TEXTS, "only in a"])


def test_import_skip_duplicates_pairs_copies_one_to_one(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_config(home, TWO_DIRS.format(home=home, extra=""))
    once = pmm_file(
        tmp_path / "once.jsonl", {"id": "x1", "content": "likes tea", "scope_key": "alice"}
    )
    assert cli("import", str(once), "--into", "a").exit_code == 0
    twice = pmm_file(
        tmp_path / "twice.jsonl",
        {"id": "y1", "content": "likes tea", "scope_key": "alice"},
        {"id": "y2", "content": "  likes tea\n", "scope_key": "alice"},  # the same text, normalised
    )
    report = json.loads(cli("import", str(twice), "--into", "a", "--json").output)
    assert report["imported"] == 1 and [s["id"] for s in report["skipped"]] == ["y1"]
    # the second copy is carried byte for byte: it is the same memory only inside the hash
    assert held(home, "a") == Counter({"likes tea": 1, "  likes tea\n": 1})


def test_a_multi_scope_store_adopts_only_within_a_scope(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_config(home, TWO_DIRS.format(home=home, extra=""))
    a = pmm_file(tmp_path / "a.jsonl", {"id": "a1", "content": "likes tea", "scope_key": "alice"})
    b = pmm_file(tmp_path / "b.jsonl", {"id": "b1", "content": "likes tea", "scope_key": "bob"})
    assert cli("import", str(a), "--into", "a").exit_code == 0
    assert cli("import", str(b), "--into", "b").exit_code == 0
    report = json.loads(cli("sync", "--json").output)
    assert {p["adopted"] for p in report["providers"].values()} == {0}
    assert report["replayed"] == {"create": 2}


# --- the engine, where a test needs to look inside ------------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path, {"mem0": "both", "mnem": "both", "backup": "push"}, "mnem")


def test_equal_text_with_other_metadata_is_settled_by_the_policy_and_kept(world: World) -> None:
    old = world.providers["mem0"].app_add("likes tea", topic="drinks")
    new = world.providers["mnem"].app_add("likes tea", topic="food")
    world.stores["mnem"].records[new].updated_at = "2099-01-01T00:00:00Z"  # mnem's is newer
    report = world.sync()
    assert report.exit_code == 0
    assert [(c["winner"], c["policy"]) for c in report.conflicts] == [("mnem", "newest")]
    mem0 = world.stores["mem0"].records
    assert list(mem0) == [old] and mem0[old].metadata == {"topic": "food"}  # same id, updated
    assert dict(report.replayed) == {"update": 1, "create": 1}  # mem0 updated, backup created
    with StagingStore.open(world.db_path) as store:
        (versions,) = [
            json.loads(r[0]) for r in store.conn.execute("SELECT versions FROM conflicts")
        ]
    assert versions["mem0"]["metadata"] == {"topic": "drinks"}  # the loser, kept


def test_adoption_writes_nothing_to_either_side(world: World) -> None:
    for text in TEXTS:
        world.providers["mem0"].app_add(text)
        world.providers["mnem"].app_add(text)
    report = world.sync()
    assert report.providers["mem0"].adopted == report.providers["mnem"].adopted == 5
    assert world.providers["mem0"].writes == world.providers["mnem"].writes == 0
    assert world.providers["backup"].writes == 5  # the push replica gets one copy of each


def test_a_dry_run_shows_adoptions_and_keeps_none(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    world.providers["mnem"].app_add("likes tea")
    dry = world.sync(dry_run=True)
    assert [a["action"] for a in dry.planned].count("adopt") == 1
    real = world.sync()
    assert real.providers["mem0"].adopted == 1  # the dry run kept nothing
    assert sorted(world.contents("mem0")) == sorted(world.contents("mnem")) == ["likes tea"]


def test_a_provider_that_comes_back_holding_a_memory_joins_it(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    world.providers["mnem"].faults.busy = True
    world.sync()  # mnem away: the memory is agreed with mem0 (and the backup) alone
    world.providers["mnem"].faults.busy = False
    world.providers["mnem"].app_add("likes tea")  # an agent wrote it there meanwhile
    report = world.sync()
    assert report.exit_code == 0 and report.providers["mnem"].adopted == 1
    assert {n: world.contents(n) for n in world.providers} == {
        n: ["likes tea"] for n in world.providers
    }


def test_the_history_of_an_adopted_memory_names_both_records(world: World) -> None:
    mem0_id = world.providers["mem0"].app_add("likes tea")
    world.providers["mnem"].app_add("likes tea")
    world.sync()
    with StagingStore.open(world.db_path) as store:
        entries = memory_history(store, mem0_id)
    kinds = [(e["provider"], e["kind"]) for e in entries]
    assert (
        ("mem0", "adopted") in kinds and ("mnem", "added") in kinds and ("mem0", "added") in kinds
    )
    (adopted,) = [e for e in entries if e["kind"] == "adopted"]
    assert adopted["from_provider"] == "mnem" and adopted["old_link_id"] == f"mem0:{mem0_id}"


def test_three_providers_holding_one_text_make_one_memory(tmp_path: Path) -> None:
    world = World(tmp_path, {"a": "both", "b": "both", "c": "both"}, "a")
    for name in ("a", "b", "c"):
        world.providers[name].app_add("likes tea")
    world.providers["b"].app_add("likes tea")  # b holds it twice
    report = world.sync()
    assert report.exit_code == 0
    assert {n: o.adopted for n, o in report.providers.items()} == {"a": 1, "b": 1, "c": 1}
    assert {n: world.contents(n) for n in world.providers} == {
        n: ["likes tea", "likes tea"] for n in world.providers
    }
    assert world.sync().planned == []


def test_verify_does_not_flag_a_text_written_again_after_it_was_synced(world: World) -> None:
    from memsync.engine.verify import verify

    world.providers["mem0"].app_add("likes tea")
    world.sync()
    world.providers["mnem"].app_add("likes tea")  # later, on purpose: a second memory
    world.sync()
    assert world.contents("mem0") == world.contents("mnem") == ["likes tea", "likes tea"]
    with StagingStore.open(world.db_path) as store:
        report = verify(world.providers["mem0"], world.providers["mnem"], store)
    assert report.reconciled and report.duplicated == []
