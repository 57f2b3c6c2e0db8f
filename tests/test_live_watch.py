"""Local stores are watched: another program's change starts a cycle for that provider and scope.

Real parts throughout: mnem stores written by another process through the real SDK, a
pmm-dir written by another process, a real staging store, watchfiles on the real file system,
and the daemon's own ``Live`` (``orchestration/live/triggers.py``) running hinted cycles as the daemon does.
The interval is an hour in these configs, so only the watcher can deliver a change in time.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsync.base.paths import Paths
from memsync.base.scopes import Scope
from memsync.config import Config, parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.live.triggers import Live
from memsync.orchestration.runner import run_sync
from memsync.providers.mnem.watched import MnemTemplate, content_signature, mnem_settled
from memsync.providers.pmm_dir import PmmDir
from memsync.providers.watched import Hint, signature_of
from tests.live_world import ServedServer, served_mem0_server
from tests.mnem_sdk import real_sdk

DEADLINE = 60.0  # generous: the suite runs beside other work

HEADER = {
    "pmm_version": 1,
    "exported_at": "2026-11-30T09:00:00Z",
    "source_provider": "pmm",
    "scope": {},
}


def wait_until(condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


AGENT = """
import gc, sys, time, mnem
path, node, text = sys.argv[1:4]
deadline = time.monotonic() + 60
while True:
    try:
        store = mnem.open(path)
        break
    except mnem.StoreIoError:  # memsync holds it for a moment: an agent tries again
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
store.add(node, text)
store.commit("agent wrote " + node)
del store
gc.collect()
"""


def init_store(path: Path) -> Path:
    """A new mnem store, its handle dropped at once (one handle per store, across processes)."""
    import gc

    handle = real_sdk().init(str(path))
    del handle
    gc.collect()
    return path


def agent_writes(store: Path, node: str, text: str) -> None:
    """Another program (an agent, its own process) writes one node into a mnem store."""
    subprocess.run([sys.executable, "-c", AGENT, str(store), node, text], check=True, timeout=120)


def nodes_of(store: Path) -> dict[str, Any]:
    """The store's nodes, read as another program would (waiting while memsync holds it)."""
    mnem = real_sdk()
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            handle = mnem.open(str(store))
            break
        except mnem.StoreIoError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    try:
        return {node_id: node.content for node_id, node in handle.working_memory().items()}
    finally:
        del handle
        import gc

        gc.collect()


def pmm_contents(path: Path) -> set[str]:
    if not path.exists():
        return set()
    lines = path.read_text().splitlines()[1:]
    return {json.loads(line)["content"] for line in lines if line.strip()}


def another_program_writes_pmm(path: Path, memory_id: str, content: str, scope_key: str) -> None:
    """A PMM file edited by another program: whole file written, then renamed over the old."""
    lines = path.read_text().splitlines() if path.exists() else [json.dumps(HEADER)]
    lines.append(
        json.dumps({"id": memory_id, "content": content, "metadata": {}, "scope_key": scope_key})
    )
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


def paths_in(tmp_path: Path) -> Paths:
    paths = Paths(
        config_file=tmp_path / "config" / "config.toml",
        state_dir=tmp_path / "state",
        data_dir=tmp_path / "data",
        runtime_dir=tmp_path / "run",
    )
    paths.ensure()
    return paths


class Running:
    """A ``Live`` as the daemon runs it, plus the daemon's full pass on demand."""

    def __init__(self, paths: Paths, config: Config, **kwargs: Any) -> None:
        self.paths = paths
        self.config = config
        self.stop = threading.Event()
        self.live = Live(paths, config, self.stop, **kwargs)

    def full_pass(self) -> None:
        """What the daemon's interval job runs: every provider, every scope."""
        run_sync(self.paths, self.config, SyncOptions(stop=self.stop), observer=self.live)

    def close(self) -> None:
        self.stop.set()
        self.live.close()
        self.live.join(30)


@pytest.fixture
def running() -> Iterator[Callable[..., Running]]:
    made: list[Running] = []

    def make(paths: Paths, config: Config, **kwargs: Any) -> Running:
        r = Running(paths, config, **kwargs)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


@pytest.fixture
def server() -> Iterator[ServedServer]:
    with served_mem0_server() as served:
        yield served


def fixed_config(tmp_path: Path) -> Config:
    return parse_config(
        f"""
[sync]
active = "notes"
interval = "1h"

[providers.notes]
type = "pmm-dir"
path = "{tmp_path / "notes"}"
scope_key = "alice"

[providers.agent]
type = "mnem"
path = "{tmp_path / "store"}"
scope_key = "alice"
"""
    )


def test_an_agents_write_into_mnem_reaches_the_pmm_dir_and_memsyncs_own_writes_start_nothing(
    tmp_path: Path, running: Callable[..., Running]
) -> None:
    store = init_store(tmp_path / "store")
    config = fixed_config(tmp_path)
    r = running(paths_in(tmp_path), config)
    r.live.start()
    r.full_pass()  # the daemon's first sync: notes what memsync left in each store
    assert r.live.watcher is not None
    wait_until(lambda: r.live.watcher.watching, "the watcher to start")  # type: ignore[union-attr]

    agent_writes(store, "tea", "likes green tea")
    notes = tmp_path / "notes" / "alice.pmm.jsonl"
    wait_until(lambda: "likes green tea" in pmm_contents(notes), "the node to reach the pmm-dir")
    wait_until(lambda: r.live.cycles == 1, "the cycle to finish")
    # memsync's own write into the pmm-dir (and its note written back into mnem) are seen by
    # the watcher too, and recognised as memsync's: they start no cycle.
    wait_until(lambda: r.live.own_changes >= 1, "memsync's own write to be seen and ignored")
    assert r.live.cycles == 1

    # The other way: another program edits the pmm-dir file; the node appears in mnem.
    another_program_writes_pmm(notes, "m-coffee", "drinks coffee at nine", "alice")
    wait_until(
        lambda: "drinks coffee at nine" in nodes_of(store).values(), "the memory to reach mnem"
    )
    wait_until(lambda: r.live.cycles == 2, "the second cycle to finish")
    wait_until(lambda: r.live.own_changes >= 2, "memsync's write into mnem to be ignored")
    assert r.live.cycles == 2


def test_a_triggered_cycle_delivers_when_the_watched_store_is_the_active_backend(
    tmp_path: Path, running: Callable[..., Running]
) -> None:
    """A change in the active backend must reach the others: they are listed and written too."""
    store = init_store(tmp_path / "store")
    config = parse_config(
        f"""
[sync]
active = "agent"
interval = "1h"

[providers.notes]
type = "pmm-dir"
path = "{tmp_path / "notes"}"
scope_key = "alice"

[providers.backup]
type = "pmm-dir"
path = "{tmp_path / "backup"}"
scope_key = "alice"
direction = "push"

[providers.agent]
type = "mnem"
path = "{store}"
scope_key = "alice"
"""
    )
    r = running(paths_in(tmp_path), config)
    r.live.start()
    r.full_pass()
    agent_writes(store, "tea", "likes green tea")
    for name in ("notes", "backup"):
        target = tmp_path / name / "alice.pmm.jsonl"
        wait_until(lambda t=target: "likes green tea" in pmm_contents(t), f"the node in {name}")
    wait_until(lambda: r.live.cycles == 1, "the cycle to finish")


def scoped_config(tmp_path: Path, server: str) -> Config:
    return parse_config(
        f"""
[sync]
active = "server"
interval = "1h"
probe = "1s"

[providers.server]
type = "mem0-server"
base_url = "{server}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{tmp_path / "agents" / "{user_id}" / "memory"}"
create = true

[providers.files]
type = "pmm-dir"
path = "{tmp_path / "files"}"
"""
    )


def test_every_per_scope_store_is_watched_stores_made_later_too(
    tmp_path: Path, server: ServedServer, running: Callable[..., Running]
) -> None:
    """A template's root is watched: alice's store, then bob's, made after the start."""
    server.add("alice likes tea", user_id="alice")
    config = scoped_config(tmp_path, server.url)
    r = running(paths_in(tmp_path), config)
    r.live.start()
    r.full_pass()  # creates alice's store (create = true) and her pmm file
    alice = tmp_path / "agents" / "alice" / "memory"
    assert "alice likes tea" in nodes_of(alice).values()

    agent_writes(alice, "walks", "alice walks to work")
    wait_until(lambda: "alice walks to work" in server.texts("alice"), "alice's node on the server")

    # bob appears on the server; the probe finds him, memsync makes his store, and an agent's
    # write into that new store is watched like the others.
    server.add("bob likes chess", user_id="bob")
    bob = tmp_path / "agents" / "bob" / "memory"
    wait_until(lambda: (bob / ".mnem").is_dir(), "bob's store, made by memsync")
    wait_until(lambda: "bob likes chess" in nodes_of(bob).values(), "bob's memory in his store")
    agent_writes(bob, "plays", "bob plays on sundays")
    wait_until(lambda: "bob plays on sundays" in server.texts("bob"), "bob's node on the server")
    wait_until(
        lambda: "bob plays on sundays" in pmm_contents(tmp_path / "files" / "bob.pmm.jsonl"),
        "bob's node in his pmm file",
    )


def test_a_pmm_dir_scope_file_written_by_another_program_reaches_that_scope_only(
    tmp_path: Path, server: ServedServer, running: Callable[..., Running]
) -> None:
    server.add("alice likes tea", user_id="alice")
    server.add("bob likes chess", user_id="bob")
    config = scoped_config(tmp_path, server.url)
    r = running(paths_in(tmp_path), config)
    r.live.start()
    r.full_pass()
    seen = len(server.double.faults.seen)
    another_program_writes_pmm(
        tmp_path / "files" / "alice.pmm.jsonl", "m-run", "alice runs on fridays", "alice"
    )
    wait_until(lambda: "alice runs on fridays" in server.texts("alice"), "the memory on the server")
    listed = {tuple(s.query["user_id"]) for s in server.requests(seen) if "user_id" in s.query}
    assert listed == {("alice",)}  # bob's scope was not listed (discovery lists no scope)


# --- mapping paths to stores ---------------------------------------------------------------------


def test_a_template_maps_a_changed_file_to_its_scope_and_nothing_else(tmp_path: Path) -> None:
    template = MnemTemplate("agents", tmp_path / "agents" / "{user_id}" / "memory")
    root = tmp_path / "agents"
    assert template.root == root
    hint = template.hint_for(root / "al ice" / "memory" / ".mnem" / "store.redb")
    assert hint == Hint("agents", Scope.of({"user_id": "al ice"}))
    assert template.hint_for(root / "alice" / "other" / ".mnem" / "store.redb") is None
    assert template.hint_for(root / "alice" / "memory" / "notes.txt") is None
    assert template.hint_for(root / "alice" / "x" / "memory" / ".mnem" / "store.redb") is None


def test_a_pmm_dir_maps_scope_files_and_ignores_temporary_ones(tmp_path: Path) -> None:
    files = PmmDir("files", tmp_path, fixed=None, keys=("user_id",))
    assert files.hint_for(tmp_path / "alice.pmm.jsonl") == Hint(
        "files", Scope.of({"user_id": "alice"})
    )
    assert files.hint_for(tmp_path / "alice.pmm.jsonl.tmp") is None
    assert files.hint_for(tmp_path / "sub" / "alice.pmm.jsonl") is None
    one = PmmDir("notes", tmp_path, fixed="alice", keys=())
    assert one.hint_for(tmp_path / "alice.pmm.jsonl") == Hint("notes")
    assert one.hint_for(tmp_path / "bob.pmm.jsonl") is None


def head_of(store: Path) -> str:
    mnem = real_sdk()
    handle = mnem.open(str(store))
    try:
        head: str = handle.head_commit()
        return head
    finally:
        del handle
        import gc

        gc.collect()


def test_a_mnem_stores_content_signature_ignores_a_read_and_sees_every_write(
    tmp_path: Path,
) -> None:
    store = init_store(tmp_path / "store")
    agent_writes(store, "n1", "hello")
    by_time = signature_of(store / ".mnem")
    before = content_signature(store)
    assert nodes_of(store) == {"n1": "hello"}  # another program reads, and lets go
    # The real engine rewrites its file when a handle is dropped: its time moves, its bytes not.
    assert signature_of(store / ".mnem") != by_time
    assert content_signature(store) == before
    head = head_of(store)
    assert mnem_settled(store, head) == before  # the same head, nothing written meanwhile
    agent_writes(store, "n2", "again")
    assert content_signature(store) != before
    assert mnem_settled(store, head) is None
    assert signature_of(tmp_path / "missing") is None


def test_another_program_that_only_reads_a_mnem_store_starts_no_cycle(
    tmp_path: Path, running: Callable[..., Running]
) -> None:
    """A verify, a backup or an agent that looks and leaves closes a handle on the store, which
    rewrites its file: that is not a change."""
    store = init_store(tmp_path / "store")
    agent_writes(store, "tea", "likes green tea")
    r = running(paths_in(tmp_path), fixed_config(tmp_path))
    r.live.start()
    r.full_pass()
    wait_until(lambda: r.live.watcher is not None and r.live.watcher.watching, "the watcher")
    seen = r.live.own_changes
    assert nodes_of(store) == {"tea": "likes green tea"}
    wait_until(lambda: r.live.own_changes > seen, "the read to be seen and recognised")
    assert r.live.cycles == 0, "the read started a cycle"  # (a cycle's own let-go counts too)
    # A real change afterwards is the one cycle: the read started none before it.
    notes = tmp_path / "notes" / "alice.pmm.jsonl"
    another_program_writes_pmm(notes, "m-coffee", "drinks coffee at nine", "alice")
    wait_until(lambda: "drinks coffee at nine" in nodes_of(store).values(), "the memory in mnem")
    wait_until(lambda: r.live.cycles == 1, "the cycle to finish")
    assert r.live.cycles == 1


# --- when watching fails ---------------------------------------------------------------------------


def test_a_watch_that_cannot_start_is_said_once_and_the_full_pass_still_syncs(
    tmp_path: Path, running: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    def no_watches(*paths: Any, **kwargs: Any) -> Iterator[set[tuple[Any, str]]]:
        raise OSError("OS file watch limit reached")  # what notify answers past the inotify limit
        yield set()

    store = init_store(tmp_path / "store")
    config = fixed_config(tmp_path)
    caplog.set_level(logging.INFO, logger="memsync")
    r = running(paths_in(tmp_path), config, watch=no_watches)
    r.live.start()
    assert r.live.watcher is not None
    wait_until(lambda: r.live.watcher.failed, "the watcher to give up")  # type: ignore[union-attr]
    warnings = [rec.getMessage() for rec in caplog.records if "cannot watch" in rec.getMessage()]
    assert warnings == [
        "cannot watch the local stores (OS file watch limit reached); their changes are found "
        "by the sync every 3600s"
    ]
    agent_writes(store, "tea", "likes green tea")
    r.full_pass()  # the interval's cycle
    assert "likes green tea" in pmm_contents(tmp_path / "notes" / "alice.pmm.jsonl")
    assert r.live.cycles == 0


def test_a_root_that_vanishes_is_said_once_and_watched_again_when_it_is_back(
    tmp_path: Path, running: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    store = init_store(tmp_path / "store")
    config = fixed_config(tmp_path)
    caplog.set_level(logging.INFO, logger="memsync")
    r = running(paths_in(tmp_path), config)
    r.live.start()
    r.full_pass()
    watcher = r.live.watcher
    assert watcher is not None
    wait_until(lambda: store in watcher.watching, "the store to be watched")
    shutil.rmtree(store)
    wait_until(lambda: store not in watcher.watching, "the vanished store to be noticed")
    said = [rec.getMessage() for rec in caplog.records if "not watching agent" in rec.getMessage()]
    assert len(said) == 1 and "the directory vanished" in said[0], said
    init_store(store)
    wait_until(lambda: store in watcher.watching, "the store to be watched again")
    agent_writes(store, "tea", "likes green tea")
    notes = tmp_path / "notes" / "alice.pmm.jsonl"
    wait_until(lambda: "likes green tea" in pmm_contents(notes), "the node to reach the pmm-dir")
    assert any(
        "watching agent" in rec.getMessage() and "again" in rec.getMessage()
        for rec in caplog.records
    )


def test_watching_can_be_turned_off(tmp_path: Path, running: Callable[..., Running]) -> None:
    config = fixed_config(tmp_path)
    off = config.model_copy(update={"sync": config.sync.model_copy(update={"watch": False})})
    r = running(paths_in(tmp_path), off)
    r.live.start()
    assert r.live.watcher is None and r.live.stores == []


# --- a Mem0 library's local store ---------------------------------------------------------------

APP = """
import sys
from pathlib import Path
from tests.mem0_fixtures import open_provider
root, text = Path(sys.argv[1]), sys.argv[2]
# The application: Mem0's own Memory (offline: local qdrant, hash embedder) adds a memory.
app = open_provider(root, {"user_id": "alice"}, mem0_dir=root / "app-mem0")
app.memory.add([{"role": "user", "content": text}], user_id="alice", infer=False)
app.close()
"""


def test_a_mem0_library_store_written_by_its_application_is_watched(
    tmp_path: Path, running: Callable[..., Running]
) -> None:
    from tests.mem0_fixtures import offline_mem0_config

    (tmp_path / "mem0.json").write_text(json.dumps(offline_mem0_config(tmp_path)))
    config = parse_config(
        f"""
[sync]
active = "mem0"
interval = "1h"

[providers.mem0]
type = "mem0-oss"
scope = {{ user_id = "alice" }}
embedder = "hash"
mem0_config_file = "{tmp_path / "mem0.json"}"

[providers.notes]
type = "pmm-dir"
path = "{tmp_path / "notes"}"
scope_key = "alice"
"""
    )
    r = running(paths_in(tmp_path), config)
    subprocess.run(
        [sys.executable, "-c", APP, str(tmp_path), "alice likes tea"],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=300,
    )
    r.full_pass()
    notes = tmp_path / "notes" / "alice.pmm.jsonl"
    assert pmm_contents(notes) == {"alice likes tea"}
    # Watching starts once the first memory is synced, so the one hinted cycle counted below
    # is the second write's (a first-write hint racing the full pass would make it two).
    r.live.start()
    assert tmp_path / "qdrant" in [store.root for store in r.live.stores]
    subprocess.run(
        [sys.executable, "-c", APP, str(tmp_path), "alice walks to work"],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=300,
    )
    wait_until(lambda: "alice walks to work" in pmm_contents(notes), "the app's memory")
    wait_until(lambda: r.live.cycles == 1, "the cycle to finish")
    wait_until(lambda: r.live.own_changes >= 1, "memsync's own write to be seen and ignored")
    assert r.live.cycles == 1


def test_an_agent_that_writes_the_moment_memsync_releases_the_store_is_not_mistaken_for_memsync(
    tmp_path: Path, running: Callable[..., Running]
) -> None:
    """An agent waiting for the store (one handle per store) writes as soon as memsync lets go,
    before memsync's cycle has finished: memsync notes the store before it lets go, so that
    write is another program's and starts a cycle."""
    store = init_store(tmp_path / "store")
    config = fixed_config(tmp_path)
    raced: list[str] = []

    class Racing(Live):
        def scope_done(self, scope: Scope | None, report: Any) -> None:
            if not raced:  # the store is released; the scope's cycle is not over yet
                raced.append("written")
                agent_writes(store, "race", "written in the gap")
            super().scope_done(scope, report)

    r = running(paths_in(tmp_path), config)
    r.live = Racing(r.paths, config, r.stop)
    r.live.start()
    r.full_pass()
    notes = tmp_path / "notes" / "alice.pmm.jsonl"
    wait_until(lambda: "written in the gap" in pmm_contents(notes), "the agent's node")


def test_one_mnem_store_holding_every_scope_is_watched_and_memsyncs_own_writes_start_nothing(
    tmp_path: Path, running: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    """A LangGraph layout's one store, every user a namespace of it: an agent's write in bob's
    namespace reaches bob's file alone; the store the run held for every scope and let go at its
    end, and memsync's own writes, start no cycle."""
    from tests.mem0_fixtures import offline_mem0_config, open_provider

    (tmp_path / "mem0.json").write_text(json.dumps(offline_mem0_config(tmp_path)))
    app = open_provider(tmp_path, {"user_id": "alice"}, mem0_dir=tmp_path / "app-mem0")
    app.memory.add("alice likes tea", user_id="alice", infer=False)
    app.memory.add("bob likes coffee", user_id="bob", infer=False)
    app.close()
    store = init_store(tmp_path / "store")
    notes = tmp_path / "notes"
    config = parse_config(
        f"""
[sync]
active = "mem0"
interval = "1h"

[providers.mem0]
type = "mem0-oss"
scope = {{ user_id = "*" }}
embedder = "hash"
mem0_config_file = "{tmp_path / "mem0.json"}"

[providers.agents]
type = "mnem"
path = "{store}"
layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"] }}

[providers.notes]
type = "pmm-dir"
path = "{notes}"
direction = "push"
"""
    )
    r = running(paths_in(tmp_path), config)
    r.full_pass()
    caplog.set_level(logging.DEBUG, logger="memsync.live")
    placed = {node_id.rsplit(":", 1)[0]: v["content"] for node_id, v in nodes_of(store).items()}
    assert placed == {"memories:alice": "alice likes tea", "memories:bob": "bob likes coffee"}
    r.live.start()
    assert r.live.watcher is not None
    wait_until(lambda: r.live.watcher.watching, "the watcher to start")  # type: ignore[union-attr]
    agent_writes(store, "memories:bob:k1", "bob plays chess")
    wait_until(
        lambda: "bob plays chess" in pmm_contents(notes / "bob.pmm.jsonl"),
        "the agent's memory to reach bob's file",
    )
    wait_until(lambda: r.live.cycles == 1, "the cycle to finish")
    assert "bob plays chess" not in pmm_contents(notes / "alice.pmm.jsonl")
    # The run held the store for every scope and let go when it ended (mnem rewrites its file
    # then): the watcher takes the store, as memsync left it, for memsync's, not a change.
    agents = Hint("agents")
    wait_until(
        lambda: (
            (left := r.live._left.get(agents)) is not None
            and left.files == content_signature(store)
        ),
        "the store memsync let go to be recognised as it left it",
    )

    def judged_after_the_cycle() -> bool:
        """The live loop looked at the let-go's change after the cycle's line (its own thread
        logs both, in order): memsync's own, said at debug level."""
        said = [rec.getMessage() for rec in caplog.records if rec.name == "memsync.live"]
        ended = next((i for i, m in enumerate(said) if m.startswith("sync #")), len(said))
        return "agents: changed by memsync itself; no cycle" in said[ended:]

    # The cycle's let-go is looked at before the cycles are counted, not raced by the count.
    wait_until(
        lambda: judged_after_the_cycle() or r.live.cycles > 1, "the let-go's change to be judged"
    )
    assert r.live.cycles == 1, "the store memsync let go started a cycle"
