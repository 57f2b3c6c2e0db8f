"""A write never overwrites an edit memsync has not seen.

Remote stores (the Mem0 server and platform) stay writable while a cycle runs: an edit that
lands between the mirror and the replay must survive, and be journaled. Local stores (mem0-oss,
mnem) admit one handle at a time, and memsync holds it from mirror to replay: an application
that tries to write mid-cycle is turned away until the cycle ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mnem  # a missing SDK is an error: build it with ../shared/mnem-sdk/build.sh
import pytest

import memsync.engine.cycle as engine_module
from memsync.engine.report import CycleReport, SyncOptions
from memsync.providers.memory import MemoryProvider, MemoryStore
from memsync.providers.mnem.provider import MnemProvider
from memsync.staging import StagingStore
from tests.engine_helpers import config_for
from tests.mem0_fixtures import open_provider
from tests.test_expiry import PlatformSide, ServerSide


class MidCycle:
    """Runs ``action`` once, after the plan and before the replay of the next cycle."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.action: Any = None
        self.outcome: Any = None
        original = engine_module.fault_point

        def hook(name: str) -> None:
            original(name)
            if name == "cycle:after-plan" and self.action is not None:
                action, self.action = self.action, None
                self.outcome = action()

        monkeypatch.setattr(engine_module, "fault_point", hook)


def run(db: Path, config: Any, providers: dict[str, Any], **options: Any) -> CycleReport:
    with StagingStore.open(db) as store:
        return config.engine(store, providers).run_cycle(SyncOptions(**options))


@pytest.mark.parametrize("side_type", [PlatformSide, ServerSide], ids=["platform", "server"])
def test_an_edit_between_mirror_and_replay_survives_and_is_journaled(
    side_type: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mid = MidCycle(monkeypatch)
    side = side_type(tmp_path)
    app = MemoryProvider("app", MemoryStore(), family="app")
    providers = {"app": app, "mem0": side.provider}
    config = config_for({"app": "both", "mem0": "both"}, "app")
    db = tmp_path / "staging.db"
    memory = app.app_add("likes tea")
    run(db, config, providers)
    with StagingStore.open(db) as store:
        (remote_id,) = [r.id for r in store.iter_records("mem0")]

    app.app_edit(memory, "likes green tea")  # memsync will plan an update into Mem0...

    def edit_in_mem0() -> None:  # ...and an agent edits the same memory there meanwhile
        if isinstance(side, PlatformSide):
            record = side.double.memories[remote_id]
            side.double._touch(record, "likes oolong", record["metadata"])
        else:
            side.memory.update(remote_id, text="likes oolong")

    mid.action = edit_in_mem0
    report = run(db, config, providers)
    assert mid.action is None  # the edit did land mid-cycle
    assert report.providers["mem0"].replanned == 1
    assert report.replayed.get("update", 0) == 0
    assert side.provider.get(remote_id).content == "likes oolong"  # not overwritten

    report = run(db, config, providers, full=True)
    with StagingStore.open(db) as store:
        journaled = store.conn.execute(
            "SELECT kind FROM changes WHERE provider = 'mem0' AND content = 'likes oolong'"
        ).fetchall()
        losing = store.conn.execute(
            "SELECT 1 FROM changes WHERE provider = 'app' AND content = 'likes green tea'"
        ).fetchall()
    assert [row[0] for row in journaled] == ["changed"]  # the edit is in the journal
    assert losing  # and so is the version it raced with: nothing is silently dropped
    # both sides changed one memory: a conflict, settled by the policy (newest wins here)
    assert app.contents() == ["likes oolong"]
    assert side.provider.get(remote_id).content == "likes oolong"


def test_the_freshness_check_costs_one_listing_query_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = PlatformSide(tmp_path)
    app = MemoryProvider("app", MemoryStore(), family="app")
    providers = {"app": app, "mem0": side.provider}
    config = config_for({"app": "both", "mem0": "both"}, "app")
    db = tmp_path / "staging.db"
    ids = [app.app_add(f"memory {i}") for i in range(40)]
    run(db, config, providers)
    for memory_id in ids:
        app.app_edit(memory_id, f"{memory_id} edited")
    before = len(side.double.faults.requests("POST", "/v3/memories/"))
    run(db, config, providers)
    lists = side.double.faults.requests("POST", "/v3/memories/")[before:]
    freshness = [r for r in lists if "updated_at" in str(r.body)]
    assert len(freshness) == 1  # 40 updates, one batch, one freshness query


def test_mnem_is_held_from_mirror_to_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mid = MidCycle(monkeypatch)
    mnem.init(str(tmp_path / "brain"))
    brain = MnemProvider("brain", tmp_path / "brain")
    app = MemoryProvider("app", MemoryStore(), family="app")
    config = config_for({"app": "both", "brain": "both"}, "app")
    app.app_add("likes tea")

    def agent_opens_the_store() -> str:
        try:
            store = mnem.open(str(tmp_path / "brain"))
        except mnem.StoreIoError as exc:
            return f"refused: {exc}"
        del store
        return "opened"

    mid.action = agent_opens_the_store
    report = run(tmp_path / "staging.db", config, {"app": app, "brain": brain})
    assert report.replayed["create"] == 1
    assert mid.outcome.startswith("refused") and "lock" in mid.outcome.lower()
    assert agent_opens_the_store() == "opened"  # released when the cycle ends


def test_mem0_oss_is_held_from_mirror_to_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mid = MidCycle(monkeypatch)
    store_dir = tmp_path / "mem0"
    local = open_provider(store_dir, {"user_id": "alice"}, mem0_dir=tmp_path / "m0d")
    local.close()
    app = MemoryProvider("app", MemoryStore(), family="app")
    config = config_for({"app": "both", "mem0": "both"}, "app")
    app.app_add("likes tea")

    def application_opens_qdrant() -> str:
        from qdrant_client import QdrantClient

        try:
            client = QdrantClient(path=str(store_dir / "qdrant"))
        except RuntimeError as exc:
            return f"refused: {exc}"
        client.close()
        return "opened"

    mid.action = application_opens_qdrant
    report = run(tmp_path / "staging.db", config, {"app": app, "mem0": local})
    assert report.replayed["create"] == 1
    assert mid.outcome.startswith("refused") and "already accessed" in mid.outcome
    assert application_opens_qdrant() == "opened"  # released when the cycle ends
