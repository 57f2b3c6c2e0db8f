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

What it found, each now pinned by a plain test below: a node memsync wrote into mnem and an
agent forgot before the next cycle was never seen deleted (until the hourly full scan); the
write-back that restores an agent-rewritten node moved mnem's base, so an open conflict
(policy ``error``) was silently settled for the other side. Working out a rule for busy sides
showed a third: an edit made while a side was busy replaced the version agreed meanwhile,
under every policy (the machine does not make sides busy yet; test_engine_state_machine does,
without concurrent edits).
``MEMSYNC_SM_CONFLICT_EXAMPLES`` sets the examples per policy (10; 100 ran clean).
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
from hypothesis import HealthCheck, currently_in_test_context, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from memsync.base.pmm import Header, write_pmm_file
from memsync.base.records import Record
from memsync.engine.conflicts import choose_winner, list_conflicts
from memsync.engine.plan import Policy
from memsync.providers.base import Provider
from memsync.providers.memory import MemoryProvider, MemoryStore
from memsync.providers.mnem.provider import MnemProvider
from memsync.providers.pmm_dir import PmmDirProvider, scope_file_name
from memsync.staging import StagingStore
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

    @initialize(sides=st.lists(st.sampled_from(SIDES), min_size=1, max_size=4))
    def memories_everywhere(self, sides: list[str]) -> None:
        """A few memories, each added on one side and synced everywhere, to collide over."""
        for side in sides:
            self.add(side, {"topic": "tea"})
        self.sync()

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

    @rule(
        sides=st.lists(st.sampled_from(SIDES), min_size=2, max_size=3, unique=True),
        pick=st.integers(min_value=0),
        metadata=METADATA,
    )
    def edit_differently_on_several_sides(
        self, sides: list[str], pick: int, metadata: dict[str, Any]
    ) -> None:
        """One memory edited on several sides, one after the other: a conflict."""
        memory = self._pick(tuple(sides), pick)
        if memory is None:
            return
        for side in sides:
            text, when, _ = self._tick(memory)
            self._edit(side, memory, text, when, metadata)

    @rule(sides=st.permutations(SIDES), pick=st.integers(min_value=0), metadata=METADATA)
    def edit_here_delete_there(self, sides: list[str], pick: int, metadata: dict[str, Any]) -> None:
        """One side edits a memory another deletes: modify beats delete."""
        editor, deleter = sides[0], sides[1]
        memory = self._pick((editor, deleter), pick)
        if memory is None:
            return
        text, when, _ = self._tick(memory)
        self._edit(editor, memory, text, when, metadata)
        self._delete(deleter, memory)

    @rule(side=st.sampled_from(SIDES), pick=st.integers(min_value=0))
    def delete(self, side: str, pick: int) -> None:
        memory = self._pick((side,), pick)
        if memory is not None:
            self._delete(side, memory)

    def _delete(self, side: str, memory: int) -> None:
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
            if None in held.values():
                _note("an edit meets a delete")
            versions = sorted(set(edits.values()))
            if len(versions) == 1:
                if len(edits) > 1:
                    _note("equal edits on several sides")
                agreed[memory] = versions[0]  # modify beats delete; equal edits agree
                continue
            _note(f"a conflict between {len(edits)} sides")
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


def _note(what: str) -> None:
    """A collision the run reached (``--hypothesis-show-statistics`` counts them)."""
    if currently_in_test_context():
        event(what)


def _instant(when: str) -> datetime:
    return datetime.fromisoformat(when.replace("Z", "+00:00"))


SETTINGS = settings(
    max_examples=int(os.environ.get("MEMSYNC_SM_CONFLICT_EXAMPLES", "10")),
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


class MnemWorld:
    """A World whose ``agent`` is a real mnem store, opened by memsync and by the agent in
    turn (each releases mnem's lock when done), as two processes would."""

    def __init__(self, tmp_path: Path, others: dict[str, str], **sync: object) -> None:
        self.sdk = real_sdk()
        self.root = tmp_path / "agent"
        self.sdk.init(str(self.root))
        gc.collect()
        self.world = World(tmp_path, {"agent": "both", **others}, "agent", **sync)
        self.world.providers["agent"] = MnemProvider("agent", self.root, scope_key=SCOPE)  # type: ignore[assignment]
        for name in others:
            self.world.providers[name].scope = SCOPE

    def agent(self, change: Callable[[Any, dict[str, str]], object]) -> None:
        """CHANGE(store, node ids by text), as an agent holding the store."""
        store = self.sdk.open(str(self.root))
        try:
            nodes = {n.content: i for i, n in store.working_memory().items()}
            change(store, nodes)
        finally:
            del store  # the lock goes with the handle
            gc.collect()


def test_an_agent_forgetting_what_memsync_just_wrote_reaches_every_side(tmp_path: Path) -> None:
    """mnem lists a cycle as the tree diff from the last cursor, and memsync writes after it
    lists: a node memsync wrote and an agent then forgot is in neither tree. The delete must
    still travel (the state machine found it lost until the hourly full scan)."""
    mnem = MnemWorld(tmp_path, {"mem0": "both"})
    world, sdk = mnem.world, mnem.sdk
    mnem.agent(lambda store, _: sdk.agents.remember(store, "plan", "on the Enterprise plan"))
    world.sync()  # a full listing; the cursor is mnem's head
    world.providers["mem0"].app_add("likes green tea")
    assert world.sync().replayed == {"create": 1}  # listed from the cursor, then written
    mnem.agent(lambda store, nodes: sdk.agents.forget(store, nodes["likes green tea"]))
    report = world.sync()
    assert report.exit_code == 0 and report.replayed == {"delete": 1}
    assert world.contents("mem0") == ["on the Enterprise plan"]
    assert world.sync().planned == []


def test_an_open_conflict_with_an_agent_edit_stays_open_until_resolved(tmp_path: Path) -> None:
    """Policy "error": an agent's rewrite (which drops memsync's fields, written back at once)
    and another side's edit stay two versions, cycle after cycle, until `resolve` (the state
    machine found the write-back settling the conflict for the other side, silently)."""
    mnem = MnemWorld(tmp_path, {"mem0": "both"}, conflict="error")
    world, sdk = mnem.world, mnem.sdk
    record_id = world.providers["mem0"].app_add("likes tea", topic="drinks")
    world.sync()
    mnem.agent(lambda store, nodes: sdk.agents.remember(store, nodes["likes tea"], "likes coffee"))
    world.providers["mem0"].app_edit(record_id, "likes cocoa")
    first = world.sync()
    assert [c["state"] for c in first.conflicts] == ["open"] and first.exit_code == 1
    again = world.sync()
    assert [c["id"] for c in again.conflicts] == [first.conflicts[0]["id"]]
    assert again.planned == [] and again.exit_code == 1  # nothing moves while it is open
    agent = world.providers["agent"]
    assert [r.content for r in listed(agent)] == ["likes coffee"]
    assert world.contents("mem0") == ["likes cocoa"]
    with StagingStore.open(world.db_path) as store:
        choose_winner(store, first.conflicts[0]["id"], "agent")
    assert world.sync().exit_code == 0
    assert world.contents("mem0") == ["likes coffee"]
    (kept,) = listed(agent)
    assert (kept.content, kept.metadata) == ("likes coffee", {"topic": "drinks"})


@pytest.mark.parametrize(
    ("policy", "busy_edit_at", "mem0_holds", "mnem_holds"),
    [
        ("newest", "10:00", ["likes coffee"], ["likes coffee"]),  # the agreed edit is newer
        ("newest", "12:00", ["likes cocoa"], ["likes cocoa"]),  # the returning edit is newer
        ("active", "12:00", ["likes coffee"], ["likes coffee"]),  # mnem is the active backend
        ("keep-both", "10:00", ["likes cocoa", "likes coffee"], ["likes cocoa", "likes coffee"]),
        ("error", "12:00", ["likes cocoa"], ["likes coffee"]),  # open: nothing moves
    ],
)
def test_an_edit_made_while_busy_is_a_conflict_with_what_was_agreed_meanwhile(
    tmp_path: Path, policy: Policy, busy_edit_at: str, mem0_holds: list[str], mnem_holds: list[str]
) -> None:
    """mem0 is busy for a cycle in which mnem's edit is agreed, and was edited meanwhile: the
    two edits are concurrent, and the policy settles them (before, mem0's edit silently
    replaced the agreed one everywhere, whatever the policy)."""
    world = World(tmp_path, {"mem0": "both", "mnem": "both"}, "mnem", conflict=policy)
    record_id = world.providers["mem0"].app_add("likes tea")
    world.sync()
    (mnem_id,) = list(world.stores["mnem"].records)
    world.providers["mnem"].app_edit(mnem_id, "likes coffee", when="2030-01-01T11:00:00Z")
    world.providers["mem0"].app_edit(
        record_id, "likes cocoa", when=f"2030-01-01T{busy_edit_at}:00Z"
    )
    world.providers["mem0"].faults.busy = True
    assert world.sync().conflicts == []  # only mnem's edit is known yet
    world.providers["mem0"].faults.busy = False
    report = world.sync()
    assert [c["providers"] for c in report.conflicts] == [["mem0", "mnem"]]
    assert world.contents("mem0") == mem0_holds and world.contents("mnem") == mnem_holds
    assert report.exit_code == (1 if policy == "error" else 0)
    assert world.sync().planned == []


def test_a_delete_made_while_busy_loses_to_the_edit_agreed_meanwhile(tmp_path: Path) -> None:
    """Modify beats delete also across a busy cycle: mem0 deletes a memory while busy, mnem's
    edit of it is agreed meanwhile; mem0 gets the edited memory back, nothing is deleted."""
    world = World(tmp_path, {"mem0": "both", "mnem": "both"}, "mnem", max_delete="100%")
    record_id = world.providers["mem0"].app_add("likes tea")
    world.providers["mem0"].app_add("lives in Lisbon")
    world.sync()
    (mnem_id,) = [k for k, r in world.stores["mnem"].records.items() if r.content == "likes tea"]
    world.providers["mnem"].app_edit(mnem_id, "likes coffee")
    world.providers["mem0"].delete(record_id)
    world.providers["mem0"].faults.busy = True
    world.sync()
    world.providers["mem0"].faults.busy = False
    report = world.sync()
    assert report.exit_code == 0 and report.conflicts == []
    for name in ("mem0", "mnem"):
        assert world.contents(name) == ["likes coffee", "lives in Lisbon"], name
    assert world.sync().planned == []


@pytest.mark.parametrize("policy", ["newest", "active", "keep-both", "error"])
def test_each_collision_once_under_each_policy(policy: Policy) -> None:
    """The collisions the machine draws, scripted once per policy, the outcome spelled out."""
    machine = machine_for(policy)()
    try:
        machine.memories_everywhere(["notes", "mem0", "agent", "mem0"])  # memory N vN
        machine.edit_differently_on_several_sides(["notes", "agent"], 0, {"topic": "work"})
        machine.edit_differently_on_several_sides(["notes", "mem0"], 1, {})  # v7, then v8
        machine.edit_here_delete_there(["agent", "notes", "mem0"], 2, {})  # v9
        machine.edit_alike_on_several_sides(
            {"notes", "mem0"}, 2
        )  # memory 4 (3 is gone from notes): v10
        machine.add_the_same_text_on_several_sides({"agent", "notes"})  # memory 5 v11
        machine.sync()
        later = ["memory 3 v9", "memory 4 v10", "memory 5 v11"]
        expected = {
            "newest": ["memory 1 v5", "memory 2 v8", *later],  # mnem's edit has no instant
            "active": ["memory 1 v6", "memory 2 v8", *later],  # the agent's edit wins
            "keep-both": ["memory 1 v5", "memory 1 v6", "memory 2 v7", "memory 2 v8", *later],
            "error": ["memory 1 v1", "memory 2 v8", *later],  # mem0 keeps its own, for now
        }[policy]
        assert sorted(v.text for v in machine.holdings("mem0").elements()) == expected
        assert len(machine.open) == (2 if policy == "error" else 0)
    finally:
        machine.teardown()  # resolves what is open; all converge; the next cycle is quiet
