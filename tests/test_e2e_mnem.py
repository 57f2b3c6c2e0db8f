"""End to end on the real mnem SDK, through the CLI: Mem0 → mnem → Mem0, and a daemon cycle.

A real Mem0 OSS store (mem0ai offline) holds 1,200 memories; the real mnem SDK (built by
`make mnem-sdk`, with its storage stand-in) is the active backend. The cutover syncs them
into mnem, both sides edit (Mem0 with the library, mnem as an agent does with
``mnem.agents``), a second cycle carries the edits, and `memsync verify` judges. Then a fresh
Mem0 store is added and filled from mnem, and verified against mnem and the original: the
memories went Mem0 → mnem → Mem0 with nothing lost, doubled or changed.
"""

from __future__ import annotations

import gc
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from memsync.cli import main
from tests.conftest import write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, ids_by_text, mem0_table

N = 1200


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


def configure(home: Path, *mem0_stores: str) -> None:
    write_config(
        home,
        '[sync]\nactive = "agent"\nconflict = "newest"\nmax_delete_count = 5000\n'
        + "".join(mem0_table(name, home / "stores") for name in mem0_stores)
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n',
    )


class Agent:
    """An agent holding the mnem store with the real SDK, as long as the `with` lasts."""

    def __init__(self, sdk: ModuleType, root: Path) -> None:
        self.sdk, self.root = sdk, root

    def __enter__(self) -> Agent:
        self.store: Any = self.sdk.open(self.root)
        return self  # not the store: a caller's variable would keep the lock alive

    def __exit__(self, *exc: object) -> None:
        del self.store  # mnem has no close(): the lock goes with the handle
        gc.collect()


def node_ids_by_text(store: Any) -> dict[str, str]:
    found = {}
    for node_id, node in store.working_memory().items():
        if isinstance(node.content, str):
            found[node.content] = node_id
    return found


def mem0_items(home: Path, name: str) -> dict[str, dict[str, Any]]:
    with App(home, name) as memory:
        items = memory.get_all(filters={"user_id": "alice"}, top_k=100_000)["results"]
    return {item["memory"]: item for item in items}


def users_metadata(item: dict[str, Any]) -> dict[str, Any]:
    """The metadata without memsync's origin marker (which only the copies carry)."""
    return {k: v for k, v in (item.get("metadata") or {}).items() if k != "memsync_origin"}


def memsync(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.setenv("MEMSYNC_HOME", str(home))
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def cutover(tmp_path_factory: pytest.TempPathFactory, mnem: ModuleType) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("e2e-mnem")
    (home / "config").mkdir()
    configure(home, "old")
    mnem.init(home / "agent")
    gc.collect()
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[float(i % 7 + 1)] + [0.0] * (DIMS - 1) for i in range(N)],
            payloads=[
                mem0_payload(f"memory number {i}", user_id="alice", metadata_n=i) for i in range(N)
            ],
            ids=[str(uuid.uuid4()) for _ in range(N)],
        )
    yield home


def test_mem0_to_mnem_to_mem0_with_edits_on_both_sides(
    cutover: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = cutover
    code, out = memsync(home, monkeypatch, "sync", "--json")
    report = json.loads(out)
    assert code == 0, out
    assert report["providers"]["old"]["added"] == N and report["replayed"]["create"] == N
    code, out = memsync(home, monkeypatch, "verify", "old", "agent")
    assert code == 0 and f"old: {N} memories, agent: {N} memories" in out, out
    with Agent(mnem, home / "agent") as agent:
        assert len(agent.store.working_memory()) == N
        assert agent.store.log(limit=1)[0].author == "memsync"  # one commit per batch, by memsync

    # Both sides change: Mem0 through the library, mnem as an agent (its own commit).
    with App(home, "old") as memory:
        ids = ids_by_text(memory)
        memory.update(ids["memory number 1"], "memory number 1, edited in Mem0")
        memory.delete(ids["memory number 2"])
        memory.update(ids["memory number 7"], "memory number 7, Mem0's edit")
        memory.add("added in Mem0", user_id="alice", infer=False)
    with Agent(mnem, home / "agent") as agent:
        nodes = node_ids_by_text(agent.store)
        mnem.agents.remember(
            agent.store, nodes["memory number 3"], "memory number 3, edited in mnem"
        )
        mnem.agents.remember(agent.store, nodes["memory number 7"], "memory number 7, mnem's edit")
        mnem.agents.forget(agent.store, nodes["memory number 4"])
        mnem.agents.remember(agent.store, "agent-note-1", "added in mnem", source="agent-3")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    report = json.loads(out)
    assert code == 0, out
    assert [c["state"] for c in report["conflicts"]] == ["resolved"]  # memory 7, both edited
    code, out = memsync(home, monkeypatch, "verify", "old", "agent", "--json")
    assert code == 0 and json.loads(out)["count"] == {"old": N, "agent": N}, out
    with Agent(mnem, home / "agent") as agent:
        texts = set(node_ids_by_text(agent.store))
    assert {
        "memory number 1, edited in Mem0",
        "memory number 3, edited in mnem",
        "added in Mem0",
        "added in mnem",
    } <= texts
    assert not {"memory number 2", "memory number 4", "memory number 1"} & texts
    assert len({"memory number 7, Mem0's edit", "memory number 7, mnem's edit"} & texts) == 1

    # mnem → a fresh Mem0 store: everything comes out of mnem once, metadata included.
    configure(home, "old", "later")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["replayed"]["create"] == N, out
    for pair in (("agent", "later"), ("old", "later")):
        code, out = memsync(home, monkeypatch, "verify", *pair, "--json")
        assert code == 0, (pair, out)
    came_back, original = mem0_items(home, "later"), mem0_items(home, "old")
    assert len(came_back) == N and came_back.keys() == original.keys()
    for text in ("memory number 10", "added in mnem", "memory number 3, edited in mnem"):
        for field in ("actor_id", "role"):
            assert came_back[text].get(field) == original[text].get(field), (text, field)
        assert users_metadata(came_back[text]) == users_metadata(original[text]), text
    for text in ("memory number 10", "memory number 1, edited in Mem0"):  # dated by Mem0
        assert came_back[text]["created_at"] == original[text]["created_at"], text
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["actions_total"] == 0, out  # quiet: nothing echoes


def test_a_daemon_cycle_syncs_a_real_mnem_store(
    home: Path, mnem: ModuleType, tmp_path: Path
) -> None:
    from tests.test_daemon import DaemonProcess, add_memories, contents

    write_config(
        home,
        f'[sync]\nactive = "agent"\ninterval = "1h"\n[backup]\ninterval = "1h"\n'
        f'[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n'
        f'[providers.notes]\ntype = "pmm-dir"\npath = "{home / "notes"}"\nscope_key = "alice"\n',
    )
    with _fresh(mnem, home) as agent:
        mnem.agents.remember(agent.store, "plan", "on the Enterprise plan", source="ticket")
    add_memories(home, ("m1", "likes green tea"))
    daemon = DaemonProcess(home)
    try:
        line = daemon.wait_for_line("sync #1 ", timeout=120)
        assert " ok in " in line, daemon.lines
        assert daemon.stop()[0] == 0
    finally:
        daemon.kill()
    assert contents(home / "notes") == {"likes green tea", "on the Enterprise plan"}
    with Agent(mnem, home / "agent") as agent:
        assert set(node_ids_by_text(agent.store)) == {"likes green tea", "on the Enterprise plan"}


def _fresh(mnem: ModuleType, home: Path) -> Agent:
    mnem.init(home / "agent")
    gc.collect()
    return Agent(mnem, home / "agent")


CREATED = "2024-03-01T10:00:00.123456-08:00"


def backup_items(directory: Path) -> dict[str, dict[str, Any]]:
    """The PMM backup's memories by text (the first line of each file is its header)."""
    found: dict[str, dict[str, Any]] = {}
    for path in directory.glob("*.pmm.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            if line.strip():
                item = json.loads(line)
                found[item["content"]] = item
    return found


def write_cutover_config(home: Path) -> None:
    """Mem0 ("old", the library) and mnem ("agent", active) in sync, a PMM backup beside them."""
    write_config(
        home,
        '[sync]\nactive = "agent"\nconflict = "newest"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n'
        + f'\n[providers.backup]\ntype = "pmm-dir"\npath = "{home / "pmm"}"\n'
        + 'direction = "push"\n',
    )


@pytest.fixture
def synced_cat(home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Mem0 → mnem (active) → a PMM backup, holding one memory with metadata and a date."""
    write_cutover_config(home)
    mnem.init(home / "agent")
    gc.collect()
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)],
            payloads=[
                mem0_payload(
                    "Has a cat called Miso", user_id="alice", topic="life", created_at=CREATED
                )
            ],
            ids=[str(uuid.uuid4())],
        )
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["replayed"]["create"] == 2, out
    return home


def test_an_agent_rewrite_in_mnem_keeps_the_metadata_and_date_everywhere(
    synced_cat: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_cat
    with Agent(mnem, home / "agent") as agent:
        node_id = node_ids_by_text(agent.store)["Has a cat called Miso"]
        mnem.agents.remember(
            agent.store, node_id, "Has two cats, Miso and Tofu", source="new-agent"
        )
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out

    in_mem0 = mem0_items(home, "old")
    assert list(in_mem0) == ["Has two cats, Miso and Tofu"]
    cats = in_mem0["Has two cats, Miso and Tofu"]
    assert {k: v for k, v in cats["metadata"].items() if not k.startswith("memsync_")} == {
        "topic": "life"
    }  # memsync's own markers (origin, provenance) aside
    assert cats["created_at"] == CREATED
    backup = backup_items(home / "pmm")
    assert list(backup) == ["Has two cats, Miso and Tofu"]
    kept = backup["Has two cats, Miso and Tofu"]
    assert {k: v for k, v in kept["metadata"].items() if k != "memsync"} == {"topic": "life"}
    assert kept["metadata"]["memsync"]["created_at"] == CREATED
    with Agent(mnem, home / "agent") as agent:
        node = agent.store.working_memory()[node_id]
        note = json.loads(node.provenance.note)  # memsync wrote its note back
        assert (node.content, node.provenance.source) == (
            "Has two cats, Miso and Tofu",
            "new-agent",
        )
        assert note["metadata"] == {"topic": "life"} and note["created_at"] == CREATED

    code, out = memsync(home, monkeypatch, "sync", "--json")
    report = json.loads(out)
    assert code == 0 and report["actions_total"] == 0, out  # quiet: the note-restore echoes nowhere
    assert sum(report["replayed"].values()) == 0, out


def test_a_native_mnem_memory_rewritten_by_an_agent_gets_no_memsync_note(
    synced_cat: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_cat
    with Agent(mnem, home / "agent") as agent:
        mnem.agents.remember(agent.store, "plan", "on the Team plan", source="ticket")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    with Agent(mnem, home / "agent") as agent:
        mnem.agents.remember(agent.store, "plan", "on the Enterprise plan", source="ticket")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    with Agent(mnem, home / "agent") as agent:
        node = agent.store.working_memory()["plan"]
        assert (node.content, node.provenance.note) == ("on the Enterprise plan", None)
    assert "on the Enterprise plan" in mem0_items(home, "old")


def test_a_rewrite_seen_first_by_a_dry_run_still_keeps_the_metadata_and_gets_its_note_back(
    synced_cat: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dry run sees the rewrite and keeps nothing of it: the next sync (no --full) keeps
    the metadata and writes the note back into mnem, as it would have without the dry run."""
    home = synced_cat
    with Agent(mnem, home / "agent") as agent:
        node_id = node_ids_by_text(agent.store)["Has a cat called Miso"]
        mnem.agents.remember(agent.store, node_id, "Has two cats, Miso and Tofu")
    code, out = memsync(home, monkeypatch, "sync", "--dry-run", "--json")
    assert code == 0, out
    with Agent(mnem, home / "agent") as agent:
        mnem.agents.remember(agent.store, node_id, "Has three cats", source="another-agent")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    cats = mem0_items(home, "old")["Has three cats"]
    assert cats["metadata"]["topic"] == "life" and cats["created_at"] == CREATED
    with Agent(mnem, home / "agent") as agent:
        node = agent.store.working_memory()[node_id]
        assert node.content == "Has three cats"
        assert json.loads(node.provenance.note)["metadata"] == {"topic": "life"}
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["actions_total"] == 0, out


def synced_then_expired(home: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """TEXT written into the Mem0 store "old" of ``synced_cat`` to expire tomorrow, synced, and
    synced again once the date has passed (for memsync and Mem0 alike: mnem then forgets it)."""
    from tests.test_expiry import Clock

    due = (datetime.now(UTC).date() + timedelta(days=1)).isoformat()
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)],
            payloads=[mem0_payload(text, user_id="alice", expiration_date=due)],
            ids=[str(uuid.uuid4())],
        )
    code, out = memsync(home, monkeypatch, "sync")
    assert code == 0, out
    Clock(monkeypatch).advance(3)
    code, out = memsync(home, monkeypatch, "sync")
    assert code == 0, out


# --- memsync migrate: ADR-0024's one-shot path into a new store (issue 32) ------------------------


def _migrate_world(home: Path, create: bool) -> None:
    (home / "config").mkdir(parents=True)
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "new" / "agent"}"\n'
        + ("create = true\n" if create else ""),
    )
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)] * 30,
            payloads=[mem0_payload(f"memory {i}", user_id="alice") for i in range(29)]
            + [{k: v for k, v in mem0_payload("x", user_id="alice").items() if k != "data"}],
            ids=[str(uuid.uuid4()) for _ in range(30)],
        )


def test_migrate_into_a_store_that_does_not_exist_yet_makes_it_with_create(
    mnem: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _migrate_world(home, create=True)
    code, out = memsync(home, monkeypatch, "migrate", "--from", "old", "--to", "agent", "--json")
    report = json.loads(out)
    assert code == 0  # one memory had no content: skipped and reported by id (ADR-0024)
    assert (report["imported"], len(report["skipped"]), report["failed"]) == (29, 1, [])
    store = mnem.open(home / "new" / "agent")
    try:
        nodes = store.working_memory()
        assert [c.author for c in store.log()] == ["memsync"]  # one commit
    finally:
        del store
        gc.collect()
    assert sorted(n.content for n in nodes.values()) == sorted(f"memory {i}" for i in range(29))
    assert all(node_id.startswith("mem0:") for node_id in nodes)
    code, out = memsync(home, monkeypatch, "migrate", "--from", "old", "--to", "agent", "--json")
    again = json.loads(out)
    assert (again["imported"], again["already_present"]) == (0, 29)  # nothing written twice


def test_migrate_into_a_missing_store_without_create_says_how_to_make_it(
    mnem: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _migrate_world(home, create=False)
    code, out = memsync(home, monkeypatch, "migrate", "--from", "old", "--to", "agent")
    assert code == 5 and "Traceback" not in out
    (line,) = [line for line in out.splitlines() if line.strip()]
    assert "no mnem store at" in line and "create = true" in line and "mnem.init" in line
    assert not (home / "new" / "agent").exists()
