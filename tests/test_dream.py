"""Dream on the Mem0 Platform retires memories without deleting them; so does memsync.

A memory synced from the Platform into mnem (the real SDK), a PMM backup and a self-hosted
Mem0 server is merged, then superseded, on the Platform (the double's backdoor, as Dream's
background would). Nothing is deleted anywhere; the three Dream fields reach every store and
the journal; mnem serves the current truth (it forgets retired memories with a tombstone
commit, its history keeps them); the server, which has no Dream, keeps serving them with the
fields in memsync's metadata. ``latest_only`` reads the current truth only and still deletes
nothing Dream retired.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import httpx
import mnem  # a missing SDK is an error: build it with ../shared/mnem-sdk/build.sh
import pytest

from memsync.base.dream import Dream
from memsync.base.records import Record, fingerprint
from memsync.base.secrets import Secret
from memsync.engine.report import CycleReport, SyncOptions
from memsync.providers.mem0.convert import record_from_mem0, version_of
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mnem.provider import MnemProvider
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.engine_helpers import config_for

KEY = "m0-dream-key-0123456789"


def platform_provider(double: Mem0PlatformDouble, **kwargs: Any) -> Mem0PlatformProvider:
    return Mem0PlatformProvider(
        "mem0",
        {"user_id": "alice"},
        secret=Secret(KEY, "$MEM0_API_KEY"),
        base_url="https://api.mem0.test",
        transport=double.transport(),
        **kwargs,
    )


class World:
    """The Platform (active), mnem and a server beside it, a PMM backup: full-listing cycles."""

    def __init__(self, tmp: Path, *, latest_only: bool = False, **sync: Any) -> None:
        self.platform = Mem0PlatformDouble(api_key=KEY)
        self.server = Mem0ServerDouble(api_key=KEY)
        mnem.init(str(tmp / "brain"))
        self.mnem_path = tmp / "brain"
        self.backup_dir = tmp / "backup"
        self.providers = {
            "mem0": platform_provider(self.platform, latest_only=latest_only),
            "mnem": MnemProvider("mnem", self.mnem_path),
            "server": Mem0ServerProvider(
                "server",
                "https://mem0.test",
                {"user_id": "alice"},
                secret=Secret(KEY, "$SERVER_KEY"),
                transport=self.server.transport(),
            ),
            "backup": PmmDirProvider("backup", self.backup_dir, scope_key="alice"),
        }
        self.config = config_for(
            {"mem0": "both", "mnem": "both", "server": "push", "backup": "push"}, "mem0", **sync
        )
        self.db = tmp / "staging.db"

    def add(self, text: str) -> str:
        return self.platform.insert(text, user_id="alice")

    def sync(self) -> CycleReport:
        with StagingStore.open(self.db) as store:
            # full listings: deletes are inferred only from them, so they are what is at stake
            report = self.config.engine(store, self.providers).run_cycle(SyncOptions(full=True))
        assert report.exit_code == 0, report.as_dict()
        return report

    def backup(self) -> dict[str, dict[str, Any]]:
        lines = next(self.backup_dir.iterdir()).read_text("utf-8").splitlines()[1:]
        return {r["content"]: r for r in map(json.loads, lines)}

    def served_by_mnem(self) -> dict[str, Any]:
        store = mnem.open(str(self.mnem_path))
        try:
            return {n.content: n for n in store.working_memory().values()}
        finally:
            del store
            gc.collect()

    def mnem_history(self) -> tuple[list[str], set[str]]:
        """mnem's commit messages, and every text a commit ever held."""
        store = mnem.open(str(self.mnem_path))
        try:
            commits = store.log()
            texts = {n.content for c in commits for n in store.state_at(c.id).values()}
            return [c.message for c in commits], texts
        finally:
            del store
            gc.collect()

    def served_by_server(self) -> dict[str, Record]:
        provider = self.providers["server"]
        with provider:
            return {r.content: r for p in provider.listing().pages() for r in p.records}


def removed(report: CycleReport) -> dict[str, int]:
    return {n: o.mirror.removed for n, o in report.providers.items() if o.mirror}


NOTHING_REMOVED = {"mem0": 0, "mnem": 0, "server": 0, "backup": 0}


def test_a_merged_then_superseded_memory_is_deleted_nowhere_and_its_state_travels(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    rex = world.add("User has a dog named Rex")
    richer = world.add("User's dog Rex is a 3-year-old golden retriever")
    world.add("likes green tea")
    world.sync()
    assert set(world.served_by_mnem()) >= {"User has a dog named Rex", "likes green tea"}

    # Dream folds the barer memory into the richer one: a default read no longer shows it.
    world.platform.merge(rex, into=richer)
    report = world.sync()
    assert removed(report) == NOTHING_REMOVED and report.replayed.get("delete", 0) == 0
    own = world.backup()["User has a dog named Rex"]["metadata"]["memsync"]
    assert own["provenance"]["lifecycle_state"] == "merged"  # the backup keeps it, marked
    assert own["provenance"]["replaced_by"] == richer
    served = world.served_by_mnem()
    assert "User has a dog named Rex" not in served  # mnem serves the current truth...
    assert "User's dog Rex is a 3-year-old golden retriever" in served
    messages, texts = world.mnem_history()
    assert any(m.startswith("memsync: forgot 1 retired by Dream") for m in messages)
    assert "User has a dog named Rex" in texts  # ...and its history keeps the merged one
    kept = world.served_by_server()["User has a dog named Rex"]  # no Dream there: served
    assert Dream.of(kept.provenance) == Dream("merged", richer, False)

    # Then a newer fact supersedes the canonical one, and Dream distils a pattern.
    vet = world.add("User's dog Rex is now a 4-year-old golden retriever")
    world.platform.supersede(richer, by=vet)
    pattern = world.platform.synthesize(
        "User cares a lot about their dog Rex", [richer, vet], user_id="alice"
    )
    report = world.sync()
    assert removed(report) == NOTHING_REMOVED and report.replayed.get("delete", 0) == 0
    assert set(world.platform.memories) >= {rex, richer, vet, pattern}  # Dream deleted nothing
    backup = world.backup()
    state = {text: r["metadata"]["memsync"]["provenance"] for text, r in backup.items()}
    assert state["User has a dog named Rex"]["lifecycle_state"] == "merged"
    assert state["User's dog Rex is a 3-year-old golden retriever"]["lifecycle_state"] == (
        "superseded"
    )
    assert state["User's dog Rex is a 3-year-old golden retriever"]["replaced_by"] == vet
    assert state["User cares a lot about their dog Rex"]["synthesized"] is True
    assert set(world.served_by_mnem()) == {
        "likes green tea",
        "User's dog Rex is now a 4-year-old golden retriever",
        "User cares a lot about their dog Rex",
    }
    _, texts = world.mnem_history()
    assert "User's dog Rex is a 3-year-old golden retriever" in texts
    assert len(world.served_by_server()) == 5  # the server keeps serving all of them

    # Through the journal: each change of state is a journalled version of the memory.
    with StagingStore.open(world.db) as store:
        history = [
            json.loads(row["provenance"] or "{}").get("lifecycle_state")
            for row in store.conn.execute(
                "SELECT provenance FROM changes WHERE provider = 'mem0' AND provider_id = ? "
                "ORDER BY seq",
                (richer,),
            )
        ]
    assert history == ["active", "superseded"]

    quiet = world.sync()  # no churn: the states read back from every store as written
    assert quiet.planned_total == 0 and removed(quiet) == NOTHING_REMOVED


def test_without_include_merged_a_merge_would_look_like_a_delete(tmp_path: Path) -> None:
    # What memsync must never do: the default read really does hide a merged memory.
    world = World(tmp_path)
    rex = world.add("User has a dog named Rex")
    richer = world.add("User's dog Rex is a golden retriever")
    world.platform.merge(rex, into=richer)
    default = httpx.Client(transport=world.platform.transport(), base_url="https://api.mem0.test")
    answer = default.post(
        "/v3/memories/",
        json={"filters": {"user_id": "alice"}, "show_expired": True},
        headers={"Authorization": f"Token {KEY}"},
    ).json()
    assert [r["id"] for r in answer["results"]] == [richer]
    world.sync()  # memsync asks include_merged: it sees and copies both
    assert "User has a dog named Rex" in world.backup()
    # retired when mnem first got it: written, then forgotten in the same cycle
    assert set(world.served_by_mnem()) == {"User's dog Rex is a golden retriever"}
    assert "User has a dog named Rex" in world.mnem_history()[1]
    quiet = world.sync()
    assert quiet.planned_total == 0 and removed(quiet) == NOTHING_REMOVED


def test_a_copy_on_a_platform_without_dream_history_keeps_the_state_it_was_given() -> None:
    # memsync copied a merged memory into another Platform project: that Platform answers
    # lifecycle_state "active" for it, which says nothing; the carried state stands.
    carried = {
        "memsync_provenance": json.dumps(
            {"lifecycle_state": "merged", "replaced_by": "r1", "synthesized": True}
        )
    }
    raw = {
        "id": "m1",
        "memory": "User has a dog named Rex",
        "metadata": carried,
        "lifecycle_state": "active",
        "replaced_by": None,
        "synthesized": False,
    }
    record = record_from_mem0(raw, "alice")
    assert isinstance(record, Record)
    assert Dream.of(record.provenance) == Dream("merged", "r1", True)
    # Dream acting on the copy there says something: it wins over what was carried.
    superseded = record_from_mem0({**raw, "lifecycle_state": "superseded"}, "alice")
    assert isinstance(superseded, Record)
    assert Dream.of(superseded.provenance).lifecycle_state == "superseded"


def test_dream_marks_join_the_fingerprint_and_version_only_when_they_say_something() -> None:
    plain = fingerprint("likes tea", {"k": 1})
    untouched = {"lifecycle_state": "active", "replaced_by": None, "synthesized": False}
    assert fingerprint("likes tea", {"k": 1}, provenance=untouched) == plain
    retired = {"lifecycle_state": "superseded", "replaced_by": "m2"}
    assert fingerprint("likes tea", {"k": 1}, provenance=retired) != plain
    record = Record(id="m1", content="likes tea", metadata={"k": 1}, provenance=retired)
    assert record.fingerprint == fingerprint("likes tea", {"k": 1}, provenance=retired)
    token = {"hash": "h", "updated_at": "2026-01-01T00:00:00Z"}
    assert version_of({**token, **untouched}) == "h@2026-01-01T00:00:00Z"
    # Dream need not move updated_at: the token still changes, so the mirror looks again.
    assert version_of({**token, **retired}) != version_of(token)


def test_a_replaced_memory_without_a_state_is_retired() -> None:
    # The v3 list schema names replaced_by but not lifecycle_state.
    assert Dream.of({"replaced_by": "m2"}).retired
    assert not Dream.of({"lifecycle_state": "active"}).retired
    assert not Dream.of({"synthesized": True}).retired
    assert Dream.of({"lifecycle_state": "merged", "replaced_by": "m2"}).retired


# latest_only ------------------------------------------------------------------------------


def test_latest_only_copies_the_current_truth_and_still_deletes_nothing_dream_retired(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, latest_only=True, max_delete="100%")
    lisbon = world.add("User lives in Lisbon")
    berlin = world.add("User moved to Berlin")
    world.platform.supersede(lisbon, by=berlin)  # retired before memsync first looked
    tea = world.add("likes green tea")
    world.add("works at ACME")
    world.sync()
    listed = world.platform.faults.requests("POST", "/v3/memories/")
    assert listed[0].body["latest_only"] is True and "include_merged" not in listed[0].body
    assert "User lives in Lisbon" not in world.backup()  # never copied
    assert set(world.backup()) == {"User moved to Berlin", "likes green tea", "works at ACME"}

    # Retired after it was synced: it leaves the listing, is read by id once, and its new
    # state travels instead of a delete.
    world.platform.merge(tea, into=berlin)
    gets_before = len(world.platform.faults.requests("GET", "/v1/memories/"))
    report = world.sync()
    assert removed(report) == NOTHING_REMOVED
    gets = world.platform.faults.requests("GET", "/v1/memories/")[gets_before:]
    assert [g.path for g in gets] == [f"/v1/memories/{tea}/"]
    own = world.backup()["likes green tea"]["metadata"]["memsync"]["provenance"]
    assert own["lifecycle_state"] == "merged"
    assert "likes green tea" not in world.served_by_mnem()

    gets_before = len(world.platform.faults.requests("GET", "/v1/memories/"))
    quiet = world.sync()  # known retired: kept without reading it again
    assert quiet.planned_total == 0 and removed(quiet) == NOTHING_REMOVED
    assert len(world.platform.faults.requests("GET", "/v1/memories/")) == gets_before

    del world.platform.memories[berlin]  # a memory really deleted is still a delete
    report = world.sync()
    assert removed(report)["mem0"] == 1
    assert "User moved to Berlin" not in world.backup()


@pytest.mark.parametrize("flag", ["include_merged", "latest_only"])
def test_the_platform_provider_asks_for_what_it_is_configured_to_see(flag: str) -> None:
    double = Mem0PlatformDouble(api_key=KEY)
    double.insert("one", user_id="alice")
    provider = platform_provider(double, latest_only=flag == "latest_only")
    with provider:
        listing = provider.listing()
        list(listing.pages())
    (seen,) = double.faults.requests("POST", "/v3/memories/")
    assert seen.body[flag] is True and seen.body["show_expired"] is True
    assert listing.hides_retired is (flag == "latest_only")


def test_import_mem0_through_memoryclient_moves_merged_memories_too(tmp_path: Path) -> None:
    # The one-shot import reads the Platform with Mem0's own client, unmodified: it asks
    # include_merged as memsync's listing does, and mnem forgets what Dream retired.
    from mem0 import MemoryClient

    from memsync import import_mem0

    double = Mem0PlatformDouble(api_key=KEY)
    rex = double.insert("User has a dog named Rex", user_id="alice")
    richer = double.insert("User's dog Rex is a golden retriever", user_id="alice")
    double.merge(rex, into=richer)
    client = MemoryClient(
        api_key=KEY,
        host="https://api.mem0.test",
        client=httpx.Client(transport=double.transport()),
    )
    store = mnem.init(str(tmp_path / "brain"))
    try:
        report = import_mem0(store, client, filters={"user_id": "alice"})
        assert report.complete and report.imported == 2
        served = {n.content for n in store.working_memory().values()}
        assert served == {"User's dog Rex is a golden retriever"}
        again = import_mem0(store, client, filters={"user_id": "alice"})
        assert again.imported == 0  # the forgotten one counts as present
    finally:
        del store
        gc.collect()
    (listed, *_) = double.faults.requests("POST", "/v3/memories/")
    assert listed.body["include_merged"] is True


def test_mnems_daily_sweep_forgets_a_retired_memory_an_older_memsync_wrote_as_plain(
    tmp_path: Path,
) -> None:
    # Before Dream's states counted, memsync copied a superseded fact into mnem as a plain
    # memory (its state already in the note's provenance). The first listing of the day
    # forgets it; its history keeps it.
    from memsync.base.records import Outgoing
    from memsync.providers.mnem import expiry
    from memsync.providers.mnem.convert import node_spec

    path = tmp_path / "brain"
    store = mnem.init(str(path))
    try:
        for origin, text, provenance in (
            ("mem0:old", "User lives in Lisbon", {"lifecycle_state": "superseded"}),
            ("mem0:new", "User moved to Berlin", {"lifecycle_state": "active"}),
        ):
            spec = node_spec(Outgoing(origin=origin, content=text, provenance=provenance))
            store.add(
                spec.id,
                spec.content,
                content_kind=spec.content_kind,
                provenance=mnem.Provenance(**spec.provenance),
            )
        store.commit("memsync: 2 added from mem0", author="memsync")
    finally:
        del store
        gc.collect()
    expiry._SWEPT.clear()
    provider = MnemProvider("mnem", path)
    with provider:
        served = {r.content for p in provider.listing().pages() for r in p.records}
        hidden = {r.content for r in provider.hidden_records()}
    assert served == {"User moved to Berlin"}
    assert hidden == {"User lives in Lisbon"}
