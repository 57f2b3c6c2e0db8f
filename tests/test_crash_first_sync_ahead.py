"""A first sync into a new mnem store, staged ahead by a writer process, SIGKILLed at each of its
crash points, and the cycle after it (``engine/prepared.py``, ``providers/mnem/ahead.py``).

While memsync stages Mem0's listing and plans, a writer process creates the store and stages
every memory in it: staged, not written (mnem shows nothing until a commit). Replay records the
outcomes in one staging transaction and commits it only after mnem's commit. Each kill is a
real SIGKILL of a real `memsync sync` (``memsync.faults``); what a user would notice is
checked where it lands, then the rerun: every memory in mnem exactly once, in one commit by
memsync, nothing back into Mem0, nothing left staged, and a quiet cycle after it.

| kill point | what holds when it lands |
|---|---|
| mirror:committed:1 | Mem0's listing staged, the writer at work: no commit in mnem, only staged nodes memsync's note names |
| cycle:after-plan:1 | the plan recorded (every create pending), still no commit |
| replay:prepared:1 | every outcome recorded in the open transaction: none kept, no commit |
| replay:committed:1 | mnem committed every memory, staging kept none of their outcomes: the rerun recognises them by origin and commits nothing more |
| stager:add:100 | the writer dies (killed after 100 nodes): memsync writes the batch itself, in the same cycle |

A kill inside mnem's own commit is tests/test_crash_mnem_commit.py (the same first sync).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

from tests.conftest import run_memsync, write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, mem0_table
from tests.test_live_watch import wait_until

T = TypeVar("T")
N = 600  # past AHEAD_FROM (500): the first sync stages ahead
TEXTS = sorted(f"memory {i}" for i in range(N))


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


def configure(home: Path) -> None:
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\ncreate = true\n'
        + "import_history = false\n",  # with it, the history import writes (no writer process)
    )


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("ahead") / "home"
    (home / "config").mkdir(parents=True)
    configure(home)
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)] * N,
            payloads=[mem0_payload(text, user_id="alice") for text in TEXTS],
            ids=[str(uuid.uuid4()) for _ in range(N)],
        )
    return home


@pytest.fixture
def home(seed: Path, tmp_path: Path) -> Path:
    """A copy of the seeded home that never synced (its config pointing at the copy)."""
    copy = tmp_path / "home"
    shutil.copytree(seed, copy)
    configure(copy)
    return copy


def in_mnem(sdk: ModuleType, root: Path, read: Callable[[Any], T]) -> T:
    """What READ finds in the store, opened as an agent would open it (which fails while any
    process still holds it), then let go."""
    store = sdk.open(root)
    try:
        return read(store)
    finally:
        del store
        gc.collect()


def commits_and_staged(store: Any) -> tuple[list[str], set[str]]:
    staged = {node_id for node_id, _ in store.staged()} | set(store.staged_deletions())
    return [c.author for c in store.log()], staged


def noted(home: Path) -> set[str]:
    """The nodes memsync's note names (one line per part of the batch handed to the writer)."""
    notes = list((home / "state" / "mnem-batches").glob("*.json"))
    lines = [line for note in notes for line in note.read_text().splitlines()]
    return {node for line in lines for node in json.loads(line)["nodes"]}


def staging(home: Path, query: str) -> int:
    with sqlite3.connect(home / "state" / "staging.db") as conn:
        return int(conn.execute(query).fetchone()[0])


def into_agent(home: Path, state: str) -> int:
    return staging(
        home, f"SELECT COUNT(*) FROM outbox WHERE provider = 'agent' AND state = '{state}'"
    )


def sync(home: Path, **env: str) -> Any:
    return run_memsync(home, "sync", "--json", env_extra=env)


def mem0_count(home: Path) -> int:
    with App(home, "old") as memory:
        return len(memory.get_all(filters={"user_id": "alice"}, top_k=100_000)["results"])


def converges(mnem: ModuleType, home: Path, commits: int = 1) -> None:
    """The rerun: every memory once, in COMMITS commits by memsync; then nothing to do."""
    again = sync(home)
    out = json.loads(again.stdout)
    assert again.returncode == 0, (out["providers"], out["failures"], again.stderr[-2000:])
    nodes = in_mnem(mnem, home / "agent", lambda store: store.working_memory())
    assert sorted(n.content for n in nodes.values()) == TEXTS  # each memory once
    assert in_mnem(mnem, home / "agent", commits_and_staged) == (["memsync"] * commits, set())
    assert mem0_count(home) == N  # nothing written back into Mem0
    assert not noted(home)
    quiet = sync(home)
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["actions_total"] == 0


def holders(store: Path) -> list[str]:
    """The processes with a file of the store at STORE open (from /proc)."""
    found = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            links = [os.readlink(fd) for fd in fd_dir.iterdir()]
        except OSError:
            continue  # gone, or not ours to read
        if any(link.startswith(str(store)) for link in links):
            found.append(fd_dir.parent.name)
    return found


def kill_at(home: Path, point: str) -> None:
    killed = sync(home, MEMSYNC_KILL_AT=point)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-800:])
    # The writer process dies with memsync (PDEATHSIG), a moment after memsync's own exit: what
    # a rerun or an agent meets is the store once both are gone.
    wait_until(lambda: not holders(home / "agent"), "the writer process to die with memsync")


def nothing_committed_only_memsyncs_staged(mnem: ModuleType, home: Path) -> set[str]:
    if not (home / "agent" / ".mnem").is_dir():
        return set()  # killed before the writer made the store: nothing at all
    authors, staged = in_mnem(mnem, home / "agent", commits_and_staged)
    assert authors == []  # no memory visible to an agent
    assert staged <= noted(home)  # what is staged is memsync's own, named by its note
    return staged


def nothing_staged_kept(home: Path) -> None:
    """Staging kept no outcome of a write into mnem."""
    assert into_agent(home, "done") == 0
    assert staging(home, "SELECT COUNT(*) FROM records WHERE provider = 'agent'") == 0
    assert staging(home, "SELECT COUNT(*) FROM changes WHERE kind = 'written'") == 0


def mirror_committed(mnem: ModuleType, home: Path) -> None:
    """Mem0's listing staged, the writer at work: nothing planned yet."""
    nothing_committed_only_memsyncs_staged(mnem, home)
    assert staging(home, "SELECT COUNT(*) FROM outbox") == 0


def after_plan(mnem: ModuleType, home: Path) -> None:
    """The plan recorded: every create pending, none begun."""
    nothing_committed_only_memsyncs_staged(mnem, home)
    assert into_agent(home, "pending") == N and into_agent(home, "done") == 0


def prepared(mnem: ModuleType, home: Path) -> None:
    """Every write prepared and its outcome built, in memory: staging kept none of them."""
    nothing_committed_only_memsyncs_staged(mnem, home)  # the writer may still have been at it
    assert into_agent(home, "running") == N
    nothing_staged_kept(home)


def committed(mnem: ModuleType, home: Path) -> None:
    """mnem committed every memory, staging kept none of their outcomes."""
    authors, staged = in_mnem(mnem, home / "agent", commits_and_staged)
    assert authors == ["memsync"] and staged == set()  # the whole batch, in one commit
    nothing_staged_kept(home)


@pytest.mark.parametrize(
    ("point", "landed"),
    [
        ("mirror:committed:1", mirror_committed),
        ("cycle:after-plan:1", after_plan),
        ("replay:prepared:1", prepared),
        ("replay:committed:1", committed),
    ],
    ids=["mirror", "plan", "prepared", "committed"],
)
def test_killed_at_a_crash_point_the_store_shows_all_or_nothing_and_the_rerun_writes_each_once(
    mnem: ModuleType, home: Path, point: str, landed: Callable[[ModuleType, Path], None]
) -> None:
    """Each kill lands where it says (``landed``); the rerun then holds every memory once, in
    one memsync commit: after a kill past the commit, memsync recognises each memory by its
    origin and commits nothing more."""
    kill_at(home, point)
    landed(mnem, home)
    converges(mnem, home)
