"""End to end through the CLI on two real Mem0 OSS stores that already share most memories.

The day-one cutover: both stores hold 1,000 memories in common under different ids (another
tool imported them earlier), 50 of their own each, and the old store holds one text twice.
The first sync must adopt the shared ones, not copy them: each side ends with the union and
no extra copies, a second sync writes nothing, and `memsync verify` agrees.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.test_e2e_mem0 import App, mem0_table, memsync

SHARED, UNIQUE = 1000, 50
TWICE = "shared memory 7"  # held twice by the old store


def texts_of(memory: Any) -> Counter[str]:
    items = memory.get_all(filters={"user_id": "alice"}, top_k=10_000)["results"]
    return Counter(item["memory"] for item in items)


def insert(memory: Any, texts: list[str]) -> None:
    payloads = [mem0_payload(text, user_id="alice", topic="work") for text in texts]
    vectors = [[float(i % 7 + 1)] + [0.0] * (DIMS - 1) for i in range(len(texts))]
    ids = [str(uuid.uuid4()) for _ in texts]  # every store names its memories its own way
    memory.vector_store.insert(vectors=vectors, payloads=payloads, ids=ids)


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("e2e-adopt")
    (home / "config").mkdir()
    write_config(
        home,
        '[sync]\nactive = "new"\n'
        + mem0_table("old", home / "stores")
        + mem0_table("new", home / "stores"),
    )
    shared = [f"shared memory {i}" for i in range(SHARED)]
    with App(home, "old") as memory:
        insert(memory, [*shared, TWICE, *(f"only old {i}" for i in range(UNIQUE))])
    with App(home, "new") as memory:
        insert(memory, [*reversed(shared), *(f"only new {i}" for i in range(UNIQUE))])
    return home


def test_a_first_sync_adopts_what_both_stores_hold(
    two_stores: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = two_stores
    union = Counter(f"shared memory {i}" for i in range(SHARED))
    union.update({TWICE: 1})
    union.update(f"only old {i}" for i in range(UNIQUE))
    union.update(f"only new {i}" for i in range(UNIQUE))

    # The dry run lists the adoptions and keeps none of them.
    code, out = memsync(home, monkeypatch, "sync", "--dry-run", "--json")
    plan = json.loads(out)
    kinds = Counter(action["action"] for action in plan["actions"])
    assert code == 0 and plan["providers"]["old"]["adopted"] == SHARED, out[-2000:]
    assert kinds["adopt"] == SHARED and plan["actions_total"] == SHARED + 2 * UNIQUE + 1

    code, out = memsync(home, monkeypatch, "sync", "--json")
    report = json.loads(out)
    assert code == 0, out[-2000:]
    assert {n: p["adopted"] for n, p in report["providers"].items()} == {
        "old": SHARED,
        "new": SHARED,
    }
    # Only what one side lacked is written: 50 each way, and the second copy of TWICE.
    assert report["replayed"] == {"create": 2 * UNIQUE + 1}
    assert (report["providers"]["old"]["written"], report["providers"]["new"]["written"]) == (
        UNIQUE,
        UNIQUE + 1,
    )
    with App(home, "old") as memory:
        assert texts_of(memory) == union
    with App(home, "new") as memory:
        assert texts_of(memory) == union

    code, out = memsync(home, monkeypatch, "sync", "--json")
    again = json.loads(out)
    assert code == 0 and again["actions_total"] == 0 and again["replayed"] == {}
    assert {p["adopted"] for p in again["providers"].values()} == {0}

    code, out = memsync(home, monkeypatch, "verify", "old", "new")
    total = sum(union.values())
    assert code == 0 and f"old: {total} memories, new: {total} memories" in out, out

    # The journal says which memory each record joined, and from where.
    with App(home, "old") as memory:
        items = memory.get_all(filters={"user_id": "alice"}, top_k=10_000)["results"]
        old_id = next(i["id"] for i in items if i["memory"] == "shared memory 3")
    code, out = memsync(home, monkeypatch, "history", old_id, "--json")
    entries = json.loads(out)
    adopted = [e for e in entries if e["kind"] == "adopted"]
    assert code == 0 and len(adopted) == 1 and adopted[0]["provider_id"] == old_id
    assert adopted[0]["from_provider"] == "new" and adopted[0]["link_id"].startswith("mem0:")
    assert {e["provider"] for e in entries if e["kind"] == "added"} == {"old", "new"}
    code, out = memsync(home, monkeypatch, "log", "--provider", "old", "--limit", "5000", "--json")
    assert sum(e["kind"] == "adopted" for e in json.loads(out)) == SHARED
