"""A first sync into a mnem store the cycle creates, staged ahead by a writer process
(``providers/mnem/ahead.py``, ``engine/ahead.py``, ``engine/prepared.py``), in process: the
real mnem SDK, a real writer process, a real staging database; an in-memory source.

The SIGKILLs of a real `memsync sync` at each crash point are test_crash_first_sync_ahead.py.
"""

from __future__ import annotations

import gc
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

from memsync.base.records import Outgoing, Record
from memsync.engine.ahead import WritesAhead
from memsync.engine.cycle import Engine
from memsync.engine.report import SyncOptions
from memsync.providers.base import WriteOp
from memsync.providers.held import HeldStores
from memsync.providers.memory import MemoryProvider, MemoryStore
from memsync.providers.mnem import ahead, on_demand
from memsync.providers.mnem.convert import iso_from_ms
from memsync.providers.mnem.in_flight import InFlight
from memsync.providers.mnem.on_demand import OnDemandMnemProvider
from memsync.staging import StagingStore
from tests.engine_helpers import config_for
from tests.mnem_sdk import real_sdk

T = TypeVar("T")
N = 40


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


@pytest.fixture(autouse=True)
def few_to_stage_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer process from a handful of memories (a user's first sync needs 500)."""
    monkeypatch.setattr(on_demand, "AHEAD_FROM", 10)


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> list[ahead.StageAhead]:
    """Every writer process started."""
    started: list[ahead.StageAhead] = []
    real = ahead.StageAhead.__init__

    def spy(self: ahead.StageAhead, *args: Any) -> None:
        real(self, *args)
        started.append(self)

    monkeypatch.setattr(ahead.StageAhead, "__init__", spy)
    return started


def in_mnem(sdk: ModuleType, root: Path, read: Callable[[Any], T]) -> T:
    """What READ finds in the store, opened as an agent would open it, then let go."""
    store = sdk.open(str(root))
    try:
        return read(store)
    finally:
        del store
        gc.collect()


def log_and_staged(store: Any) -> tuple[list[tuple[str, str, int, str]], set[str]]:
    staged = {node_id for node_id, _ in store.staged()} | set(store.staged_deletions())
    return [(c.author, c.message, c.time, c.id) for c in store.log()], staged


def source_with(count: int, name: str = "mem0", shared: str | None = None) -> MemoryProvider:
    """COUNT memories in an in-memory source (and SHARED: one more, with that text)."""
    source = MemoryProvider(name, MemoryStore(), client_ids=True, family=name, page_size=15)
    texts = [f"{name} memory {i}" for i in range(count)] + ([shared] if shared else [])
    source.store.records = {
        f"{name}:{i}": Record(f"{name}:{i}", text, created_at="2025-01-02T03:04:05+00:00")
        for i, text in enumerate(texts)
    }
    return source


def target_at(path: Path, held: HeldStores | None = None) -> OnDemandMnemProvider:
    return OnDemandMnemProvider("mnem", path, create=True, config_name="mnem", held=held)


def cycle(db: Path, source: MemoryProvider, target: OnDemandMnemProvider, *more: Any) -> Any:
    sources = {provider.name: provider for provider in (source, *more)}
    config = config_for({**dict.fromkeys(sources, "both"), "mnem": "both"}, "mnem")
    with StagingStore.open(db) as store:
        engine = Engine(config.topology, {**sources, "mnem": target}, store, config.settings)
        report = engine.run_cycle(SyncOptions())
        book = store.store_commits
        staged = {r.id: r.updated_at for r in store.iter_records("mnem")}
        head = target.path / ".mnem"
        commits = (
            in_mnem(real_sdk(), target.path, lambda s: [c.id for c in s.log()])
            if head.is_dir()
            else []
        )
        kept = book.commits(target.commits_key(), commits)
    return report, kept, staged


def test_a_first_sync_staged_ahead_is_one_commit_dated_as_staging_records_it(
    mnem: ModuleType, tmp_path: Path, writers: list[ahead.StageAhead]
) -> None:
    source, target = source_with(N), target_at(tmp_path / "agent")
    report, book, records = cycle(tmp_path / "staging.db", source, target)
    assert report.exit_code == 0 and report.providers["mnem"].written == N
    assert len(writers) == 1  # the writer process staged them
    log, staged = in_mnem(mnem, tmp_path / "agent", log_and_staged)
    assert staged == set() and [(a, m) for a, m, _, _ in log] == [
        ("memsync", f"memsync: {N} added from mem0")
    ]
    [(_, _, commit_time, commit)] = log
    # Each record staging keeps is dated by the commit, which is noted with every node it made.
    assert set(records.values()) == {iso_from_ms(commit_time)} and len(records) == N
    time_ms, changes = book[commit]
    assert time_ms == commit_time and all(f'"mem0:{i}"' in changes for i in range(N))
    assert InFlight(target.identity()).noted() is None  # nothing left noted
    again, _, _ = cycle(tmp_path / "staging.db", source, target)
    assert again.exit_code == 0 and again.planned_total == 0


def test_a_small_first_sync_and_the_daemons_are_written_without_a_writer_process(
    mnem: ModuleType, tmp_path: Path, writers: list[ahead.StageAhead]
) -> None:
    small, _, _ = cycle(tmp_path / "small.db", source_with(9), target_at(tmp_path / "small"))
    held = HeldStores()
    daemon, _, _ = cycle(tmp_path / "held.db", source_with(N), target_at(tmp_path / "held", held))
    assert small.providers["mnem"].written == 9 and daemon.providers["mnem"].written == N
    assert writers == []  # too few for one; the daemon serves its stores to agents meanwhile


def test_a_store_that_begins_with_its_sources_past_is_not_staged_ahead(
    mnem: ModuleType, tmp_path: Path
) -> None:
    """Its history import writes every memory (engine/history.py); a writer process holding
    the new store would lock that import out."""
    source, target = source_with(N), target_at(tmp_path / "agent")
    config = config_for({"mem0": "both", "mnem": "both"}, "mnem")
    providers = {"mem0": source, "mnem": target}

    def opened(provider: Any) -> Any:
        provider.open()
        return provider

    def staged_ahead() -> list[str]:
        with StagingStore.open(tmp_path / "staging.db") as store:
            found = WritesAhead.for_cycle(store, providers, config.topology, set(providers), opened)
        target.close()
        return list(found.targets)

    source.capabilities = replace(source.capabilities, history=True)  # a Mem0 source
    assert staged_ahead() == []  # it takes history (import_history defaults to true)
    target.wants_history = False  # import_history = false
    assert staged_ahead() == ["mnem"]


def test_a_writer_that_dies_leaves_the_batch_to_memsync_in_the_same_cycle(
    mnem: ModuleType,
    tmp_path: Path,
    writers: list[ahead.StageAhead],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("MEMSYNC_KILL_AT", "stager:add:7")  # read by the writer process alone
    source, target = source_with(N), target_at(tmp_path / "agent")
    report, _, _ = cycle(tmp_path / "staging.db", source, target)
    assert len(writers) == 1 and writers[0]._process.returncode == -signal.SIGKILL
    assert report.exit_code == 0 and report.providers["mnem"].written == N
    assert [r.message for r in caplog.records].count(  # said once, as a warning
        f"mnem: cannot stage ahead into {target.path}: the writer process was killed (SIGKILL); "
        "writing the batch again the ordinary way"
    ) == 1
    log, staged = in_mnem(mnem, tmp_path / "agent", log_and_staged)
    assert [m for _, m, _, _ in log] == [f"memsync: {N} added from mem0"] and staged == set()
    again, _, _ = cycle(tmp_path / "staging.db", source, target)
    assert again.exit_code == 0 and again.planned_total == 0


def test_a_memory_two_sources_hold_is_created_once_though_both_copies_were_staged_ahead(
    mnem: ModuleType, tmp_path: Path, writers: list[ahead.StageAhead]
) -> None:
    """The plan decides every write: adoption links the two copies of one text into one
    memory, so the node staged ahead for one of them is unstaged, never committed."""
    old, other = source_with(N, "old", shared="shared"), source_with(N, "other", shared="shared")
    target = target_at(tmp_path / "agent")
    report, _, _ = cycle(tmp_path / "staging.db", old, target, other)
    assert report.exit_code == 0 and len(writers) == 1
    nodes = in_mnem(mnem, tmp_path / "agent", lambda store: store.working_memory())
    expected = sorted({*old.contents(), *other.contents()})  # "shared" once
    assert sorted(n.content for n in nodes.values()) == expected
    log, staged = in_mnem(mnem, tmp_path / "agent", log_and_staged)
    assert [a for a, _, _, _ in log] == ["memsync"] and staged == set()


def items(count: int) -> list[Outgoing]:
    return [
        Outgoing.from_record(Record(f"mem0:{i}", f"memory {i}"), f"mem0:{i}") for i in range(count)
    ]


def test_a_writer_stopped_before_the_commit_leaves_nothing_visible_and_the_next_open_unstages(
    mnem: ModuleType, tmp_path: Path, writers: list[ahead.StageAhead]
) -> None:
    """A cycle stopped (SIGTERM) before replay's commit closes the provider: the writer stops
    after the node in flight and lets the store go; what it staged stays noted."""
    target = target_at(tmp_path / "agent")
    target.open()
    target.expect_creates(items(N))
    target.planned_creates({f"mem0:{i}" for i in range(N)})
    assert target.prepare_writes([WriteOp("create", item.origin, item) for item in items(N)])
    made = tmp_path / "agent" / ".mnem"
    deadline = time.monotonic() + 60
    while not made.is_dir() and time.monotonic() < deadline:  # the writer made the store
        time.sleep(0.01)
    target.close()
    [writer] = writers
    assert writer._process.returncode == 0  # it stopped as asked, not killed
    log, staged = in_mnem(mnem, tmp_path / "agent", log_and_staged)
    noted = InFlight(target.identity()).noted()
    assert log == [] and noted is not None and staged <= noted
    again = target_at(tmp_path / "agent")
    again.open()  # memsync's own half-staged batch, named by its note: unstaged
    again.close()
    assert in_mnem(mnem, tmp_path / "agent", log_and_staged) == ([], set())
    assert InFlight(target.identity()).noted() is None


def test_a_store_someone_made_meanwhile_is_never_staged_into_and_gets_the_writes_as_usual(
    mnem: ModuleType, tmp_path: Path, writers: list[ahead.StageAhead]
) -> None:
    target = target_at(tmp_path / "agent")
    target.open()  # absent: this cycle would create it
    theirs = mnem.init(str(tmp_path / "agent"))  # an agent made it first, and wrote a node
    theirs.add("note:1", "the agent's own")
    theirs.commit("agent", author="agent")
    del theirs
    gc.collect()
    target.expect_creates(items(N))
    target.planned_creates({f"mem0:{i}" for i in range(N)})
    ops = [WriteOp("create", item.origin, item) for item in items(N)]
    assert target.prepare_writes(ops)
    with pytest.raises(Exception, match="cannot stage ahead"):
        target.commit_prepared()  # the writer never opens a store it did not make
    results = list(target.write_many(ops))  # replay's ordinary path, as after any failure
    target.close()
    assert [r.error for r in results] == [None] * N
    log, staged = in_mnem(mnem, tmp_path / "agent", log_and_staged)
    assert [a for a, _, _, _ in log] == ["memsync", "agent"] and staged == set()
    nodes = in_mnem(mnem, tmp_path / "agent", lambda store: store.working_memory())
    assert nodes["note:1"].content == "the agent's own" and len(nodes) == N + 1


@pytest.fixture(autouse=True)
def no_writer_left(writers: list[ahead.StageAhead]) -> Iterator[None]:
    yield
    assert all(w._process.poll() is not None for w in writers)  # every writer exited
