"""The crash matrix: SIGKILL a real `memsync sync` at every step boundary of a cycle, then
run it again, and check that every provider converges with nothing lost and nothing doubled.

Two real Mem0 OSS stores (1,000 memories on the old side, 20 on the new) and a PMM backup.
Kill points are the fault points the engine passes (memsync.faults; enabled only by the
MEMSYNC_KILL_AT variable these tests set): each mirrored page, each provider's journal and
cursor commit, each plan chunk, before each replay batch, after single replay actions
throughout the 2,040 writes of the first cycle, and after a group of outcomes is recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid
from pathlib import Path

import pytest

from tests.conftest import run_memsync, write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.test_e2e_mem0 import App, mem0_table

OLD, NEW = 1000, 20

KILL_POINTS = [
    "mirror:page:1",
    "mirror:page:2",
    "mirror:page:3",
    "mirror:committed:1",
    "mirror:committed:2",
    "mirror:committed:3",
    "cycle:after-mirror:3",
    "plan:chunk:1",
    "plan:chunk:2",
    "plan:chunk:3",
    "cycle:after-plan:1",
    "replay:before-batch:1",
    "replay:before-batch:2",
    "replay:before-batch:4",
    "replay:result:1",
    "replay:result:2",
    "replay:result:17",
    "replay:result:199",
    "replay:result:200",
    "replay:result:201",
    "replay:result:500",
    "replay:result:777",
    "replay:result:1000",
    "replay:result:1001",
    "replay:result:1020",
    "replay:result:1021",
    "replay:result:1500",
    "replay:result:2039",
    "replay:result:2040",
    "replay:remembered:1",
    "replay:remembered:5",
    "replay:remembered:9",
]
KILL_POINTS_QUICK = ["mirror:page:2", "replay:result:777"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MEMSYNC_HOME whose stores hold the memories; copied afresh for every kill point."""
    home = tmp_path_factory.mktemp("crash-seed")
    (home / "config").mkdir()
    configure(home)
    for name, count in (("old", OLD), ("new", NEW)):
        with App(home, name) as memory:
            memory.vector_store.insert(
                vectors=[[1.0] + [0.0] * (DIMS - 1)] * count,
                payloads=[
                    mem0_payload(f"{name} memory {i}", user_id="alice") for i in range(count)
                ],
                ids=[str(uuid.uuid4()) for _ in range(count)],
            )
    return home


def configure(home: Path) -> None:
    write_config(
        home,
        '[sync]\nactive = "new"\n'
        + mem0_table("old", home / "stores")
        + mem0_table("new", home / "stores")
        + f'\n[providers.backup]\ntype = "pmm-dir"\npath = "{home / "backup"}"\ndirection = "push"\n',
    )


def fresh_copy(seed: Path, target: Path) -> Path:
    shutil.copytree(seed, target)
    configure(target)  # paths inside the config point at the copy
    return target


def contents(home: Path, name: str) -> list[str]:
    with App(home, name) as memory:
        return sorted(
            item["memory"]
            for item in memory.get_all(filters={"user_id": "alice"}, top_k=100_000)["results"]
        )


POINTS = KILL_POINTS_QUICK if os.environ.get("MEMSYNC_CRASH_QUICK") else KILL_POINTS
EXPECTED = sorted([f"old memory {i}" for i in range(OLD)] + [f"new memory {i}" for i in range(NEW)])


@pytest.mark.parametrize("point", POINTS)
def test_a_cycle_killed_here_converges_on_the_next_run(
    seeded: Path, tmp_path: Path, point: str
) -> None:
    home = fresh_copy(seeded, tmp_path / "home")
    killed = run_memsync(home, "sync", env_extra={"MEMSYNC_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-500:])
    again = run_memsync(home, "sync", "--json")
    assert again.returncode == 0, (again.stdout[-2000:], again.stderr[-2000:])
    quiet = run_memsync(home, "sync", "--json")
    assert json.loads(quiet.stdout)["actions_total"] == 0  # nothing left to do
    for name in ("old", "new"):
        assert contents(home, name) == EXPECTED, name  # nothing lost, nothing doubled
    backup = [
        json.loads(line)["content"]
        for line in (home / "backup" / "alice.pmm.jsonl").read_text().splitlines()[1:]
    ]
    assert sorted(backup) == EXPECTED


def test_the_matrix_has_at_least_thirty_kill_points() -> None:
    assert len(KILL_POINTS) >= 30 and len(set(KILL_POINTS)) == len(KILL_POINTS)
