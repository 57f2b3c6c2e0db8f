"""A store that goes back in time is not copied: a rollback waits for the user's word.

Mem0's self-hosted server (the double, serving a real ``mem0.Memory``) beside the real mnem
SDK (the active backend) and a PMM backup. The server's memories are restored to an older
snapshot, straight on its Memory's vector store, as a restore from last night's backup (or a
server that lost acknowledged writes over a restart) does: older versions come back with
older ``updated_at``, memories written since are gone. memsync copies none of it: each is
"rolled back in server", in the cycle's report, ``status`` and ``conflicts``, until the user
keeps one side. Many at once refuse the server for the cycle, as ``max_delete`` does.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mnem  # the real SDK: a missing build is an error, not a skip
import pytest
from click.testing import CliRunner
from qdrant_client import models

from memsync.base.errors import MemsyncError
from memsync.base.secrets import Secret
from memsync.cli import main
from memsync.engine.conflicts import choose_winner, settle_rollbacks
from memsync.engine.report import CycleReport, SyncOptions
from memsync.engine.verify import verify
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mnem.provider import MnemProvider
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.conftest import write_config
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.engine_helpers import config_for

KEY = "m0-admin-key"
N = 20


class Snapshot:
    """The server's vector store as it stood: every point, its vector and payload."""

    def __init__(self, double: Mem0ServerDouble) -> None:
        self.store = double.memory.vector_store
        self.points = self._points()

    def _points(self) -> list[Any]:
        points, _ = self.store.client.scroll(
            collection_name=self.store.collection_name,
            limit=100_000,
            with_payload=True,
            with_vectors=True,
        )
        return list(points)

    def restore(self) -> None:
        """Back to the snapshot: newer versions overwritten, memories made since gone."""
        kept = {str(p.id) for p in self.points}
        newer = [str(p.id) for p in self._points() if str(p.id) not in kept]
        client, collection = self.store.client, self.store.collection_name
        if newer:
            client.delete(collection, points_selector=models.PointIdsList(points=newer))
        if self.points:
            client.upsert(
                collection,
                points=[
                    models.PointStruct(id=p.id, vector=p.vector, payload=p.payload)
                    for p in self.points
                ],
            )


class World:
    """The server (both ways), mnem (active, the agents' store), a PMM backup (push)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        (home / "config").mkdir(exist_ok=True)
        self.double = Mem0ServerDouble(api_key=KEY)
        self.memory = self.double.memory
        mnem.init(str(home / "agent"))
        gc.collect()
        self.server = Mem0ServerProvider(
            "server",
            "https://mem0.test",
            {"user_id": "alice"},
            secret=Secret(KEY, "$MEM0_KEY"),
            transport=self.double.transport(),
        )
        self.agent = MnemProvider("agent", home / "agent")
        self.backup = PmmDirProvider("backup", home / "pmm", scope_key="alice")
        self.config = config_for({"server": "both", "agent": "both", "backup": "push"}, "agent")
        self.database = home / "state" / "staging.db"
        write_config(  # for `memsync status` and `memsync conflicts` over the same database
            home,
            '[sync]\nactive = "agent"\n'
            '[providers.server]\ntype = "mem0-server"\nbase_url = "https://mem0.test"\n'
            'api_key_env = "MEM0_KEY"\nscope = { user_id = "alice" }\n'
            f'[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n'
            f'[providers.backup]\ntype = "pmm-dir"\npath = "{home / "pmm"}"\n'
            'direction = "push"\nscope_key = "alice"\n',
        )
        self.ids = {}
        for n in range(N):
            answer = self.memory.add(f"memory number {n}", user_id="alice", infer=False)
            self.ids[f"memory number {n}"] = answer["results"][0]["id"]

    def sync(self) -> CycleReport:
        providers = {"server": self.server, "agent": self.agent, "backup": self.backup}
        with StagingStore.open(self.database) as store:
            return self.config.engine(store, providers).run_cycle(SyncOptions())

    def store(self) -> StagingStore:
        return StagingStore.open(self.database)

    def server_texts(self) -> set[str]:
        found = self.memory.get_all(filters={"user_id": "alice"}, top_k=1000)["results"]
        return {item["memory"] for item in found}

    def agent_texts(self) -> set[str]:
        store = mnem.open(str(self.home / "agent"))
        try:
            return {node.content for node in store.working_memory().values()}
        finally:
            del store
            gc.collect()

    def backup_texts(self) -> set[str]:
        lines = (self.home / "pmm" / "alice.pmm.jsonl").read_text().splitlines()[1:]
        return {json.loads(line)["content"] for line in lines}

    def agent_rewrites(self, old: str, new: str) -> None:
        store = mnem.open(str(self.home / "agent"))
        try:
            node_id = next(i for i, n in store.working_memory().items() if n.content == old)
            mnem.agents.remember(store, node_id, new, source="agent-7")
        finally:
            del store
            gc.collect()

    def agent_adds(self, node_id: str, text: str) -> None:
        store = mnem.open(str(self.home / "agent"))
        try:
            mnem.agents.remember(store, node_id, text, source="agent-7")
        finally:
            del store
            gc.collect()

    def cli(self, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
        monkeypatch.setenv("MEMSYNC_HOME", str(self.home))
        return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = World(tmp_path)
    first = world.sync()
    assert first.exit_code == 0, first.as_dict()
    assert len(world.agent_texts()) == N
    yield world


def test_a_server_restored_to_an_older_snapshot_reverts_nothing_elsewhere(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A draft memsync never sees is in the backup: its version token is new to memsync,
    # only its updated_at (older than the final one memsync saw) tells it is not an edit.
    world.memory.update(world.ids["memory number 4"], "memory number 4, a draft")
    snapshot = Snapshot(world.double)
    world.memory.update(world.ids["memory number 4"], "memory number 4, final")
    # memsync writes the agent's version into the server, which later loses it: the
    # version that comes back is one memsync saw before and superseded.
    world.agent_rewrites("memory number 1", "memory number 1, the agent's newer version")
    world.memory.update(world.ids["memory number 2"], "memory number 2, edited on the server")
    world.agent_adds("chess", "plays chess")
    settled = world.sync()
    assert settled.exit_code == 0, settled.as_dict()
    newer = {
        "memory number 1, the agent's newer version",
        "memory number 2, edited on the server",
        "memory number 4, final",
        "plays chess",
    }
    assert newer <= world.server_texts() and newer <= world.agent_texts()

    snapshot.restore()  # last night's backup: the newer versions and the chess memory gone
    world.memory.update(world.ids["memory number 3"], "memory number 3, edited after the restore")
    report = world.sync()

    rolled = {c.link_id: c for c in report.conflicts if c.rolled_back == "server"}
    assert len(rolled) == 4 and {c.state for c in rolled.values()} == {"open"}
    assert report.exit_code == 1
    assert report.providers["server"].mirror.rolled_back == 4  # type: ignore[union-attr]
    # Nothing reverted, deleted or copied elsewhere; the edit made after the restore flows.
    for texts in (world.agent_texts(), world.backup_texts()):
        assert newer <= texts
        assert "memory number 3, edited after the restore" in texts
        assert not {"memory number 1", "memory number 2", "memory number 4, a draft"} & texts
    assert "plays chess" not in world.server_texts()

    status = json.loads(world.cli(monkeypatch, "status", "--json").output)
    assert status["rollbacks"] == {"server": 4}
    assert status["providers"]["server"]["rolled_back"] == 4
    text = world.cli(monkeypatch, "status").output
    assert "rolled back in server: 4" in text, text
    listed = world.cli(monkeypatch, "conflicts").output
    assert listed.count("rolled back in server") == 4, listed
    assert "(gone from server" in listed, listed
    again = world.sync()  # a quiet cycle: the same three, still open, nothing written
    assert {c.id for c in again.conflicts} == {c.id for c in rolled.values()}
    assert sum(again.replayed.values()) == 0

    # The user settles each: the agent's version back into the server; the server's older
    # text of memory 2 everywhere; the chess memory back into the server.
    by_text = {}
    with world.store() as store:
        for conflict in store.conflicts.waiting():
            by_text[conflict.versions["agent"]["content"]] = conflict.id
    with world.store() as store:
        choose_winner(store, by_text["memory number 1, the agent's newer version"], "agent")
        choose_winner(store, by_text["memory number 2, edited on the server"], "server")
        choose_winner(store, by_text["plays chess"], "agent")
        choose_winner(store, by_text["memory number 4, final"], "agent")
    done = world.sync()
    assert done.exit_code == 0, done.as_dict()
    expected = (newer - {"memory number 2, edited on the server"}) | {"memory number 2"}
    assert expected <= world.server_texts() and expected <= world.agent_texts()
    assert expected <= world.backup_texts()
    assert verify(world.server, world.agent).reconciled
    with world.store() as store:
        assert store.rollbacks.counts() == {} and store.conflicts.count_open() == 0
    assert world.sync().planned_total == 0  # settled for good


def test_many_rollbacks_at_once_refuse_the_store_until_the_user_settles_them_all(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = Snapshot(world.double)
    for n in range(10):
        world.agent_rewrites(f"memory number {n}", f"memory number {n}, newer")
    assert world.sync().exit_code == 0
    snapshot.restore()

    refused = world.sync()
    server = refused.providers["server"]
    assert refused.exit_code == 6 and server.state == "refused"
    assert server.mirror is not None and server.mirror.refused_by == "rollbacks"
    assert "10 of 20 memories in server are older versions" in (server.mirror.refused or "")
    assert refused.conflicts == [] and sum(refused.replayed.values()) == 0
    newer = {f"memory number {n}, newer" for n in range(10)}
    assert newer <= world.agent_texts() and newer <= world.backup_texts()
    assert world.sync().exit_code == 6  # still refused: nothing settled yet

    result = world.cli(
        monkeypatch, "resolve", "--rolled-back", "server", "--keep", "agent", "--no-sync"
    )
    assert result.exit_code == 0, result.output
    assert "10 rolled-back memories in server: keeping agent's version" in result.output
    done = world.sync()
    assert done.exit_code == 0, done.as_dict()
    assert done.replayed == {"update": 10}
    assert newer <= world.server_texts()
    with world.store() as store:
        assert store.rollbacks.counts() == {}


def test_settling_rollbacks_where_there_are_none_says_so(world: World) -> None:
    with world.store() as store, pytest.raises(MemsyncError, match="no memory of server is"):
        settle_rollbacks(store, "server", "agent")


def test_a_store_that_went_back_and_then_lists_nothing_is_refused_not_emptied(
    world: World,
) -> None:
    snapshot = Snapshot(world.double)
    world.agent_rewrites("memory number 1", "memory number 1, newer")
    assert world.sync().exit_code == 0
    snapshot.restore()
    assert world.sync().exit_code == 1  # one rollback, open
    empty = Snapshot(world.double)
    empty.points = []
    empty.restore()  # the server now answers an empty listing

    report = world.sync()

    server = report.providers["server"].mirror
    assert report.exit_code == 6 and server is not None and server.refused_by == "max_delete"
    assert "listed no memories" in (server.refused or "")
    with world.store() as store:
        assert store.rollbacks.counts() == {"server": 1}  # nothing else taken for lost
        assert store.count_records("server") == N
    assert len(world.agent_texts()) == N and "memory number 1, newer" in world.agent_texts()
