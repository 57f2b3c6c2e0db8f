"""The crash matrix: SIGKILL a real `memsync sync` where a named step of its write sequence
lands, check that the step's side effect has (or has not) happened when the kill lands, then
run again and check that every provider converges: nothing lost, nothing doubled, no delete.

The kill is ``os.kill(SIGKILL)`` inside a real `memsync` subprocess (memsync.base.faults, enabled
only by MEMSYNC_KILL_AT): no ``finally`` block runs, so a write whose outcome was not yet
recorded really loses it. Replay order is fixed (engine ``_replay_rank``): the active backend
first, then the other providers, push-only backups last; the kill points are chosen from that
sequence.

Worlds: two real Mem0 OSS stores, ``old`` (250 memories) and ``new`` (10, the active
backend), and a PMM backup. The first cycle writes, in order: 250 creates into ``new``
(replay results 1-250), 10 into ``old`` (251-260), 260 into ``backup`` (one atomic file
write, results 261-520). The edit cycle follows a converged first sync: ``old`` updates 5
memories and deletes 5, ``new`` updates 5 and deletes 3, and memory 7 is edited on both
(a conflict the newest edit, new's, wins). The mnem world: a real Mem0 store and the real mnem
SDK (the active backend, listed incrementally from its last commit) after a first sync, then
edits on both.

| kill point | cycle | proves |
|---|---|---|
| mirror:committed:1 | first | killed after a mirror commit, before any write: nothing written; the rerun does it all once |
| replay:before-batch:1 | first | outbox marked running, nothing written: stale running actions are superseded, not lost |
| replay:result:1 | first | one create landed in new, its outcome unrecorded: recognised by origin, not redone |
| replay:result:200 | first | 200 landed, the outcome group not yet recorded: none doubled |
| replay:remembered:1 | first | a recorded group survives the kill: those writes are never redone |
| replay:result:251 | first | the active backend was written in full before any other provider (replay order) |
| replay:before-batch:3 | first | killed before the backup batch: no backup file yet; the rerun writes it once |
| replay:result:261 | first | the backup file was written whole and atomically; its lost outcomes are recognised |
| cycle:after-plan:1 | edit | the conflict is decided and recorded, nothing written: the rerun applies the same winner once, keeps the loser |
| replay:result:1 | edit | the first update/delete landed in new, its outcome lost: not redone, no delete elsewhere |
| replay:result:{into new + 1} | edit | new got every edit, the first into old landed: the rerun finishes old alone |
| replay:before-batch:3 | edit | the backup still holds the first cycle's copy when killed; the rerun brings it up to date |
| replay:before-batch:1 | mnem | mnem has no memsync commit yet; incremental listing picks everything up on the rerun |
| replay:result:1 | mnem | the batch's one mnem commit landed, its outcomes lost: no second commit of the same changes |

A kill inside mnem's own commit is tests/test_crash_mnem_commit.py. Not covered: a kill
inside Mem0's SQLite/Qdrant writes (their own atomicity).
"""

from __future__ import annotations

import gc
import json
import shutil
import signal
import sqlite3
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import run_memsync, write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, ids_by_text, mem0_table

OLD, NEW = 250, 10
FIRST_INTO_NEW = OLD  # replay results 1..250 are creates into the active backend


def configure(home: Path, second: str = "mem0") -> None:
    agent = (
        mem0_table("new", home / "stores")
        if second == "mem0"
        else f'\n[providers.new]\ntype = "mnem"\npath = "{home / "agent"}"\n'
    )
    write_config(
        home,
        '[sync]\nactive = "new"\nconflict = "newest"\nmax_delete_count = 5000\n'
        + mem0_table("old", home / "stores")
        + agent
        + f'\n[providers.backup]\ntype = "pmm-dir"\npath = "{home / "backup"}"\ndirection = "push"\n',
    )


def seed_mem0(home: Path, name: str, count: int) -> None:
    with App(home, name) as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)] * count,
            payloads=[mem0_payload(f"{name} memory {i}", user_id="alice") for i in range(count)],
            ids=[str(uuid.uuid4()) for _ in range(count)],
        )


def mem0_texts(home: Path, name: str) -> list[str]:
    with App(home, name) as memory:
        items = memory.get_all(filters={"user_id": "alice"}, top_k=100_000)["results"]
    return sorted(item["memory"] for item in items)


def backup_texts(home: Path) -> list[str] | None:
    """Every memory in the backup's files (one per scope), or None before its first write."""
    files = sorted((home / "backup").glob("*.pmm.jsonl"))
    if not files:
        return None
    lines = [line for path in files for line in path.read_text().splitlines()[1:]]
    return sorted(json.loads(line)["content"] for line in lines)


def staging(home: Path, query: str) -> int:
    with sqlite3.connect(home / "state" / "staging.db") as conn:
        return int(conn.execute(query).fetchone()[0])


def done_into(home: Path, provider: str) -> int:
    """Writes into PROVIDER the killed run recorded as done."""
    return staging(
        home,
        "SELECT COUNT(*) FROM outbox WHERE state = 'done' AND provider = "
        f"'{provider}' AND run_id = (SELECT MAX(id) FROM runs)",
    )


def sync(home: Path, **env: str) -> Any:
    return run_memsync(home, "sync", "--json", env_extra=env)


def kill_at(home: Path, point: str) -> None:
    killed = run_memsync(home, "sync", env_extra={"MEMSYNC_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, (point, killed.returncode, killed.stderr[-800:])


def rerun_converges(home: Path, texts: Callable[[str], list[str]], expected: list[str]) -> None:
    again = sync(home)
    assert again.returncode == 0, (again.stdout[-2000:], again.stderr[-2000:])
    quiet = sync(home)
    assert json.loads(quiet.stdout)["actions_total"] == 0, quiet.stdout[-2000:]  # nothing left
    for name in ("old", "new"):
        assert texts(name) == expected, name  # nothing lost, nothing doubled, no stray delete
    assert backup_texts(home) == expected


def fresh_copy(seed: Path, target: Path, second: str = "mem0") -> Path:
    """A copy of a home that never synced (a synced one must keep its paths: `Snapshot`)."""
    shutil.copytree(seed, target)
    configure(target, second)  # paths inside the config point at the copy
    return target


class Snapshot:
    """A synced home, restored at the same path for every kill point.

    A provider's identity includes its path: a copy elsewhere would look like a different
    store, and memsync would reset its mirror instead of syncing the edits under test.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self.saved = home.with_name(home.name + ".snapshot")
        shutil.copytree(home, self.saved)

    def restore(self) -> Path:
        shutil.rmtree(self.home)
        shutil.copytree(self.saved, self.home)
        return self.home


# --- the first cycle: creates into new, old, then the backup ---------------------------------


@pytest.fixture(scope="module")
def first_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("crash-first")
    (home / "config").mkdir()
    configure(home)
    seed_mem0(home, "old", OLD)
    seed_mem0(home, "new", NEW)
    return home


FIRST_EXPECTED = sorted(
    [f"old memory {i}" for i in range(OLD)] + [f"new memory {i}" for i in range(NEW)]
)


def landed_in_new(home: Path) -> int:
    return len(mem0_texts(home, "new")) - NEW


def check_nothing_written(home: Path) -> None:
    assert landed_in_new(home) == 0 and backup_texts(home) is None


def check_one_landed_unrecorded(home: Path) -> None:
    assert landed_in_new(home) == 1 and done_into(home, "new") == 0


def check_group_landed_unrecorded(home: Path) -> None:
    assert landed_in_new(home) == 200 and done_into(home, "new") < 200


def check_group_recorded(home: Path) -> None:
    recorded = done_into(home, "new")
    assert 1 <= recorded <= landed_in_new(home) and backup_texts(home) is None


def check_active_first(home: Path) -> None:
    assert landed_in_new(home) == OLD and len(mem0_texts(home, "old")) == OLD + 1
    assert backup_texts(home) is None


def check_backup_not_started(home: Path) -> None:
    assert landed_in_new(home) == OLD and len(mem0_texts(home, "old")) == OLD + NEW
    assert backup_texts(home) is None


def check_backup_whole(home: Path) -> None:
    assert backup_texts(home) == FIRST_EXPECTED and done_into(home, "backup") == 0


FIRST_POINTS: dict[str, Callable[[Path], None]] = {
    "mirror:committed:1": check_nothing_written,
    "replay:before-batch:1": check_nothing_written,
    "replay:result:1": check_one_landed_unrecorded,
    "replay:result:200": check_group_landed_unrecorded,
    "replay:remembered:1": check_group_recorded,
    f"replay:result:{FIRST_INTO_NEW + 1}": check_active_first,
    "replay:before-batch:3": check_backup_not_started,
    f"replay:result:{OLD + NEW + 1}": check_backup_whole,
}


@pytest.mark.parametrize("point", list(FIRST_POINTS))
def test_a_first_cycle_killed_here_converges(first_seed: Path, tmp_path: Path, point: str) -> None:
    home = fresh_copy(first_seed, tmp_path / "home")
    kill_at(home, point)
    FIRST_POINTS[point](home)
    rerun_converges(home, lambda name: mem0_texts(home, name), FIRST_EXPECTED)


# --- an edit cycle: updates, deletes and a conflict -------------------------------------------


def edit_both_sides(home: Path) -> list[str]:
    """The edits of the matrix's second cycle; returns what every provider must end with."""
    with App(home, "old") as memory:
        ids = ids_by_text(memory)
        for i in range(5):
            memory.update(ids[f"old memory {i}"], f"old memory {i}, edited in old")
        for i in range(5, 10):
            memory.delete(ids[f"old memory {i}"])
        memory.update(ids["old memory 77"], "old memory 77, old's edit")
    with App(home, "new") as memory:
        ids = ids_by_text(memory)
        for i in range(20, 25):
            memory.update(ids[f"old memory {i}"], f"old memory {i}, edited in new")
        for i in range(25, 28):
            memory.delete(ids[f"old memory {i}"])
        memory.update(ids["old memory 77"], "old memory 77, new's edit")  # newer: it wins
    expected = set(FIRST_EXPECTED)
    expected -= {f"old memory {i}" for i in [*range(10), *range(20, 28), 77]}
    expected |= {f"old memory {i}, edited in old" for i in range(5)}
    expected |= {f"old memory {i}, edited in new" for i in range(20, 25)}
    expected.add("old memory 77, new's edit")
    return sorted(expected)


@pytest.fixture(scope="module")
def edit_seed(
    first_seed: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Snapshot, list[str], int]:
    home = fresh_copy(first_seed, tmp_path_factory.mktemp("crash-edit") / "home")
    assert sync(home).returncode == 0
    expected = edit_both_sides(home)
    snapshot = Snapshot(home)
    plan = json.loads(run_memsync(home, "sync", "--dry-run", "--json").stdout)
    into_new = sum(1 for action in plan["actions"] if action["provider"] == "new")
    assert into_new == 5 + 5, plan["actions"]  # old's updates and deletes; new won memory 77
    assert [(c["winner"], c["state"]) for c in plan["conflicts"]] == [("new", "resolved")]
    return snapshot, expected, into_new


def edit_points(into_new: int) -> dict[str, Callable[[Path, list[str]], None]]:
    def conflict_recorded_nothing_written(home: Path, expected: list[str]) -> None:
        assert staging(home, "SELECT COUNT(*) FROM conflicts") == 1
        assert "old memory 77, old's edit" in mem0_texts(home, "old")
        assert "old memory 0" in mem0_texts(home, "new")  # old's edits not yet replayed

    def first_edit_landed(home: Path, expected: list[str]) -> None:
        before = Counter(FIRST_EXPECTED)  # what new held, plus its own edits
        now = Counter(mem0_texts(home, "new"))
        old_edits = {f"old memory {i}" for i in range(10)}
        changed = {t for t in before.keys() ^ now.keys() if t.split(",")[0] in old_edits}
        assert len(changed) in (1, 2), changed  # one delete, or one update (old text, new text)
        assert done_into(home, "new") < into_new

    def new_done_old_started(home: Path, expected: list[str]) -> None:
        new = mem0_texts(home, "new")
        assert {f"old memory {i}, edited in old" for i in range(5)} <= set(new)
        assert not {f"old memory {i}" for i in range(5, 10)} & set(new)
        old = set(mem0_texts(home, "old"))
        landed = sum(f"old memory {i}, edited in new" in old for i in range(20, 25))
        gone = sum(f"old memory {i}" not in old for i in range(25, 28))
        assert landed + gone + ("old memory 77, new's edit" in old) == 1

    def backup_still_first(home: Path, expected: list[str]) -> None:
        assert backup_texts(home) == FIRST_EXPECTED
        assert mem0_texts(home, "new") == expected == mem0_texts(home, "old")

    return {
        "cycle:after-plan:1": conflict_recorded_nothing_written,
        "replay:result:1": first_edit_landed,
        f"replay:result:{into_new + 1}": new_done_old_started,
        "replay:before-batch:3": backup_still_first,
    }


EDIT_POINTS = list(edit_points(10))


@pytest.mark.parametrize("index", range(len(EDIT_POINTS)), ids=EDIT_POINTS)
def test_an_edit_cycle_killed_here_converges(
    edit_seed: tuple[Snapshot, list[str], int], index: int
) -> None:
    snapshot, expected, into_new = edit_seed
    point, check = list(edit_points(into_new).items())[index]
    home = snapshot.restore()
    kill_at(home, point)
    check(home, expected)
    rerun_converges(home, lambda name: mem0_texts(home, name), expected)
    conflicts = json.loads(run_memsync(home, "conflicts", "--all", "--json").stdout)
    assert [c["versions"]["old"]["content"] for c in conflicts] == ["old memory 77, old's edit"]


# --- the real mnem SDK as the active backend: an incremental edit cycle ----------------------


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


class Agent:
    def __init__(self, sdk: ModuleType, root: Path) -> None:
        self.sdk, self.root = sdk, root

    def __enter__(self) -> Agent:
        self.store: Any = self.sdk.open(self.root)
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store
        gc.collect()


def mnem_texts(mnem: ModuleType, home: Path) -> list[str]:
    with Agent(mnem, home / "agent") as agent:
        return sorted(n.content for n in agent.store.working_memory().values())


def memsync_commits(mnem: ModuleType, home: Path) -> int:
    with Agent(mnem, home / "agent") as agent:
        return sum(1 for c in agent.store.log() if c.author == "memsync")


@pytest.fixture(scope="module")
def mnem_seed(
    mnem: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Snapshot, list[str], int]:
    home = tmp_path_factory.mktemp("crash-mnem") / "home"
    home.mkdir()
    (home / "config").mkdir()
    configure(home, "mnem")
    seed_mem0(home, "old", OLD)
    mnem.init(home / "agent")
    gc.collect()
    assert sync(home).returncode == 0
    with App(home, "old") as memory:
        ids = ids_by_text(memory)
        memory.update(ids["old memory 1"], "old memory 1, edited in old")
        memory.delete(ids["old memory 2"])
        memory.add("added in old", user_id="alice", infer=False)
    with Agent(mnem, home / "agent") as agent:
        nodes = {n.content: node_id for node_id, n in agent.store.working_memory().items()}
        mnem.agents.remember(agent.store, nodes["old memory 3"], "old memory 3, edited in mnem")
        mnem.agents.forget(agent.store, nodes["old memory 4"])
        mnem.agents.remember(agent.store, "agent-1", "added in mnem", source="agent-3")
    expected = set(f"old memory {i}" for i in range(OLD)) - {f"old memory {i}" for i in range(1, 5)}
    expected |= {"old memory 1, edited in old", "old memory 3, edited in mnem"}
    expected |= {"added in old", "added in mnem"}
    return Snapshot(home), sorted(expected), memsync_commits(mnem, home)


@pytest.mark.parametrize("point", ["replay:before-batch:1", "replay:result:1"])
def test_a_cycle_into_the_real_mnem_sdk_killed_here_converges(
    mnem: ModuleType, mnem_seed: tuple[Snapshot, list[str], int], point: str
) -> None:
    snapshot, expected, commits = mnem_seed
    home = snapshot.restore()
    kill_at(home, point)
    texts = mnem_texts(mnem, home)
    if point == "replay:before-batch:1":
        assert memsync_commits(mnem, home) == commits and "added in old" not in texts
    else:  # the one commit of the batch landed whole; its outcomes were lost
        assert memsync_commits(mnem, home) == commits + 1
        assert {"added in old", "old memory 1, edited in old"} <= set(texts)
        assert "old memory 2" not in texts and done_into(home, "new") == 0

    def texts_of(name: str) -> list[str]:
        return mnem_texts(mnem, home) if name == "new" else mem0_texts(home, name)

    rerun_converges(home, texts_of, expected)
    assert memsync_commits(mnem, home) == commits + 1  # the lost outcomes were not redone
