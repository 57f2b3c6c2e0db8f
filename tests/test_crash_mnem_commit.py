"""A real `memsync sync` SIGKILLed inside the real mnem SDK's commit, and the cycle after it.

mnem's commit is one redb write transaction, run in Rust with the GIL held, so no thread of
memsync could act during it. ``memsync.base.faults.killed_inside`` starts a watcher process before
the commit and that process kills memsync once memsync's writing thread has spent 2 ms of CPU
inside the call (the kernel's accounting in /proc) and the call has not returned. It stops
memsync first and reads where the thread is (its program counter and the return addresses on
its stack, against the process's maps), so its report proves the kill landed in mnem's compiled
code, not in the Python just before the call (a kill there leaves the same store). The batch is a first sync of a few thousand Mem0 memories into a new store, a
commit of tens of milliseconds here: staged ahead by a writer process while memsync planned,
then committed by memsync itself (``engine/prepared.py``), as every first sync of that size is.

What a user would notice is checked: after the kill, mnem holds the whole batch or none of it
(redb's transaction is atomic; here, none); memsync's half-staged batch is recognised as its
own at the next open (its note names every staged node) and unstaged, not refused as another
writer's; the next cycle writes every memory into mnem exactly once, in one commit, and
nothing back into Mem0; the one after it has nothing to do.
"""

from __future__ import annotations

import gc
import importlib
import json
import signal
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

T = TypeVar("T")
N = 3_000  # a commit of 3,000 staged nodes takes tens of ms of CPU: room for a 2 ms kill


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


def native_library(sdk: ModuleType) -> str:
    """The file of mnem's compiled code (Rust): where a thread inside mnem's commit runs."""
    return Path(importlib.import_module(f"{sdk.__name__}._mnem").__file__ or "?").name


def seeded(home: Path) -> Path:
    (home / "config").mkdir(parents=True)
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\ncreate = true\n',
    )
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)] * N,
            payloads=[mem0_payload(f"memory {i}", user_id="alice") for i in range(N)],
            ids=[str(uuid.uuid4()) for _ in range(N)],
        )
    return home


def in_mnem(sdk: ModuleType, root: Path, read: Callable[[Any], T]) -> T:
    """What READ finds in the store, opened as an agent would open it, then let go."""
    store = sdk.open(root)
    try:
        return read(store)
    finally:
        del store
        gc.collect()


def committed_and_staged(store: Any) -> tuple[str | None, int, int]:
    return (
        store.head_commit(),
        len(store.log()),
        len(store.staged()) + len(store.staged_deletions()),
    )


def noted(note: Path) -> set[str]:
    """The nodes memsync's note names (one line per part: a first sync staged ahead by a
    writer process is noted a page at a time)."""
    return {node for line in note.read_text().splitlines() for node in json.loads(line)["nodes"]}


def mem0_count(home: Path) -> int:
    with App(home, "old") as memory:
        return len(memory.get_all(filters={"user_id": "alice"}, top_k=100_000)["results"])


def sync(home: Path, **env: str) -> Any:
    return run_memsync(home, "sync", "--json", env_extra=env)


def test_killed_inside_the_mnem_commit_the_store_holds_none_of_the_batch_and_the_rerun_writes_it_once(
    mnem: ModuleType, tmp_path: Path
) -> None:
    home = seeded(tmp_path / "home")
    report = tmp_path / "kill-report"
    killed = sync(home, MEMSYNC_KILL_AT="mnem:commit:1", MEMSYNC_KILL_REPORT=str(report))
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-800:])
    said = report.read_text()
    assert said.startswith("killed inside mnem:commit"), said
    assert said.rstrip().endswith(f"stopped in {native_library(mnem)}"), said  # where it landed

    # The whole batch or none of it: none committed; memsync's adds are still staged.
    assert in_mnem(mnem, home / "agent", committed_and_staged) == (None, 0, N)
    notes = list((home / "state" / "mnem-batches").glob("*.json"))
    assert len(notes) == 1 and len(noted(notes[0])) == N

    again = sync(home)
    out = json.loads(again.stdout)
    assert again.returncode == 0, (out["providers"], out["failures"], again.stderr[-2000:])
    nodes = in_mnem(mnem, home / "agent", lambda store: store.working_memory())
    commits = in_mnem(mnem, home / "agent", lambda store: store.log())
    assert in_mnem(mnem, home / "agent", committed_and_staged)[2] == 0
    assert sorted(n.content for n in nodes.values()) == sorted(f"memory {i}" for i in range(N))
    assert all(node_id.startswith("mem0:") for node_id in nodes)  # each memory once, by origin
    assert [c.author for c in commits] == ["memsync"]  # one commit, nothing written twice
    assert mem0_count(home) == N  # nothing written back into Mem0
    assert not list((home / "state" / "mnem-batches").glob("*.json"))

    quiet = sync(home)
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["actions_total"] == 0


def test_a_batch_another_writer_staged_into_is_left_alone(mnem: ModuleType, tmp_path: Path) -> None:
    """The note proves a leftover is memsync's only when it names every staged change."""
    home = seeded(tmp_path / "home")
    report = tmp_path / "kill-report"
    killed = sync(home, MEMSYNC_KILL_AT="mnem:commit:1", MEMSYNC_KILL_REPORT=str(report))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-800:]
    in_mnem(mnem, home / "agent", lambda store: store.add("agent-note", "staged, not committed"))
    refused = sync(home)
    assert refused.returncode != 0
    assert "staged in" in refused.stdout and "another writer" in refused.stdout
    assert in_mnem(mnem, home / "agent", committed_and_staged) == (None, 0, N + 1)  # untouched
