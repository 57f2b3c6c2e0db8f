"""An organisation, live: memsync's own stores and writes start nothing, at any number of stores.

The daemon's ``Live`` (``orchestration/live/triggers.py``) runs as the daemon runs it, over a Mem0 server
double served on a loopback socket (a real mem0 ``Memory``, its memories indexed per user as
pgvector's are) and real mnem stores, one per user from a path template, made by the first
sync. Issue 33 saw a first sync that created 497 stores followed by cycles that never
settled: 822 requests a minute with nothing changing.

"Nothing happened" is shown by something that did: after the first sync an agent writes into
one store, and once that write has reached the server (its cycle ran after every event the
first sync caused), every cycle since the first sync is checked to have been about that store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsync.base.paths import Paths
from memsync.config import Config, parse_config
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.live_world import ServedServer, served_mem0_server
from tests.test_live_watch import Running, agent_writes, paths_in, running, wait_until

__all__ = ["running"]  # the fixture, shared with test_live_watch

USERS = 1000
SLOW = 600.0  # the first sync of a thousand stores on a busy machine


@pytest.fixture
def org() -> Iterator[ServedServer]:
    with served_mem0_server(indexed=True) as served:
        for number in range(USERS):
            served.double.insert_many([f"user {number} likes tea"], user_id=user(number))
        yield served


def user(number: int) -> str:
    return f"u{number:04d}"


def org_config(tmp_path: Path, server: str, *, probe: bool) -> Config:
    return parse_config(
        f"""
[sync]
active = "server"
interval = "1d"
{'probe = "1s"' if probe else ""}

[providers.server]
type = "mem0-server"
base_url = "{server}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{tmp_path / "agents" / "{user_id}" / "memory"}"
create = true
"""
    )


@pytest.mark.parametrize("probe", [False, True], ids=["watched", "watched-and-probed"])
def test_a_first_sync_that_creates_a_thousand_stores_starts_no_cycle_after_it(
    tmp_path: Path, org: ServedServer, running: Callable[..., Running], probe: bool
) -> None:
    paths = paths_in(tmp_path)
    r = running(paths, org_config(tmp_path, org.url, probe=probe))
    r.live.start()
    r.full_pass()  # the daemon's first sync: a thousand stores made, filled and let go
    stores = tmp_path / "agents"
    assert len(list(stores.iterdir())) == USERS
    [first] = runs_after(paths, 0)
    assert len(first["scopes"]) == USERS

    # Something that does happen, after everything the first sync set off.
    sentinel = user(USERS // 2)
    agent_writes(stores / sentinel / "memory", "walks", "walks to work")
    wait_until(lambda: "walks to work" in org.texts(sentinel), "the agent's node on the server")
    wait_until(lambda: finished(paths) and r.live.cycles >= 1, "the agent's cycle to finish")
    if probe:  # the next probe sees memsync's own write on the server
        wait_until(
            lambda: r.live.own_answers >= 1 or r.live.cycles >= 2, "the probe after the write"
        )
        wait_until(lambda: finished(paths), "every cycle to finish")

    runs = runs_after(paths, 1)
    assert runs, "the agent's write started no cycle"
    assert all(set(run["scopes"]) == {f"user_id={sentinel}"} for run in runs), [
        sorted(run["scopes"])[:5] for run in runs
    ]
    # The probe's answer for the scope memsync just wrote is memsync's own: not listed again.
    assert len(runs) == 1, [run["providers"] for run in runs]
    assert r.live.own_changes > 0  # the new stores' events were seen, and judged memsync's own


def finished(paths: Paths) -> bool:
    conn = sqlite3.connect(paths.database)
    try:
        return (
            conn.execute("SELECT COUNT(*) FROM runs WHERE finished_at IS NULL").fetchone()[0] == 0
        )
    finally:
        conn.close()


def runs_after(paths: Paths, run_id: int) -> list[dict[str, Any]]:
    """The summaries of the runs after RUN_ID, from staging."""
    conn = sqlite3.connect(paths.database)
    try:
        rows = conn.execute("SELECT summary FROM runs WHERE id > ? ORDER BY id", (run_id,))
        return [json.loads(summary or "{}") for (summary,) in rows]
    finally:
        conn.close()


def test_a_write_into_a_server_probed_through_its_database_is_listed_once_more_alone(
    tmp_path: Path,
    mem0_database: str,
    running: Callable[..., Running],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The database probe's digest cannot be told from what memsync holds, so memsync's own
    write shows in the next probe: that scope is listed on the server once more, finds only
    what memsync wrote, and opens nothing else (no mnem store, no second write)."""
    from tests.live_world import serve

    double = Mem0ServerDouble(database_url=mem0_database)
    for name in ("alice", "bob", "carol"):
        double.insert_many([f"{name} likes tea"], user_id=name)
    monkeypatch.setenv("MEM0_DATABASE_URL", mem0_database)
    with serve(double.app) as url:
        server = ServedServer(double, url)
        config = parse_config(_toml(tmp_path, url))
        paths = paths_in(tmp_path)
        r = running(paths, config)
        r.live.start()
        r.full_pass()
        agent_writes(tmp_path / "agents" / "bob" / "memory", "walks", "walks to work")
        wait_until(lambda: "walks to work" in server.texts("bob"), "bob's node on the server")
        wait_until(lambda: r.live.cycles >= 2 and finished(paths), "the probe's second look")
        server.close()
    agent, echo = runs_after(paths, 1)[:2]
    assert agent["providers"]["server[user_id=bob]"]["written"] == 1
    assert set(echo["scopes"]) == {"user_id=bob"}
    assert echo["providers"]["server[user_id=bob]"]["state"] == "ok"
    assert echo["providers"]["agents[user_id=bob]"]["state"] == "skipped"
    assert sum(p["written"] for p in echo["providers"].values()) == 0
    assert server.texts("bob") == {"bob likes tea", "walks to work"}


def _toml(tmp_path: Path, url: str) -> str:
    return f"""
[sync]
active = "server"
interval = "1d"
probe = "1s"

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}
database_url_env = "MEM0_DATABASE_URL"

[providers.agents]
type = "mnem"
path = "{tmp_path / "agents" / "{user_id}" / "memory"}"
create = true
"""


BURST = 300

MANY_AGENTS = """
import gc, sys, mnem
for path in sys.argv[1:]:
    store = mnem.open(path)
    store.add("burst", "a note written in the burst")
    store.commit("agent wrote burst")
    del store
    gc.collect()
"""


def test_a_burst_of_hundreds_of_scopes_is_one_cycle_and_never_a_loop(
    tmp_path: Path, running: Callable[..., Running]
) -> None:
    """Agents write into 300 users' stores while a cycle runs (here: while the cycle lock is
    held, as by a `memsync sync`): the hints wait, and are taken up together in one cycle,
    whose own writes (300 on the server, probed) start nothing after it."""
    import subprocess
    import sys

    from memsync.base.lock import cycle_lock

    with served_mem0_server(indexed=True) as server:
        for number in range(BURST):
            server.double.insert_many([f"user {number} likes tea"], user_id=user(number))
        paths = paths_in(tmp_path)
        r = running(paths, org_config(tmp_path, server.url, probe=True))
        r.live.start()
        r.full_pass()
        stores = [str(tmp_path / "agents" / user(n) / "memory") for n in range(BURST)]
        lock = cycle_lock(paths)
        lock.acquire(timeout=60)
        try:
            subprocess.run([sys.executable, "-c", MANY_AGENTS, *stores], check=True, timeout=600)
            wait_until(lambda: len(r.live._pending) >= BURST, "every store's hint, waiting")
        finally:
            lock.release()
        wait_until(
            lambda: all("a note written in the burst" in server.texts(user(n)) for n in (0, 299)),
            "the burst on the server",
            timeout=SLOW,
        )
        wait_until(lambda: r.live.cycles >= 1 and finished(paths), "the burst's cycle")
        # Something after it, so that "nothing more" is seen, not assumed.
        agent_writes(tmp_path / "agents" / user(7) / "memory", "later", "a later note")
        wait_until(lambda: "a later note" in server.texts(user(7)), "the later note")
        wait_until(lambda: r.live.own_answers >= BURST and finished(paths), "the probes after")
        runs = runs_after(paths, 1)
        held = {n: server.texts(user(n)) for n in range(BURST)}
    burst, *after = runs
    assert len(burst["scopes"]) == BURST
    assert all("a note written in the burst" in texts for texts in held.values())
    assert [set(run["scopes"]) for run in after] == [{f"user_id={user(7)}"}]
