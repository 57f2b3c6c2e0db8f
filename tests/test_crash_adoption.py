"""SIGKILL a real `memsync sync` between adoption and replay, then run it again.

Two real Mem0 OSS stores already share 200 memories under different ids, with 20 of their own
each, and a PMM backup. Adoption relinks in one transaction (a kill inside it keeps nothing);
once committed, the next run must neither adopt twice nor copy what was adopted: every store
converges to the union with no extra copy. Kill points are memsync.base.faults points.
"""

from __future__ import annotations

import json
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import run_memsync
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.test_crash_matrix import configure, fresh_copy
from tests.test_e2e_mem0 import App

SHARED, OWN = 200, 20

KILL_POINTS = [
    "adopt:flushed:1",  # inside the adoption transaction: rolled back
    "plan:adopted:1",  # adoption committed, nothing planned yet
    "plan:chunk:1",  # adoption committed, part of the plan recorded
    "cycle:after-plan:1",  # the whole plan recorded, nothing replayed
    "replay:before-batch:1",
    "replay:result:7",  # some of the unique memories copied
]

EXPECTED = Counter(
    [f"shared {i}" for i in range(SHARED)]
    + [f"old {i}" for i in range(OWN)]
    + [f"new {i}" for i in range(OWN)]
)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("crash-adopt-seed")
    (home / "config").mkdir()
    configure(home)
    for name in ("old", "new"):
        texts = [f"shared {i}" for i in range(SHARED)] + [f"{name} {i}" for i in range(OWN)]
        with App(home, name) as memory:
            memory.vector_store.insert(
                vectors=[[1.0] + [0.0] * (DIMS - 1)] * len(texts),
                payloads=[mem0_payload(text, user_id="alice") for text in texts],
                ids=[str(uuid.uuid4()) for _ in texts],
            )
    return home


def held(home: Path, name: str) -> Counter[str]:
    with App(home, name) as memory:
        items = memory.get_all(filters={"user_id": "alice"}, top_k=10_000)["results"]
    return Counter(item["memory"] for item in items)


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_kill_between_adoption_and_replay_converges_without_copies(
    seeded: Path, tmp_path: Path, point: str
) -> None:
    home = fresh_copy(seeded, tmp_path / "home")
    killed = run_memsync(home, "sync", env_extra={"MEMSYNC_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-500:])
    again = run_memsync(home, "sync", "--json")
    assert again.returncode == 0, (again.stdout[-2000:], again.stderr[-2000:])
    report = json.loads(again.stdout)
    assert report["replayed"].get("update", 0) == 0  # adopted pairs needed no write
    quiet = run_memsync(home, "sync", "--json")
    assert json.loads(quiet.stdout)["actions_total"] == 0
    assert held(home, "old") == EXPECTED and held(home, "new") == EXPECTED
    backup = Counter(
        json.loads(line)["content"]
        for line in (home / "backup" / "alice.pmm.jsonl").read_text().splitlines()[1:]
    )
    assert backup == EXPECTED
    verdict = run_memsync(home, "verify", "old", "new")
    assert verdict.returncode == 0, verdict.stdout
