"""A Hypothesis state machine that edits every side between cycles, under each conflict policy.

Like vdirsyncer's ``SyncMachine``, but over memsync's own stores: a directory of PMM files
(``notes``, written by an application that rewrites the files itself), an in-memory Mem0
stand-in (``mem0``, whose edits carry the instant the test chooses), and a real mnem store
(``agent``, the active backend, edited with the real SDK as an agent would). All three are
two-way, and the staging store is a real SQLite file.

Between two cycles any side adds, edits or deletes memories, so one memory can be edited on
two or three sides (with different or identical text), edited on one side and deleted on
another, or the same text can be written on several sides. The model predicts each cycle's
outcome from the policy alone:

- a memory edited anywhere survives a delete elsewhere (modify beats delete);
- identical versions are never a conflict;
- ``newest``: the latest ``updated_at`` wins (mnem keeps none, so its edits are the oldest;
  ties go to the active backend); ``active``: the active backend's edit wins, else the newest;
  ``keep-both``: the newest wins and each other version becomes a memory of its own;
  ``error``: nothing moves until ``memsync resolve`` (``choose_winner``) keeps one side.

After every cycle each provider holds exactly the model's texts and metadata, each memory
once; a quiet cycle at the end converges all sides and the cycle after it plans nothing.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from memsync.pmm import Header, write_pmm_file
from memsync.providers.base import Provider
from memsync.providers.memory import MemoryProvider, MemoryStore
from memsync.providers.mnem import MnemProvider
from memsync.providers.pmm_dir import PmmDirProvider, scope_file_name
from memsync.records import Record
from memsync.staging import StagingStore
from memsync.sync.conflicts import choose_winner, list_conflicts
from memsync.sync.plan import Policy
from tests.engine_helpers import World
from tests.mnem_sdk import real_sdk

SIDES = ("agent", "mem0", "notes")
ACTIVE = "agent"
SCOPE = "alice"
CLOCK_START = datetime(2030, 1, 1, tzinfo=UTC)  # edits' instants: later than any copy's
METADATA = st.sampled_from(({}, {"topic": "tea"}, {"topic": "work", "mood": "busy"}))


@pytest.fixture(autouse=True)
def _real_mnem_sdk() -> None:
    real_sdk()  # missing: an error that says what to build (a skip only where Rust is absent)


@dataclass(frozen=True, order=True)
class Version:
    """What a user sees of one memory in one store: its text and its metadata."""

    text: str
    metadata: str = "{}"  # canonical JSON, so versions compare and hash

    @classmethod
    def of(cls, text: str, metadata: dict[str, Any]) -> Version:
        return cls(text, json.dumps(metadata, sort_keys=True))

    @classmethod
    def held(cls, record: Record) -> Version:
        return cls.of(record.content, record.metadata)

    def meta(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.metadata)
        return loaded


def listed(provider: Provider) -> list[Record]:
    provider.open()
    try:
        return [r for page in provider.listing().pages() for r in page.records]
    finally:
        provider.close()


class NotesApp:
    """An application that keeps its memories in PMM files and rewrites them itself."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.provider = PmmDirProvider("notes", root, scope_key=SCOPE)
        self.ids = itertools.count(1)

    def _write(self, records: list[Record]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        header = Header(source_provider="notes-app", scope={"scope_key": SCOPE})
        write_pmm_file(self.root / scope_file_name(SCOPE), header, records)

    def add(self, version: Version, when: str) -> None:
        record = Record(
            f"note-{next(self.ids)}",
            version.text,
            version.meta(),
            scope_key=SCOPE,
            created_at=when,
            updated_at=when,
        )
        self._write([*listed(self.provider), record])

    def edit(self, old_text: str, version: Version, when: str) -> None:
        self._write(
            [_edited(r, version, when) if r.content == old_text else r for r in self.records()]
        )

    def delete(self, text: str) -> None:
        self._write([r for r in self.records() if r.content != text])

    def records(self) -> list[Record]:
        return listed(self.provider)


class Mem0App:
    """Mem0 as an application uses it: it picks the ids, and each write is dated."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.provider = MemoryProvider("mem0", self.store, scope=SCOPE, family="mem0")

    def add(self, version: Version, when: str) -> None:
        record_id = f"app{next(self.store.counter)}"
        self.store.records[record_id] = Record(
            record_id,
            version.text,
            version.meta(),
            scope_key=SCOPE,
            created_at=when,
            updated_at=when,
            version=when,
        )

    def edit(self, old_text: str, version: Version, when: str) -> None:
        (record_id,) = [k for k, r in self.store.records.items() if r.content == old_text]
        edited = _edited(self.store.records[record_id], version, when)
        edited.version = f"{when}#{next(self.store.counter)}"
        self.store.records[record_id] = edited

    def delete(self, text: str) -> None:
        (record_id,) = [k for k, r in self.store.records.items() if r.content == text]
        del self.store.records[record_id]

    def records(self) -> list[Record]:
        return listed(self.provider)


class SharedMnem(MnemProvider):
    """memsync's use of the handle the agent keeps: closing leaves the Store to the agent."""

    def close(self) -> None:
        pass


class AgentApp:
    """An agent on a real mnem store: ``remember`` and ``forget``, one commit each.

    mnem keeps no metadata and no ``updated_at``: an agent's edit replaces the node, and
    memsync carries the memory's metadata over from the version it staged. The agent and
    memsync share one open handle (``MnemProvider.attached``, as an in-process embedding
    does): mnem frees its lock only when a Store is garbage-collected, and a collection per
    open would cost more than the whole machine.
    """

    def __init__(self, root: Path) -> None:
        self.sdk = real_sdk()
        self.sdk.init(str(root))
        self.store: Any = self.sdk.open(str(root))
        self.provider = SharedMnem.attached(self.store, name="agent", sdk=self.sdk)
        self.provider._scope_key = SCOPE  # as `scope_key = "alice"` in config.toml would
        self.ids = itertools.count(1)

    def _node(self, text: str) -> str:
        (node_id,) = [
            node_id for node_id, node in self.store.working_memory().items() if node.content == text
        ]
        return str(node_id)

    def add(self, version: Version, when: str) -> None:
        self.sdk.agents.remember(self.store, f"agent-note-{next(self.ids)}", version.text)

    def edit(self, old_text: str, version: Version, when: str) -> None:
        self.sdk.agents.remember(self.store, self._node(old_text), version.text)

    def delete(self, text: str) -> None:
        self.sdk.agents.forget(self.store, self._node(text))

    def records(self) -> list[Record]:
        return listed(self.provider)

    def close(self) -> None:
        self.provider = None  # type: ignore[assignment]
        self.store = None


App = NotesApp | Mem0App | AgentApp


def _edited(old: Record, version: Version, when: str) -> Record:
    return Record(
        old.id,
        version.text,
        version.meta(),
        scope_key=old.scope_key,
        created_at=old.created_at,
        updated_at=when,
        provenance=dict(old.provenance),
        origin=old.origin,
        expiration_date=old.expiration_date,
    )


Held = dict[str, Version | None]  # side -> what it holds of one memory (None: deleted there)


class ConflictMachine(RuleBasedStateMachine):
    policy: Policy = "newest"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memsync-conflicts-"))
        self.world = World(
            self.tmp,
            {side: "both" for side in SIDES},
            ACTIVE,
            conflict=self.policy,
            max_delete="100%",
            max_delete_count=100000,
        )
        self.apps: dict[str, App] = {
            "notes": NotesApp(self.tmp / "notes"),
            "mem0": Mem0App(),
            "agent": AgentApp(self.tmp / "agent"),
        }
        for side, app in self.apps.items():
            self.world.providers[side] = app.provider  # type: ignore[assignment]
        self.memory_ids = itertools.count(1)
        self.clock = itertools.count(1)
        self.agreed: dict[int, Version] = {}  # what every side holds after the last cycle
        # this interval: what each side did to agreed memories, when, and what it created
        self.touched: dict[int, Held] = {}
        self.edited_at: dict[tuple[int, str], datetime] = {}
        self.created: list[tuple[int, Version]] = []
        # policy "error": memories left open, what each side holds, and resolutions asked for
        self.open: dict[int, Held] = {}
        self.resolving: dict[int, str] = {}

    def teardown(self) -> None:
        """Every run ends converged: resolve what is open, sync, and the next cycle is quiet."""
        try:
            self.sync()  # what the last rules did, as the policy settles it
            self.resolve_everything()
            self.sync()
            held = {side: self.holdings(side) for side in SIDES}
            assert held["agent"] == held["mem0"] == held["notes"], held
            report = self.world.sync(force_delete=True)
            assert report.planned == [], report.planned  # quiet means quiet
            assert {side: self.holdings(side) for side in SIDES} == held
        finally:
            self.apps["agent"].close()  # type: ignore[union-attr]
            shutil.rmtree(self.tmp, ignore_errors=True)

    # what the applications do between cycles ------------------------------------------------

    def _tick(self, memory: int) -> tuple[str, str, datetime]:
        n = next(self.clock)
        instant = CLOCK_START + timedelta(seconds=n)
        return f"memory {memory} v{n}", instant.isoformat().replace("+00:00", "Z"), instant

    def _holds(self, memory: int, side: str) -> Version | None:
        return self.touched.get(memory, {}).get(side, self.agreed[memory])

    def _pick(self, sides: tuple[str, ...], pick: int) -> int | None:
        """An agreed memory (no conflict open on it) that every one of SIDES still holds."""
        candidates = [
            m
            for m in sorted(self.agreed)
            if m not in self.open and all(self._holds(m, s) is not None for s in sides)
        ]
        return candidates[pick % len(candidates)] if candidates else None

    @rule(side=st.sampled_from(SIDES), metadata=METADATA)
    def add(self, side: str, metadata: dict[str, Any]) -> None:
        memory = next(self.memory_ids)
        text, when, _ = self._tick(memory)
        version = Version.of(text, {} if side == "agent" else metadata)  # mnem: no metadata
        self.apps[side].add(version, when)
        self.created.append((memory, version))

    @rule(sides=st.sets(st.sampled_from(SIDES), min_size=2))
    def add_the_same_text_on_several_sides(self, sides: set[str]) -> None:
        memory = next(self.memory_ids)
        text, when, _ = self._tick(memory)
        version = Version.of(text, {})
        for side in sorted(sides):
            self.apps[side].add(version, when)
        self.created.append((memory, version))  # adoption pairs the copies: one memory

    def _edit(self, side: str, memory: int, text: str, when: str, metadata: dict[str, Any]) -> None:
        old = self._holds(memory, side)
        assert old is not None
        if side == "agent":  # the agent rewrites the text; memsync keeps the staged metadata
            version = Version(text, self.agreed[memory].metadata)
        else:
            version = Version.of(text, metadata)
        self.apps[side].edit(old.text, version, when)
        self.touched.setdefault(memory, {})[side] = version
        if side != "agent":
            self.edited_at[(memory, side)] = _instant(when)

    @rule(side=st.sampled_from(SIDES), pick=st.integers(min_value=0), metadata=METADATA)
    def edit(self, side: str, pick: int, metadata: dict[str, Any]) -> None:
        memory = self._pick((side,), pick)
        if memory is None:
            return
        text, when, _ = self._tick(memory)
        self._edit(side, memory, text, when, metadata)

    @rule(
        sides=st.sets(st.sampled_from(SIDES), min_size=2),
        pick=st.integers(min_value=0),
    )
    def edit_alike_on_several_sides(self, sides: set[str], pick: int) -> None:
        """The same new text on several sides: equal versions are never a conflict."""
        memory = self._pick(tuple(sides), pick)
        if memory is None:
            return
        text, when, _ = self._tick(memory)
        metadata = self.agreed[memory].meta()  # what the agent's edit keeps, so all agree
        for side in sorted(sides):
            self._edit(side, memory, text, when, metadata)

    @rule(side=st.sampled_from(SIDES), pick=st.integers(min_value=0))
    def delete(self, side: str, pick: int) -> None:
        memory = self._pick((side,), pick)
        if memory is None:
            return
        old = self._holds(memory, side)
        assert old is not None
        self.apps[side].delete(old.text)
        self.touched.setdefault(memory, {})[side] = None

    @precondition(lambda self: self.open.keys() - self.resolving.keys())
    @rule(pick=st.integers(min_value=0), keep=st.integers(min_value=0))
    def resolve(self, pick: int, keep: int) -> None:
        """`memsync resolve ID --keep SIDE` on one open conflict (policy "error")."""
        with StagingStore.open(self.world.db_path) as store:
            waiting = [c for c in list_conflicts(store) if c["state"] == "open"]
            conflict = waiting[pick % len(waiting)]
            sides = sorted(conflict["versions"])
            side = sides[keep % len(sides)]
            choose_winner(store, conflict["id"], side)
        memory = self._memory_holding(side, conflict["versions"][side]["content"])
        assert self.open[memory][side] == Version.of(
            conflict["versions"][side]["content"], conflict["versions"][side]["metadata"]
        )
        self.resolving[memory] = side

    def resolve_everything(self) -> None:
        while self.open.keys() - self.resolving.keys():
            self.resolve(0, 0)

    def _memory_holding(self, side: str, text: str) -> int:
        (memory,) = [m for m, held in self.open.items() if (v := held[side]) and v.text == text]
        return memory

    # cycles -------------------------------------------------------------------------------

    @rule()
    def sync(self) -> None:
        expected, winners, conflicting = self.expected_outcome()
        report = self.world.sync(force_delete=True)
        for side in SIDES:
            held = self.holdings(side)
            texts = [v.text for v in held.elements()]
            assert len(texts) == len(set(texts)), (side, "duplicated", held)
            assert held == self.expected_holdings(expected, side), (side, self.touched)
        settled = [c for c in report.conflicts if c["state"] == "resolved"]
        assert sorted(c["winner"] for c in settled) == winners, report.conflicts
        seen = Counter(tuple(sorted(c["providers"])) for c in report.conflicts)
        wanted = Counter(tuple(sides) for sides in conflicting)
        if self.policy == "error":  # open conflicts planned again are reported again
            assert wanted <= seen, report.conflicts
        else:
            assert seen == wanted, report.conflicts
        if self.policy == "error":  # what `memsync conflicts` lists
            with StagingStore.open(self.world.db_path) as store:
                waiting = [c for c in list_conflicts(store) if c["state"] == "open"]
            assert len(waiting) == len(self.open), (waiting, self.open)
        assert report.exit_code == (1 if self.open else 0), (report.exit_code, report.failures)
        self.agreed = expected
        self.touched.clear()
        self.edited_at.clear()
        self.created.clear()
        self.resolving.clear()

    @rule()
    def quiet_cycle_plans_nothing(self) -> None:
        self.sync()
        assert self.world.sync(force_delete=True).planned == []

    def holdings(self, side: str) -> Counter[Version]:
        return Counter(Version.held(r) for r in self.apps[side].records())

    def expected_holdings(self, agreed: dict[int, Version], side: str) -> Counter[Version]:
        held = Counter(v for m, v in agreed.items() if m not in self.open)
        held.update(v for sides in self.open.values() if (v := sides[side]) is not None)
        return held

    def expected_outcome(self) -> tuple[dict[int, Version], list[str], list[list[str]]]:
        """What every side holds after the next cycle, the conflicts' winners and their sides.

        Updates ``self.open`` (policy "error") as the cycle will.
        """
        agreed = dict(self.agreed)
        winners: list[str] = []
        conflicting: list[list[str]] = []
        for memory, side in self.resolving.items():
            kept = self.open.pop(memory)[side]
            assert kept is not None
            agreed[memory] = kept
        for memory, held in sorted(self.touched.items()):
            base = agreed[memory]
            edits = {s: v for s, v in sorted(held.items()) if v is not None and v != base}
            if not edits:
                if None in held.values():
                    del agreed[memory]  # deleted, and edited nowhere
                continue
            versions = sorted(set(edits.values()))
            if len(versions) == 1:
                agreed[memory] = versions[0]  # modify beats delete; equal edits agree
                continue
            conflicting.append(sorted(edits))
            if self.policy == "error":
                self.open[memory] = {s: held.get(s, base) for s in SIDES}
                continue
            winner = self.winner(memory, edits)
            winners.append(winner)
            agreed[memory] = edits[winner]
            if self.policy == "keep-both":
                for version in versions:
                    if version != edits[winner]:
                        agreed[next(self.memory_ids)] = version
        for memory, version in self.created:
            agreed[memory] = version
        return agreed, sorted(winners), sorted(conflicting)

    def winner(self, memory: int, edits: dict[str, Version]) -> str:
        if self.policy == "active" and ACTIVE in edits:
            return ACTIVE

        def newest(side: str) -> tuple[datetime, bool, str]:
            # mnem keeps no updated_at: its edits count as the oldest
            instant = self.edited_at.get((memory, side), datetime(1970, 1, 1, tzinfo=UTC))
            return instant, side == ACTIVE, side

        return max(edits, key=newest)


def _instant(when: str) -> datetime:
    return datetime.fromisoformat(when.replace("Z", "+00:00"))


SETTINGS = settings(
    max_examples=int(os.environ.get("MEMSYNC_CONFLICT_EXAMPLES", "12")),
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def machine_for(policy: Policy) -> type[ConflictMachine]:
    """One machine per policy: each is its own test, with its own examples."""

    class Machine(ConflictMachine):
        pass

    Machine.policy = policy
    Machine.__name__ = Machine.__qualname__ = f"ConflictMachine_{policy.replace('-', '_')}"
    Machine.TestCase.settings = SETTINGS
    return Machine


TestNewestWins = machine_for("newest").TestCase
TestActiveWins = machine_for("active").TestCase
TestKeepBoth = machine_for("keep-both").TestCase
TestErrorWaitsForResolve = machine_for("error").TestCase


def test_an_agent_forgetting_what_memsync_just_wrote_reaches_every_side(tmp_path: Path) -> None:
    """mnem lists a cycle as the tree diff from the last cursor, and memsync writes after it
    lists: a node memsync wrote and an agent then forgot is in neither tree. The delete must
    still travel (the state machine found it lost until the hourly full scan)."""
    sdk = real_sdk()
    sdk.init(str(tmp_path / "agent"))
    gc.collect()
    world = World(tmp_path, {"agent": "both", "mem0": "both"}, "agent")
    world.providers["agent"] = MnemProvider("agent", tmp_path / "agent", scope_key=SCOPE)  # type: ignore[assignment]
    world.providers["mem0"].scope = SCOPE

    def agent(change: Callable[[Any], object]) -> None:
        store = sdk.open(str(tmp_path / "agent"))
        try:
            change(store)
        finally:
            del store  # the lock goes with the handle
            gc.collect()

    agent(lambda store: sdk.agents.remember(store, "plan", "on the Enterprise plan"))
    world.sync()  # a full listing; the cursor is mnem's head
    world.providers["mem0"].app_add("likes green tea")
    assert world.sync().replayed == {"create": 1}  # listed from the cursor, then written
    agent(
        lambda store: [
            sdk.agents.forget(store, node_id)
            for node_id, node in store.working_memory().items()
            if node.content == "likes green tea"
        ]
    )
    report = world.sync()
    assert report.exit_code == 0 and report.replayed == {"delete": 1}
    assert world.contents("mem0") == ["on the Enterprise plan"]
    assert world.sync().planned == []


def test_the_model_is_not_vacuous() -> None:
    """Each kind of collision the brief names is reachable by the rules above."""
    machine = machine_for("keep-both")()
    try:
        machine.add("notes", {"topic": "tea"})
        machine.sync()
        machine.edit("notes", 0, {})
        machine.edit("mem0", 0, {"topic": "work"})
        machine.sync()
        assert len(machine.agreed) == 2  # both versions kept
        machine.delete("agent", 0)
        machine.edit("mem0", 0, {})
        machine.sync()
        assert len(machine.agreed) == 2  # modify beat delete
    finally:
        machine.teardown()
