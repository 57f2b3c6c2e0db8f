"""`conflict = "newest"` knows when mnem changed: a node's version is dated by the commit that
made it, and the later edit wins whichever side it was made on.

Real parts: a Mem0 store run offline with mem0's library (the application edits it), the real
mnem SDK (an agent edits the store from a process of its own, as mnem's clients do), a PMM
backup, and memsync's CLI. The daemon's served writes are in ``test_serve_daemon.py``.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memsync.base.paths import resolve_paths
from memsync.staging import StagingStore
from tests.conftest import subprocess_env, write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, ids_by_text, mem0_table
from tests.test_e2e_mnem import (
    Agent,
    backup_items,
    mem0_items,
    memsync,
    write_cutover_config,
)

# An agent in a process of its own: opens the store (waiting while memsync holds it), rewrites
# the node holding OLD as NEW with mnem's own helper (OLD "+ID": adds node ID), optionally at a
# given time, and says the commit it made and that commit's time as mnem's log gives it.
AGENT = """
import gc, json, sys, time, mnem
path, old, new, when = sys.argv[1:5]
deadline = time.monotonic() + 60
while True:
    try:
        store = mnem.open(path)
        break
    except mnem.StoreIoError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
if old.startswith("+"):
    node = old[1:]
else:
    node = next(n for n, v in store.working_memory().items() if v.content == old)
commit = mnem.agents.remember(
    store, node, new, source="new-agent", time_ms=int(when) if when else None
)
head = store.log(first_parent=True, limit=1)[0]
print(json.dumps({"commit": commit, "head": head.id, "time": head.time}))
del store
gc.collect()
"""


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


def agent_edits(store: Path, old: str, new: str, time_ms: int | None = None) -> dict[str, Any]:
    """Another program (an agent, its own process) rewrites one memory in the mnem store."""
    done = subprocess.run(
        [sys.executable, "-c", AGENT, str(store), old, new, str(time_ms or "")],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    made: dict[str, Any] = json.loads(done.stdout)
    assert made["commit"] == made["head"]
    return made


def iso(time_ms: int) -> str:
    return datetime.fromtimestamp(time_ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def staged(provider: str) -> dict[str, dict[str, Any]]:
    """The mirror's records of PROVIDER by text (in MEMSYNC_HOME's staging store)."""
    with StagingStore.open(resolve_paths().database, create=False) as store:
        rows = store.conn.execute(
            "SELECT content, created_at, updated_at, version FROM records WHERE provider = ?",
            (provider,),
        ).fetchall()
    return {row["content"]: dict(row) for row in rows}


@pytest.fixture
def synced(home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Mem0 (the application's) ↔ mnem (the agents', active) → a PMM backup, one memory written
    in each store, and synced."""
    write_cutover_config(home)
    store = mnem.init(home / "agent")
    mnem.agents.remember(store, "languages", "Speaks Portuguese", source="new-agent")
    del store
    gc.collect()
    with App(home, "old") as memory:
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)],
            payloads=[mem0_payload("Prefers tea over coffee", user_id="alice")],
            ids=[str(uuid.uuid4())],
        )
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["replayed"]["create"] == 4, out
    return home


def conflict_times(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    code, out = memsync(home, monkeypatch, "conflicts", "--all", "--json")
    assert code == 0, out
    (conflict,) = json.loads(out)
    return dict(conflict["versions"])


def test_a_mnem_edit_made_after_a_mem0_edit_wins_and_carries_its_commits_time(
    synced: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced
    with App(home, "old") as memory:
        memory.update(ids_by_text(memory)["Prefers tea over coffee"], "Prefers green tea")
    made = agent_edits(home / "agent", "Prefers tea over coffee", "Prefers matcha")

    code, out = memsync(home, monkeypatch, "sync", "--json")
    report = json.loads(out)
    assert code == 0 and [c["state"] for c in report["conflicts"]] == ["resolved"], out
    assert set(mem0_items(home, "old")) == {"Prefers matcha", "Speaks Portuguese"}
    versions = conflict_times(home, monkeypatch)
    assert versions["agent"]["updated_at"] == iso(made["time"])
    assert versions["agent"]["content"] == "Prefers matcha"
    assert versions["old"]["updated_at"] < versions["agent"]["updated_at"]
    # memsync wrote its note back into the node (the agent's rewrite dropped it), in a commit
    # of its own: the memory is still as old as the agent's edit, in staging and in the backup.
    with Agent(mnem, home / "agent") as agent:
        (head,) = agent.store.log(first_parent=True, limit=1)
    assert head.author == "memsync" and head.time > made["time"]
    assert staged("agent")["Prefers matcha"]["updated_at"] == iso(made["time"])
    backup = backup_items(home / "pmm")
    assert set(backup) == {"Prefers matcha", "Speaks Portuguese"}
    assert backup["Prefers matcha"]["metadata"]["memsync"]["updated_at"] == iso(made["time"])
    code, out = memsync(home, monkeypatch, "backup")  # a snapshot of what mnem holds, too
    assert code == 0, out
    (snapshot,) = (resolve_paths().backups_dir / "agent").glob("*.pmm.jsonl*")
    kept = backup_items(snapshot.parent)["Prefers matcha"]["metadata"]["memsync"]
    assert kept["updated_at"] == iso(made["time"])


def test_a_mem0_edit_made_after_a_mnem_edit_wins(
    synced: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced
    made = agent_edits(home / "agent", "Prefers tea over coffee", "Prefers matcha")
    with App(home, "old") as memory:
        memory.update(ids_by_text(memory)["Prefers tea over coffee"], "Prefers green tea")

    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and [c["state"] for c in json.loads(out)["conflicts"]] == ["resolved"], out
    assert set(mem0_items(home, "old")) == {"Prefers green tea", "Speaks Portuguese"}
    versions = conflict_times(home, monkeypatch)
    assert versions["agent"]["updated_at"] == iso(made["time"])
    assert versions["old"]["updated_at"] > versions["agent"]["updated_at"]
    assert set(backup_items(home / "pmm")) == {"Prefers green tea", "Speaks Portuguese"}


def test_a_backdated_commit_is_dated_by_its_own_time_not_when_it_was_made(
    synced: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history import writes commits dated in the past: such an edit is older than Mem0's."""
    home = synced
    with App(home, "old") as memory:
        memory.update(ids_by_text(memory)["Prefers tea over coffee"], "Prefers green tea")
    back_then = int(datetime(2021, 5, 4, 12, 0, tzinfo=UTC).timestamp() * 1000)
    made = agent_edits(home / "agent", "Prefers tea over coffee", "Prefers matcha", back_then)
    assert made["time"] == back_then

    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    assert set(mem0_items(home, "old")) == {"Prefers green tea", "Speaks Portuguese"}
    assert conflict_times(home, monkeypatch)["agent"]["updated_at"] == "2021-05-04T12:00:00.000Z"


# --- what dating costs: each commit read from mnem once at most --------------------------------


class Reads:
    """Counts the SDK's ``changed_by`` calls (each scans the whole store in mnem 0.0.7)."""

    def __init__(self, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = mnem.Store.changed_by

        def counted(store: Any, commit: str) -> dict[str, str]:
            self.count += 1
            return dict(real(store, commit))

        monkeypatch.setattr(mnem.Store, "changed_by", counted)


def test_memsyncs_own_commits_and_a_lone_agent_commit_are_dated_without_reading_them(
    synced: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each `memsync sync` is a process of its own (its providers built anew): what it knows of
    memsync's earlier commits comes from the staging store."""
    home = synced
    reads = Reads(mnem, monkeypatch)
    made = agent_edits(home / "agent", "Prefers tea over coffee", "Prefers matcha")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["providers"]["agent"]["changed"] == 1, out
    assert reads.count == 0  # memsync's batch (kept in staging) and one agent commit: deduced
    assert staged("agent")["Prefers matcha"]["updated_at"] == iso(made["time"])

    with App(home, "old") as memory:
        memory.add("Walks to work", user_id="alice", infer=False)
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    first = agent_edits(home / "agent", "Walks to work", "Cycles to work")
    second = agent_edits(home / "agent", "Prefers matcha", "Prefers hojicha")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["providers"]["agent"]["changed"] == 2, out
    assert reads.count == 1  # two agents' commits: the newer read, the older deduced
    agent = staged("agent")
    assert agent["Cycles to work"]["updated_at"] == iso(first["time"])
    assert agent["Prefers hojicha"]["updated_at"] == iso(second["time"])
    assert set(mem0_items(home, "old")) == {
        "Cycles to work",
        "Prefers hojicha",
        "Speaks Portuguese",
    }


def listed_and_dated(
    root: Path, book: Any, cursor: str
) -> tuple[dict[str, str | None], dict[str, str]]:
    """One provider, opened anew as a run opens it: an incremental listing from CURSOR, and the
    times of the versions it lists (memory id -> version, memory id -> updated_at)."""
    from memsync.providers.mnem.provider import MnemProvider

    provider = MnemProvider("agent", root)
    provider.keep_commits_in(book)
    provider.open()
    try:
        listing = provider.listing(cursor)
        versions = {r.id: r.version for page in listing.pages() for r in page.records}
        return versions, provider.version_dates([], versions).updated_at
    finally:
        provider.close()
        gc.collect()


def test_a_commit_read_once_is_kept_in_staging_and_never_read_again(
    tmp_path: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "agent"
    store = mnem.init(root)
    mnem.agents.remember_many(store, [{"id": "a", "content": "A"}, {"id": "b", "content": "B"}])
    cursor = store.head_commit()
    first = mnem.agents.remember(store, "a", "A, edited")
    second = mnem.agents.remember(store, "b", "B, edited")
    times = {c.id: c.time for c in store.log(first_parent=True, limit=2)}
    del store
    gc.collect()
    expected = {"a": iso(times[first]), "b": iso(times[second])}

    reads = Reads(mnem, monkeypatch)
    with StagingStore.open(tmp_path / "staging.db") as staging:
        versions, dated = listed_and_dated(root, staging.store_commits, cursor)
        assert set(versions) == {"a", "b"} and dated == expected
        assert reads.count == 1  # the newer commit; the older one is the only one left
        versions, dated = listed_and_dated(root, staging.store_commits, cursor)
        assert dated == expected
        assert reads.count == 1  # the second run found it in the staging store
        assert staging.store_commits.count(f"mnem:{root.resolve()}") == 1


def test_a_first_listing_past_its_budget_leaves_versions_undated_and_says_how_many(
    home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + f'[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n'
        + f'[providers.backup]\ntype = "pmm-dir"\npath = "{home / "pmm"}"\n'
        + 'direction = "push"\nscope_key = "alice"\n',
    )
    store = mnem.init(home / "agent")
    for n in range(3):
        mnem.agents.remember(store, f"fact-{n}", f"fact number {n}")
    del store
    gc.collect()
    monkeypatch.setattr("memsync.providers.mnem.dates.WALK_BUDGET_S", 0.0)
    reads = Reads(mnem, monkeypatch)

    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["providers"]["agent"]["undated"] == 3, out
    assert reads.count == 0
    assert {r["updated_at"] for r in staged("agent").values()} == {None}

    made = agent_edits(home / "agent", "fact number 1", "fact number one")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and "undated" not in json.loads(out)["providers"]["agent"], out
    assert reads.count == 0  # the change since the cursor is dated with no read at all
    assert staged("agent")["fact number one"]["updated_at"] == iso(made["time"])

    added = agent_edits(home / "agent", "+fact-3", "fact number 3")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and "undated" not in json.loads(out)["providers"]["agent"], out
    assert reads.count == 0
    fact = staged("agent")["fact number 3"]
    assert fact["updated_at"] == fact["created_at"] == iso(added["time"])

    agent_edits(home / "agent", "fact number one", "fact number 1, again")
    agent_edits(home / "agent", "fact number 3", "fact number three")
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["providers"]["agent"]["undated"] == 2, out
    assert reads.count == 0  # two commits: the newer must be read first, past this budget
    agent = staged("agent")
    assert agent["fact number 1, again"]["updated_at"] is None  # not guessed
    assert agent["fact number three"]["updated_at"] is None


def test_writes_the_daemon_serves_are_dated_by_their_commits_without_reading_them_back(
    home: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's store server (in this process, on its socket) and memsync's client as an
    agent uses it; the daemon's cycles borrow the store from the same held stores."""
    from memsync.config import load_config
    from memsync.engine.report import SyncOptions
    from memsync.orchestration.runner import run_sync
    from memsync.orchestration.serve.client import StoreClient
    from memsync.orchestration.serve.server import StoreServer
    from memsync.providers.held import HeldStores

    config_file = write_config(
        home,
        '[sync]\nactive = "agent"\nconflict = "newest"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{home / "agent"}"\n',
    )
    store = mnem.init(home / "agent")
    mnem.agents.remember(store, "languages", "Speaks Portuguese")
    del store
    gc.collect()
    with App(home, "old") as memory:
        memory.add("Prefers tea over coffee", user_id="alice", infer=False)
    config, paths = load_config(config_file), resolve_paths()
    server = StoreServer(paths, config, held=HeldStores(), on_write=lambda hint: None)
    server.start()
    agent = StoreClient(home / "agent", client="agent", paths=paths)
    try:
        assert agent.via_daemon
        assert run_sync(paths, config, SyncOptions(), held=server.held).exit_code == 0
        with App(home, "old") as memory:
            memory.update(ids_by_text(memory)["Prefers tea over coffee"], "Prefers green tea")
        node = next(n for n, v in agent.call("recall").items() if v["content"].startswith("Pref"))
        matcha = agent.call("remember", id=node, content="Prefers matcha")["commit"]
        commute = agent.call("remember", id="commute", content="Cycles to work")["commit"]
        times = {c["id"]: c["time"] for c in agent.call("history", limit=2)}

        reads = Reads(mnem, monkeypatch)
        report = run_sync(paths, config, SyncOptions(), held=server.held)
        assert report.exit_code == 0 and [c.state for c in report.conflicts] == ["resolved"]
        assert reads.count == 0  # both served commits were noted as the daemon made them
    finally:
        agent.close()
        server.close(grace=5.0)
        server.held.let_go_of_idle()
        gc.collect()
    assert set(mem0_items(home, "old")) == {"Prefers matcha", "Cycles to work", "Speaks Portuguese"}
    commuting = staged("agent")["Cycles to work"]
    assert commuting["updated_at"] == commuting["created_at"] == iso(times[commute])
    assert conflict_times(home, monkeypatch)["agent"]["updated_at"] == iso(times[matcha])


def test_nodes_added_since_the_cursor_are_dated_without_reading_below_it(
    tmp_path: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every commit after the cursor is noted (as the daemon notes those it serves): a node
    the listing's diff says was added since is dated by the oldest of them that wrote it, and
    nothing older is read, however long the history below the cursor."""
    from memsync.providers.mnem.commits import CommitEntry, staged_entry
    from memsync.providers.mnem.provider import MnemProvider

    root = tmp_path / "agent"
    store = mnem.init(root)
    for n in range(3):  # history below the cursor, never noted
        mnem.agents.remember(store, f"old-{n}", f"old fact {n}")
    cursor = store.head_commit()
    noted = []
    for content in ("Cycles to work", "Cycles to work, daily"):  # an add, then an edit
        store.add("commute", content)
        entry = staged_entry(store, "", 0)
        commit = store.commit(f"remember commute: {content}", author="agent")
        noted.append((commit, entry))
    times = {c.id: c.time for c in store.log(first_parent=True, limit=2)}
    del store
    gc.collect()

    reads = Reads(mnem, monkeypatch)
    provider = MnemProvider("agent", root)
    provider.open()
    try:
        for commit, entry in noted:
            provider.commits.note(
                CommitEntry(commit, times[commit], entry.made, entry.removed), save=False
            )
        listing = provider.listing(cursor)
        versions = {r.id: r.version for page in listing.pages() for r in page.records}
        dates = provider.version_dates(["commute"], versions)
    finally:
        provider.close()
        gc.collect()
    (added, edited) = (times[commit] for commit, _ in noted)
    assert dates.created_at == {"commute": iso(added)}
    assert dates.updated_at == {"commute": iso(edited)}
    assert reads.count == 0
