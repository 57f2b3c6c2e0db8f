"""Expiry is not deletion, on every Mem0 provider type, through real cycles.

A memory synced from Mem0 into mnem and a PMM backup expires between two cycles (the clock of
memsync and of Mem0 moves past its date): Mem0 now hides it from its default listing, yet
nothing is deleted anywhere. Its date reached the other stores; mnem stops serving it with a
tombstone commit (its history keeps it); clearing the date brings it back everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import mnem  # a missing SDK is an error: build it with ../shared/mnem-sdk/build.sh
import pytest

import memsync.base.records
from memsync.base.secrets import Secret
from memsync.engine.report import CycleReport, SyncOptions
from memsync.providers.base import Provider
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mnem.provider import MnemProvider
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.engine_helpers import config_for
from tests.mem0_fixtures import open_provider

KEY = "m0-test-key"
TODAY = datetime.now(UTC).date()
DUE = (TODAY + timedelta(days=1)).isoformat()  # not expired today; expired in three days


class Clock:
    """Moves memsync's and Mem0's idea of "now" forward (both read it at call time)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.offset = timedelta(0)
        self.monkeypatch = monkeypatch
        import mem0.memory.main as mem0_main

        clock = self

        class ShiftedDatetime(datetime):
            @classmethod
            def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
                return datetime.now(tz) + clock.offset

        monkeypatch.setattr(mem0_main, "datetime", ShiftedDatetime)
        monkeypatch.setattr(
            memsync.base.records, "utc_clock", lambda: datetime.now(UTC) + self.offset
        )

    def advance(self, days: int) -> None:
        self.offset += timedelta(days=days)


class Mem0Side:
    """One Mem0 store as the application uses it, and memsync's provider for it."""

    provider: Provider

    def add(self, text: str, expiration_date: str | None) -> str: ...
    def set_date(self, memory_id: str, expiration_date: str | None) -> None: ...
    def holds(self, memory_id: str) -> bool: ...
    def date_of(self, memory_id: str) -> str | None: ...
    def default_listing(self) -> set[str]: ...  # what an app sees without show_expired


class LibrarySide(Mem0Side):
    def __init__(self, tmp: Path) -> None:
        self.provider = open_provider(tmp / "mem0", {"user_id": "alice"}, mem0_dir=tmp / "m0d")
        self.provider.close()

    def _memory(self) -> Iterator[Any]:
        raise NotImplementedError

    def _with(self, call: Any) -> Any:
        self.provider.open()
        try:
            return call(self.provider.memory)  # type: ignore[attr-defined]
        finally:
            self.provider.close()

    def add(self, text: str, expiration_date: str | None) -> str:
        answer = self._with(
            lambda m: m.add(text, user_id="alice", infer=False, expiration_date=expiration_date)
        )
        return str(answer["results"][0]["id"])

    def set_date(self, memory_id: str, expiration_date: str | None) -> None:
        self._with(lambda m: m.update(memory_id, expiration_date=expiration_date))

    def holds(self, memory_id: str) -> bool:
        return self._with(lambda m: m.get(memory_id)) is not None

    def date_of(self, memory_id: str) -> str | None:
        return self._with(lambda m: m.get(memory_id)).get("expiration_date")  # type: ignore[no-any-return]

    def default_listing(self) -> set[str]:
        found = self._with(lambda m: m.get_all(filters={"user_id": "alice"}))
        return {r["id"] for r in found["results"]}


class ServerSide(Mem0Side):
    def __init__(self, tmp: Path, *, show_expired: bool = True) -> None:
        self.double = Mem0ServerDouble(api_key=KEY, supports_show_expired=show_expired)
        self.provider = Mem0ServerProvider(
            "mem0",
            "https://mem0.test",
            {"user_id": "alice"},
            secret=Secret(KEY, "$MEM0_KEY"),
            transport=self.double.transport(),
        )
        self.memory = self.double.memory

    def add(self, text: str, expiration_date: str | None) -> str:
        answer = self.memory.add(
            text, user_id="alice", infer=False, expiration_date=expiration_date
        )
        return str(answer["results"][0]["id"])

    def set_date(self, memory_id: str, expiration_date: str | None) -> None:
        self.memory.update(memory_id, expiration_date=expiration_date)

    def holds(self, memory_id: str) -> bool:
        return self.memory.get(memory_id) is not None

    def date_of(self, memory_id: str) -> str | None:
        return self.memory.get(memory_id).get("expiration_date")  # type: ignore[no-any-return]

    def default_listing(self) -> set[str]:
        answer = httpx.Client(transport=self.double.transport(), base_url="https://mem0.test").get(
            "/memories", params={"user_id": "alice"}, headers={"X-API-Key": KEY}
        )
        return {r["id"] for r in answer.json()["results"]}


class PlatformSide(Mem0Side):
    def __init__(self, tmp: Path) -> None:
        self.double = Mem0PlatformDouble(api_key=KEY)
        self.provider = Mem0PlatformProvider(
            "mem0",
            {"user_id": "alice"},
            secret=Secret(KEY, "$MEM0_API_KEY"),
            base_url="https://api.mem0.test",
            transport=self.double.transport(),
        )

    def add(self, text: str, expiration_date: str | None) -> str:
        memory_id = self.double.insert(text, user_id="alice")
        self.double.memories[memory_id]["expiration_date"] = expiration_date
        return memory_id

    def set_date(self, memory_id: str, expiration_date: str | None) -> None:
        memory = self.double.memories[memory_id]
        memory["expiration_date"] = expiration_date
        memory["updated_at"] = self.double.now().isoformat()

    def holds(self, memory_id: str) -> bool:
        return memory_id in self.double.memories

    def date_of(self, memory_id: str) -> str | None:
        return self.double.memories[memory_id]["expiration_date"]  # type: ignore[no-any-return]

    def default_listing(self) -> set[str]:
        answer = httpx.Client(
            transport=self.double.transport(), base_url="https://api.mem0.test"
        ).post(
            "/v3/memories/",
            json={"filters": {"user_id": "alice"}},
            headers={"Authorization": f"Token {KEY}"},
        )
        return {r["id"] for r in answer.json()["results"]}


SIDES = {"mem0-oss": LibrarySide, "mem0-server": ServerSide, "mem0-platform": PlatformSide}


class Setup:
    def __init__(self, tmp: Path, side: Mem0Side) -> None:
        self.side = side
        mnem.init(str(tmp / "brain"))
        self.mnem = MnemProvider("mnem", tmp / "brain")
        self.backup = PmmDirProvider("backup", tmp / "backup", scope_key="alice")
        self.backup_dir = tmp / "backup"
        self.db = tmp / "staging.db"
        self.config = config_for({"mem0": "both", "mnem": "both", "backup": "push"}, "mem0")

    def sync(self) -> CycleReport:
        providers = {"mem0": self.side.provider, "mnem": self.mnem, "backup": self.backup}
        with StagingStore.open(self.db) as store:
            # full listings: deletes are inferred only from them, so they are what is at stake
            report = self.config.engine(store, providers).run_cycle(SyncOptions(full=True))
        assert report.exit_code == 0, report.as_dict()
        return report

    def backup_records(self) -> dict[str, dict[str, Any]]:
        lines = next(self.backup_dir.iterdir()).read_text("utf-8").splitlines()[1:]
        return {r["content"]: r for r in map(json.loads, lines)}

    def mnem_nodes(self) -> dict[str, Any]:
        store = mnem.open(str(self.mnem.path))
        try:
            return {n.id: n for n in store.working_memory().values()}
        finally:
            del store
            import gc

            gc.collect()

    def mnem_history_has(self, node_id: str) -> bool:
        store = mnem.open(str(self.mnem.path))
        try:
            messages = [c.message for c in store.log()]
            return any(m.startswith("memsync: forgot 1 expired") for m in messages) and any(
                node_id in store.changed_by(c.id) for c in store.log()
            )
        finally:
            del store
            import gc

            gc.collect()


def removed(report: CycleReport) -> dict[str, int]:
    return {n: o.mirror.removed for n, o in report.providers.items() if o.mirror}


@pytest.mark.parametrize("kind", list(SIDES))
def test_a_synced_memory_that_expires_is_deleted_nowhere_and_its_date_travels(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    world = Setup(tmp_path, SIDES[kind](tmp_path))
    due = world.side.add("renew the passport", DUE)
    world.side.add("likes tea", None)
    world.sync()
    node_id = f"mem0:{due}"
    note = json.loads(world.mnem_nodes()[node_id].provenance.note)
    assert note["expiration_date"] == DUE  # the date reached mnem...
    backup = world.backup_records()
    assert backup["renew the passport"]["metadata"]["memsync"]["expiration_date"] == DUE
    assert "expiration_date" not in backup["likes tea"]["metadata"].get("memsync", {})

    clock.advance(3)  # the date passes between two cycles
    assert due not in world.side.default_listing()  # Mem0 now hides it by default
    report = world.sync()
    assert removed(report) == {"mem0": 0, "mnem": 0, "backup": 0}
    assert report.replayed.get("delete", 0) == 0
    assert world.side.holds(due)
    assert "renew the passport" in world.backup_records()  # a backup holds everything
    assert node_id not in world.mnem_nodes()  # mnem stops serving it...
    assert world.mnem_history_has(node_id)  # ...with a tombstone its history keeps
    quiet = world.sync()
    assert quiet.planned_total == 0 and removed(quiet) == {"mem0": 0, "mnem": 0, "backup": 0}

    # The date moved (cleared) in Mem0 is a change like any other: it comes back everywhere.
    world.side.set_date(due, None)
    world.sync()
    assert node_id in world.mnem_nodes()
    assert "expiration_date" not in json.loads(world.mnem_nodes()[node_id].provenance.note)
    assert "expiration_date" not in world.backup_records()["renew the passport"]["metadata"].get(
        "memsync", {}
    )
    assert world.sync().planned_total == 0


@pytest.mark.parametrize("kind", list(SIDES))
def test_a_date_set_in_mnem_reaches_mem0_natively(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Clock(monkeypatch)
    world = Setup(tmp_path, SIDES[kind](tmp_path))
    memory_id = world.side.add("water the plants", None)
    world.sync()
    # memsync writes mnem; an edit of the date there travels back to Mem0's own field
    mnem_provider = MnemProvider("mnem", world.mnem.path)
    mnem_provider.open()
    record = mnem_provider.get(f"mem0:{memory_id}")
    assert record is not None
    from memsync.base.records import Outgoing

    changed = Outgoing.from_record(record, origin=f"mem0:{memory_id}")
    changed.expiration_date = DUE
    mnem_provider.update(record.id, changed)
    mnem_provider.close()
    world.sync()
    assert world.side.date_of(memory_id) == DUE
    assert (
        world.backup_records()["water the plants"]["metadata"]["memsync"]["expiration_date"] == DUE
    )


def test_an_older_server_that_cannot_show_expired_memories_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before show_expired (mid-2026), the server hides expired memories with no way to ask:
    # a memory missing from its listing is read by id before any delete is inferred.
    Clock(monkeypatch)
    side = ServerSide(tmp_path, show_expired=False)
    world = Setup(tmp_path, side)
    due = side.add("renew the passport", None)
    side.add("likes tea", None)
    world.sync()
    past = (TODAY - timedelta(days=2)).isoformat()
    side.set_date(due, past)  # the app dates it in the past: the server hides it at once
    assert due not in side.default_listing()
    report = world.sync()
    assert removed(report) == {"mem0": 0, "mnem": 0, "backup": 0}
    assert side.holds(due)
    point = f"/memories/{due}"  # its history's route, read by the first sync, starts the same
    gets = [s for s in side.double.faults.requests("GET", point) if s.path.rstrip("/") == point]
    assert len(gets) == 1  # one point read found it, with its date...
    backup = world.backup_records()["renew the passport"]
    assert backup["metadata"]["memsync"]["expiration_date"] == past  # ...which travelled
    assert f"mem0:{due}" not in world.mnem_nodes()

    side.memory.delete(due)  # and a memory really deleted is still a delete
    report = world.sync()
    assert removed(report)["mem0"] == 1
    assert "renew the passport" not in world.backup_records()


def test_hindsight_stops_serving_an_expired_memory_and_gets_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hindsight has no expiry and no history: memsync deletes the document once the date has
    # passed (memsync's journal and the PMM backup keep the memory) and writes it back when
    # the date is cleared. Nothing is deleted anywhere else.
    from memsync.providers.hindsight.provider import HindsightProvider
    from tests.doubles.hindsight_app import HindsightDouble

    clock = Clock(monkeypatch)
    side = PlatformSide(tmp_path)
    double = HindsightDouble()
    hindsight = HindsightProvider(
        "hindsight", "https://hindsight.test", bank="alice", transport=double.transport()
    )
    backup = PmmDirProvider("backup", tmp_path / "backup", scope_key="alice")
    providers = {"mem0": side.provider, "hindsight": hindsight, "backup": backup}
    config = config_for({"mem0": "both", "hindsight": "both", "backup": "push"}, "mem0")
    db = tmp_path / "staging.db"

    def sync() -> CycleReport:
        with StagingStore.open(db) as store:
            report = config.engine(store, providers).run_cycle(SyncOptions(full=True))
        assert report.exit_code == 0, report.as_dict()
        return report

    def served() -> dict[str, Any]:
        with hindsight:
            return {r.content: r for p in hindsight.listing().pages() for r in p.records}

    due = side.add("renew the passport", DUE)
    side.add("likes tea", None)
    sync()
    assert served()["renew the passport"].expiration_date == DUE
    clock.advance(3)
    report = sync()
    assert removed(report) == {"mem0": 0, "hindsight": 0, "backup": 0}
    assert set(served()) == {"likes tea"}  # no longer served to agents...
    assert side.holds(due)  # ...and deleted nowhere else
    backup_lines = next((tmp_path / "backup").iterdir()).read_text("utf-8")
    assert "renew the passport" in backup_lines
    assert sync().planned_total == 0  # no churn

    side.set_date(due, None)
    sync()
    assert "renew the passport" in served()
    assert served()["renew the passport"].expiration_date is None
