"""The sync engine end to end on in-memory providers: what a user would see after each cycle."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from memsync.engine.journal import memory_history, records_at
from memsync.engine.report import SyncOptions
from memsync.staging import StagingStore
from tests.engine_helpers import PowerCut, World


@pytest.fixture
def world(tmp_path: Path) -> World:
    # mem0 (both) <-> mnem (active) -> backup (push); mnem takes client ids like the real one.
    return World(
        tmp_path,
        {"mem0": "both", "mnem": "both", "backup": "push"},
        "mnem",
        client_ids={"mnem": True, "backup": True},
    )


def all_contents(world: World) -> dict[str, list[str]]:
    return {name: world.contents(name) for name in world.providers}


def test_first_cycle_reaches_every_provider(world: World) -> None:
    world.providers["mem0"].app_add("likes tea", topic="drinks")
    world.providers["mnem"].app_add("lives in Lisbon")
    report = world.sync()
    assert report.exit_code == 0
    assert all_contents(world) == {n: ["likes tea", "lives in Lisbon"] for n in world.providers}


def test_a_quiet_cycle_writes_nothing(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    world.sync()
    writes = {n: p.writes for n, p in world.providers.items()}
    report = world.sync()
    assert report.planned == [] and dict(report.replayed) == {}
    assert {n: p.writes for n, p in world.providers.items()} == writes


def test_what_memsync_wrote_is_not_replayed_back(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    world.sync()
    world.sync()
    world.sync()
    assert world.providers["mem0"].writes == 0  # never written back into its source


def test_an_edit_reaches_every_provider_in_one_cycle(world: World) -> None:
    record_id = world.providers["mem0"].app_add("likes tea")
    world.sync()
    world.providers["mem0"].app_edit(record_id, "likes green tea")
    world.sync()
    assert all_contents(world) == {n: ["likes green tea"] for n in world.providers}


def test_a_delete_reaches_every_provider(world: World) -> None:
    keep = world.providers["mem0"].app_add("keep me")
    gone = world.providers["mem0"].app_add("forget me")
    for i in range(10):
        world.providers["mem0"].app_add(f"filler {i}")
    world.sync()
    world.providers["mem0"].delete(gone)
    report = world.sync()
    assert report.exit_code == 0
    remaining = sorted(["keep me", *(f"filler {i}" for i in range(10))])
    for name in world.providers:
        assert world.contents(name) == remaining, name  # that one gone, every other one kept
    assert report.replayed == {"delete": 2}  # from mnem and the backup, nothing else
    assert keep in world.stores["mem0"].records and gone not in world.stores["mem0"].records


def test_an_emptied_source_is_refused_and_the_target_kept(world: World) -> None:
    for i in range(5):
        world.providers["mem0"].app_add(f"memory {i}")
    world.sync()
    world.stores["mem0"].records.clear()
    report = world.sync()
    assert report.exit_code == 6
    assert "listed no memories but held 5" in report.refusals["mem0"]
    assert len(world.contents("mnem")) == 5 and len(world.contents("backup")) == 5


def test_force_delete_confirms_a_refused_delete(world: World) -> None:
    for i in range(5):
        world.providers["mem0"].app_add(f"memory {i}")
    world.sync()
    world.stores["mem0"].records.clear()
    world.sync()
    report = world.sync(force_delete=True)
    assert report.exit_code == 0
    assert world.contents("mnem") == [] and world.contents("backup") == []


def test_too_many_deletes_at_once_are_refused(tmp_path: Path) -> None:
    world = World(tmp_path, {"a": "both", "b": "both"}, "a", max_delete_count=3)
    ids = [world.providers["a"].app_add(f"memory {i}") for i in range(10)]
    world.sync()
    for record_id in ids[:4]:
        world.providers["a"].delete(record_id)
    report = world.sync()
    assert report.exit_code == 6 and "would delete 4 of 10" in report.refusals["a"]
    assert len(world.contents("b")) == 10


def test_a_partial_listing_never_deletes(world: World) -> None:
    for i in range(20):
        world.providers["mem0"].app_add(f"memory {i}")
    world.sync()
    world.providers["mem0"].faults.fail_listing_after_pages = 1
    report = world.sync()
    assert report.providers["mem0"].state == "error"
    assert len(world.contents("mnem")) == 20


def test_a_busy_store_is_reported_and_the_others_go_on(world: World) -> None:
    world.providers["mem0"].faults.busy = True
    world.providers["mnem"].app_add("from mnem")
    report = world.sync()
    assert report.providers["mem0"].state == "busy" and report.exit_code == 1
    assert world.contents("backup") == ["from mnem"]
    world.providers["mem0"].faults.busy = False
    assert world.sync().exit_code == 0 and world.contents("mem0") == ["from mnem"]


def test_failed_writes_are_retried_and_then_parked_as_dead(tmp_path: Path) -> None:
    world = World(tmp_path, {"a": "both", "b": "both"}, "a", max_attempts=2)
    world.providers["a"].app_add("stubborn")
    world.providers["b"].faults.fail_writes = 100
    first = world.sync()
    assert first.failures and not first.failures[0]["dead"]
    with StagingStore.open(world.db_path) as store:  # skip the backoff wait
        store.conn.execute("UPDATE outbox SET next_attempt_at = NULL")
    second = world.sync()
    assert second.failures[0]["dead"]
    third = world.sync()
    assert third.waiting == 1 and world.providers["b"].writes == 2  # dead: not retried again
    world.providers["b"].faults.fail_writes = 0
    world.sync(retry_dead=True)
    assert world.contents("b") == ["stubborn"]


def test_a_write_that_failed_once_lands_on_the_next_cycle(world: World) -> None:
    world.providers["mem0"].app_add("eventually")
    world.providers["backup"].faults.fail_writes = 1
    world.sync()
    assert world.contents("backup") == []
    with StagingStore.open(world.db_path) as store:
        store.conn.execute("UPDATE outbox SET next_attempt_at = NULL")
    world.sync()
    assert world.contents("backup") == ["eventually"]


def edit_both_sides(world: World) -> None:
    record_id = world.providers["mem0"].app_add("likes tea")
    world.sync()
    (mnem_id,) = list(world.stores["mnem"].records)
    world.providers["mnem"].app_edit(mnem_id, "likes coffee", when="2030-01-01T10:00:00Z")
    world.providers["mem0"].app_edit(record_id, "likes cocoa", when="2030-01-01T11:00:00Z")


def test_conflict_newest_wins_and_the_loser_stays_in_the_journal(world: World) -> None:
    edit_both_sides(world)
    report = world.sync()
    assert [c["winner"] for c in report.conflicts] == ["mem0"]
    assert all_contents(world) == {n: ["likes cocoa"] for n in world.providers}
    with StagingStore.open(world.db_path) as store:
        history = memory_history(store, report.conflicts[0]["link_id"])
    assert "likes coffee" in [h["content"] for h in history]


def test_conflict_error_waits_for_resolve(tmp_path: Path) -> None:
    world = World(tmp_path, {"mem0": "both", "mnem": "both"}, "mnem", conflict="error")
    edit_both_sides(world)  # type: ignore[arg-type]
    report = world.sync()
    assert report.exit_code == 1 and report.conflicts[0]["state"] == "open"
    assert world.contents("mem0") == ["likes cocoa"] and world.contents("mnem") == ["likes coffee"]
    again = world.sync()
    assert [c["id"] for c in again.conflicts] == [
        report.conflicts[0]["id"]
    ]  # same conflict, not a new one
    with StagingStore.open(world.db_path) as store:
        store.conn.execute("UPDATE conflicts SET state = 'resolving', winner = 'mnem'")
    assert world.sync().exit_code == 0
    assert world.contents("mem0") == ["likes coffee"] == world.contents("mnem")


def test_conflict_keep_both_keeps_both_versions_everywhere(tmp_path: Path) -> None:
    world = World(tmp_path, {"mem0": "both", "mnem": "both"}, "mnem", conflict="keep-both")
    edit_both_sides(world)  # type: ignore[arg-type]
    world.sync()
    assert world.contents("mem0") == ["likes cocoa", "likes coffee"] == world.contents("mnem")
    assert world.sync().planned == []


def test_modify_beats_delete(world: World) -> None:
    record_id = world.providers["mem0"].app_add("likes tea")
    for i in range(10):
        world.providers["mem0"].app_add(f"filler {i}")
    world.sync()
    mnem_id = next(k for k, r in world.stores["mnem"].records.items() if r.content == "likes tea")
    world.providers["mnem"].delete(mnem_id)
    world.providers["mem0"].app_edit(record_id, "likes tea a lot")
    world.sync()
    assert "likes tea a lot" in world.contents("mnem")


def test_a_lost_staging_database_is_rebuilt_without_duplicates(world: World) -> None:
    for i in range(12):
        world.providers["mem0"].app_add(f"memory {i}")
    world.providers["mnem"].app_add("native to mnem")
    world.sync()
    world.db_path.unlink()
    report = world.sync()
    assert report.planned == []
    assert all(len(world.contents(n)) == 13 for n in world.providers)


def test_a_crash_mid_replay_converges_without_duplicates(world: World) -> None:
    for i in range(30):
        world.providers["mem0"].app_add(f"memory {i}")
    cut = PowerCut()
    calls = {"n": 0}
    real_create = world.providers["mnem"].create

    def crashing_create(item):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        result = real_create(item)
        if calls["n"] == 11:
            cut.fire()  # the write landed; memsync died before recording it
        return result

    world.providers["mnem"].create = crashing_create  # type: ignore[method-assign]
    with cut.armed():
        world.sync()
    assert cut.fired and len(world.contents("mnem")) == 11  # eleven writes landed...
    with StagingStore.open(world.db_path) as store:  # ...and the last one's outcome was lost
        assert store.count_records("mnem") < 11
    world.providers["mnem"].create = real_create  # type: ignore[method-assign]
    world.sync()
    assert all(
        world.contents(n) == sorted(f"memory {i}" for i in range(30)) for n in world.providers
    )


def test_a_moved_store_resets_its_mirror_instead_of_deleting(world: World) -> None:
    for i in range(6):
        world.providers["mem0"].app_add(f"memory {i}")
    world.sync()
    world.providers["backup"].scope = "elsewhere"  # a new identity: an empty, different store
    report = world.sync()
    assert report.providers["backup"].mirror.reset  # type: ignore[union-attr]
    assert len(world.contents("mnem")) == 6 and len(world.contents("backup")) == 6


def test_dry_run_writes_nothing_and_hides_nothing(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    dry = world.sync(dry_run=True)
    assert {(a["action"], a["provider"]) for a in dry.planned} == {
        ("create", "mnem"),
        ("create", "backup"),
    }
    assert world.contents("mnem") == [] and world.contents("backup") == []
    world.sync()
    assert world.contents("mnem") == ["likes tea"]


def test_switching_the_active_backend_creates_no_duplicates(world: World) -> None:
    for i in range(5):
        world.providers["mem0"].app_add(f"memory {i}")
    world.sync()
    switched = World.__new__(World)
    switched.__dict__.update(world.__dict__)
    from tests.engine_helpers import config_for

    switched.config = config_for({"mem0": "both", "mnem": "both", "backup": "push"}, "mem0")
    report = switched.sync()
    assert report.planned == []
    world.providers["mnem"].app_add("after the switch")
    switched.sync()
    assert all(len(world.contents(n)) == 6 for n in world.providers)


def test_duplicates_of_one_memory_are_cleaned_up(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    world.sync()
    (record,) = [r for r in world.stores["backup"].records.values()]
    world.stores["backup"].records["copy"] = dataclasses.replace(record, id="copy")
    world.sync()
    assert world.contents("backup") == ["likes tea"]


def test_the_journal_restores_a_provider_as_it_stood(world: World) -> None:
    record_id = world.providers["mem0"].app_add("version one")
    world.sync()
    with StagingStore.open(world.db_path) as store:
        (moment,) = store.conn.execute("SELECT MAX(at) FROM changes").fetchone()
    world.providers["mem0"].app_edit(record_id, "version two")
    world.sync()
    with StagingStore.open(world.db_path) as store:
        then = [r.content for r in records_at(store, "mem0", moment)]
        now = [r.content for r in records_at(store, "mem0", "2999-01-01T00:00:00Z")]
    assert then == ["version one"] and now == ["version two"]


def test_json_report_lists_skipped_records_with_reasons(world: World) -> None:
    world.providers["mem0"].app_add("real")
    world.stores["mem0"].records["empty"] = type(world.stores["mem0"].records["app1"])(
        id="empty", content="  "
    )
    report = world.sync()
    payload = json.loads(json.dumps(report.as_dict()))
    assert payload["providers"]["mem0"]["skipped"] == [{"id": "empty", "reason": "empty content"}]
    assert {a["memory"] for a in payload["actions"]} == {"mem0:app1"}
    assert payload["exit_code"] == 0


def test_only_one_provider_can_be_synced(world: World) -> None:
    world.providers["mem0"].app_add("from mem0")
    report = world.sync(only=["mem0"])
    assert report.providers["backup"].state == "skipped"
    assert world.contents("mnem") == ["from mem0"] and world.contents("backup") == []


def test_engine_never_holds_a_transaction_across_provider_calls(world: World) -> None:
    world.providers["mem0"].app_add("likes tea")
    seen = []
    real = world.providers["mnem"].create

    def spy(item):  # type: ignore[no-untyped-def]
        with StagingStore.open(world.db_path) as other:  # another process could write now
            other.conn.execute("BEGIN IMMEDIATE")
            other.conn.execute("ROLLBACK")
            seen.append(True)
        return real(item)

    world.providers["mnem"].create = spy  # type: ignore[method-assign]
    with StagingStore.open(world.db_path) as store:
        store.conn.execute("PRAGMA busy_timeout = 100")
        world.config.engine(store, world.providers).run_cycle(SyncOptions())  # type: ignore[arg-type]
    assert seen == [True]


def test_deletes_made_while_the_database_was_lost_are_kept_not_lost(world: World) -> None:
    # Without its database memsync cannot tell "deleted in mem0" from "new in mnem": it keeps
    # the memory (nothing is lost) rather than guess a delete. Documented in reliability.md.
    record_id = world.providers["mem0"].app_add("was deleted while memsync lost its state")
    world.sync()
    world.db_path.unlink()
    world.providers["mem0"].delete(record_id)
    world.sync()
    assert all(
        world.contents(n) == ["was deleted while memsync lost its state"] for n in world.providers
    )


def test_a_provider_that_changes_ids_on_update_is_followed(tmp_path: Path) -> None:
    # Cognee cannot update in place: it adds the new version and deletes the old one.
    from memsync.providers.memory import MemoryProvider

    class NewIdOnUpdate(MemoryProvider):
        def update(self, provider_id, item):  # type: ignore[no-untyped-def]
            self.delete(provider_id)
            return self.create(item)

    world = World(tmp_path, {"a": "both", "b": "both"}, "a")
    world.providers["b"] = NewIdOnUpdate("b", world.stores["b"], family="b", page_size=7)
    record_id = world.providers["a"].app_add("first version")
    world.sync()
    world.providers["a"].app_edit(record_id, "second version")
    world.sync()
    assert world.contents("b") == ["second version"]
    report = world.sync()
    assert report.planned == []  # the new id was followed: nothing left to do


def test_a_cycle_hands_back_the_heap_it_set_aside(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cycle keeps full collections off the heap it starts with (gc.freeze), and must give
    it back when it ends: a daemon that did not would never free what a closed store held in
    cycles of references."""
    import gc
    import weakref

    class Held:  # in a cycle of references, like an open store's objects
        def __init__(self) -> None:
            self.me = self

    held: list[Held] = [Held()]
    freed = weakref.ref(held[0])
    frozen_during: list[int] = []
    listing = world.providers["mnem"].listing

    def let_go_while_listing(*args: object, **kwargs: object) -> object:
        frozen_during.append(gc.get_freeze_count())
        held.clear()  # let go of it during the cycle, after the heap was set aside
        return listing(*args, **kwargs)

    monkeypatch.setattr(world.providers["mnem"], "listing", let_go_while_listing)
    world.providers["mem0"].app_add("likes tea")
    assert world.sync().exit_code == 0
    assert frozen_during and frozen_during[0] > 0  # set aside while the cycle ran
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert freed() is None  # what the cycle let go of is collected after it
