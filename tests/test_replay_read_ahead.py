"""Replay reads each batch's writes while the batch before it is written (``replay.Ahead``):
what it writes is what one batch at a time would write, and a memory that two consecutive
batches both write is read again once the first batch's record of it is in staging."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memsync.base.records import Record, utc_now_iso
from memsync.base.write_kind import WriteKind
from memsync.engine import replay
from memsync.engine.replay import Replay
from memsync.engine.report import CycleReport, ProviderOutcome, SyncOptions
from memsync.providers.base import WriteOp, WriteResult
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore
from memsync.staging.rows import record_row
from tests.engine_helpers import World


def test_small_batches_read_ahead_converge_like_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "REPLAY_BATCH", 4)  # 30 memories: 8 batches, 7 read ahead
    world = World(tmp_path, {"a": "both", "b": "both"}, "a", max_delete="100%")
    a = world.providers["a"]
    ids = [a.app_add(f"memory {i}") for i in range(30)]
    assert world.sync().exit_code == 0
    assert world.contents("b") == world.contents("a")
    for i in range(0, 30, 3):
        a.app_edit(ids[i], f"memory {i}, edited")
    for i in range(1, 30, 7):
        a.delete(ids[i])
    for i in range(30, 36):
        a.app_add(f"memory {i}, new")
    report = world.sync()
    assert report.exit_code == 0, report.as_dict()
    assert world.contents("b") == world.contents("a")
    assert world.sync().planned_total == 0


class Spy(MemoryProvider):
    """Remembers every write it is asked to make, with the record it says it replaces."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.asked: list[WriteOp] = []

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        self.asked.extend(ops)
        yield from super().write_many(ops)


def test_a_memory_in_two_consecutive_batches_is_read_after_the_first_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "REPLAY_BATCH", 1)
    world = World(tmp_path, {"a": "both", "b": "both"}, "a")
    a_id = world.providers["a"].app_add("first text")
    world.providers["b"] = spy = Spy("b", world.stores["b"], family="b")
    assert world.sync().exit_code == 0
    (b_id,) = world.stores["b"].records
    with StagingStore.open(world.db_path) as store:
        (mirrored,) = store.records.by_ids([("b", b_id)])
        link = mirrored.link_id
        with store.transaction():
            run_id = store.runs.start(utc_now_iso(), os.getpid())
            # a holds a new text; two writes of it into b, in two batches of one
            edited = Record(id=a_id, content="second text", scope_key=mirrored.record.scope_key)
            store.upsert_records([record_row("a", link, edited, run_id)])
            for _ in range(2):
                store.outbox.enqueue(
                    run_id,
                    link,
                    "b",
                    WriteKind.UPDATE,
                    b_id,
                    source="a",
                    source_link=None,
                    attempts=0,
                    now=utc_now_iso(),
                )
        report = CycleReport(run_id, False, utc_now_iso())
        report.providers = {name: ProviderOutcome(name) for name in ("a", "b")}
        spy.asked.clear()
        Replay(store, world.providers, world.config.topology, max_attempts=5, use=lambda p: p).run(
            run_id, world.config.topology, report, SyncOptions()
        )
    first, second = spy.asked
    assert first.previous is not None and first.previous.content == "first text"
    # read after the first write was recorded, not ahead of it
    assert second.previous is not None and second.previous.content == "second text"
    assert world.contents("b") == ["second text"]
