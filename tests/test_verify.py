"""`memsync verify` can go green: differences memsync's own handling makes are explained, apart
from real ones, and a wildcard config is verified scope by scope.

On the real Mem0 library and the real mnem SDK: a memory that expired and that memsync forgot
in mnem (a tombstone) is "explained", not "only in"; a memory removed behind memsync's back
still fails verify. Dream's merged and superseded memories (Mem0 Platform) are explained the
same way. ``verify A B`` without ``--scope`` over ``user_id = "*"`` gives a line per scope, a
total, and exit 0 only when every scope holds.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from memsync.base.dream import Dream
from memsync.base.records import Record
from memsync.cli import main
from memsync.engine.verify import verify
from memsync.providers.memory import MemoryProvider, MemoryStore
from memsync.staging import StagingStore
from tests import test_e2e_mnem
from tests.mem0_fixtures import Mem0App
from tests.test_e2e_mnem import memsync, synced_then_expired
from tests.test_scopes import configure, insert

mnem = test_e2e_mnem.mnem  # the fixtures, shared
synced_cat = test_e2e_mnem.synced_cat


def test_an_expired_memory_forgotten_in_mnem_is_explained_and_verify_holds(
    synced_cat: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_cat
    synced_then_expired(home, monkeypatch, "In Lisbon this week")  # mnem forgets it

    code, out = memsync(home, monkeypatch, "verify", "old", "agent")
    assert code == 0, out
    assert "reconciled: both hold the same memories" in out
    assert (
        "explained, only in old: 'In Lisbon this week': expired; memsync forgot it in agent "
        "(its history keeps it)"
    ) in out
    code, out = memsync(home, monkeypatch, "verify", "old", "agent", "--json")
    found = json.loads(out)
    assert (found["differences"], [e["reason"][:7] for e in found["explained"]]) == (
        [],
        ["expired"],
    )

    # A memory an agent removed behind memsync's back is a real difference, still.
    store = mnem.open(str(home / "agent"))
    (cat,) = [i for i, n in store.working_memory().items() if n.content == "Has a cat called Miso"]
    mnem.agents.forget(store, cat)
    del store
    gc.collect()
    code, out = memsync(home, monkeypatch, "verify", "old", "agent")
    assert code == 1, out
    assert "only in old: 'Has a cat called Miso'" in out
    assert "explained, only in old: 'In Lisbon this week'" in out


class ForgetsRetired(MemoryProvider):
    """A store memsync takes Dream's retired memories out of (mnem's tombstone)."""

    def _mine(self) -> list[Record]:
        return [r for r in super()._mine() if not Dream.of(r.provenance).retired]

    def listing(self, cursor: str | None = None) -> Any:
        listing = super().listing(cursor)
        listing.tombstones_retired = True
        return listing


def test_dream_merged_and_superseded_memories_are_explained_not_differences() -> None:
    platform = MemoryProvider("platform", MemoryStore())
    mnem_side = ForgetsRetired("mnem", MemoryStore())
    for text, state in (("lives in Lisbon", "superseded"), ("likes tea!", "merged"), ("x", None)):
        provenance = {"lifecycle_state": state} if state else {}
        for provider in (platform, mnem_side):
            provider.store.records[text] = Record(id=text, content=text, provenance=provenance)
    mnem_side.store.records["y"] = Record(id="y", content="only in mnem")

    report = verify(platform, mnem_side)

    assert [(d.only_in, d.content) for d in report.differences] == [("mnem", "only in mnem")]
    assert sorted(e.content for e in report.explained) == ["likes tea!", "lives in Lisbon"]
    assert {e.reason for e in report.explained} == {
        "retired by Dream; memsync forgot it in mnem (its history keeps it)"
    }
    mnem_side.store.records.pop("y")
    assert verify(platform, mnem_side).reconciled


def test_verify_without_a_scope_verifies_every_scope_of_a_wildcard_config(home: Path) -> None:
    configure(home)
    with Mem0App(home) as memory:
        for user in ("alice", "bob", "carol"):
            insert(memory, user, [f"{user} likes tea", f"{user} works at Acme"])
    runner = CliRunner()

    def cli(*args: str) -> Any:
        return runner.invoke(main, list(args), catch_exceptions=False)

    assert cli("sync").exit_code == 0
    held = cli("verify", "mem0", "agents")
    assert held.exit_code == 0, held.output
    assert held.output.splitlines() == [
        "user_id=alice: reconciled (mem0[user_id=alice]: 2, agents[user_id=alice]: 2)",
        "user_id=bob: reconciled (mem0[user_id=bob]: 2, agents[user_id=bob]: 2)",
        "user_id=carol: reconciled (mem0[user_id=carol]: 2, agents[user_id=carol]: 2)",
        "3 scope(s): 3 reconciled, 0 with differences, 0 could not be verified",
    ]

    with Mem0App(home) as memory:  # bob gets a memory no cycle has carried yet
        insert(memory, "bob", ["bob plays chess"])
    differs = cli("verify", "mem0", "agents")
    assert differs.exit_code == 1, differs.output
    assert "user_id=bob: 1 difference(s) (mem0[user_id=bob]: 3, agents[user_id=bob]: 2)" in (
        differs.output
    )
    assert "3 scope(s): 2 reconciled, 1 with differences, 0 could not be verified" in (
        differs.output
    )
    as_json = json.loads(cli("verify", "mem0", "agents", "--json").output)
    assert as_json["reconciled"] is False and as_json["total"]["differences"] == 1
    assert as_json["scopes"]["user_id=bob"]["differences"][0]["content"] == "bob plays chess"
    assert as_json["scopes"]["user_id=alice"]["reconciled"] is True

    with StagingStore.open(home / "state" / "staging.db") as store:  # the pair, as a whole
        whole = store.verify_results.latest("mem0", "agents")
        bob = store.verify_results.latest("mem0[user_id=bob]", "agents[user_id=bob]")
    assert whole is not None and (whole.reconciled, whole.differences) == (False, 1)
    assert bob is not None and not bob.reconciled


class HidesExpired(MemoryProvider):
    """A store whose listing leaves expired memories out (a Mem0 server from before
    ``show_expired``)."""

    def _mine(self) -> list[Record]:
        return [r for r in super()._mine() if not r.expired]

    def listing(self, cursor: str | None = None) -> Any:
        listing = super().listing(cursor)
        listing.hides_expired = True
        return listing


def test_an_expired_memory_a_store_cannot_hide_is_explained_against_one_that_hides_it() -> None:
    server, cognee_like = HidesExpired("server", MemoryStore()), MemoryProvider("kept")
    past = "2020-01-01"
    for provider in (server, cognee_like):
        provider.store.records["e"] = Record(id="e", content="was in Lisbon", expiration_date=past)
        provider.store.records["n"] = Record(id="n", content="likes tea")

    report = verify(server, cognee_like)

    assert report.reconciled and report.differences == []
    assert [(e.only_in, e.reason) for e in report.explained] == [
        ("kept", "expired; server does not serve expired memories")
    ]
