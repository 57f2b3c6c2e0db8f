"""An organisation of a thousand users, live: the daemon as a process, at the size of issue 33.

The world: a Mem0 server double in a process of its own (``tests/doubles/served.py``
``mem0-org``: upstream's routes over a real mem0 ``Memory``, its memories indexed per user as
pgvector's are), 20 ms injected into every request, seeded with USERS users of PER_USER
memories; a mnem store per user from a path template (``create = true``, the real SDK built
from ../shared/mnem-sdk); a pmm-dir backup beside them. ``memsync daemon`` runs as its own
process with the probe at 1 s and no ``interval``, so the full pass takes the default the docs
give beside a probe. Agents (one process of their own) write into users' mnem stores, and
another Mem0 client writes into the server, while the daemon runs.

Rows, each with its target:

- users discovered: every user the server holds;
- first sync: its time against the floor, the requests it made times 20 ms (scopes are listed
  one after another, so the floor's concurrency is one);
- RSS after the first sync, and after 100 hinted cycles against it;
- quiet requests a minute: every request of a quiet window, plus the full pass's share;
- cycles while quiet: none (memsync's own writes and stores start nothing);
- propagation p95 each way while agents write steadily across the users;
- verify (every scope), ``status --json``, the page's ``/api/status`` and ``/metrics``: each
  one's time and size at this many scopes.

The probe is pluggable (``BENCH_PROBE``): ``database`` (the default, issue 33 §1's complete
probe) reads the server's own table: the double keeps its memories in a real PostgreSQL
(``tests/postgres_server.py``, started here) and the daemon is given a connection to it
(``database_url_env``); ``entities`` uses the server's ``GET /entities``, complete only while
the server holds fewer than 10,000 memories (upstream's scan), so PER_USER is cut to fit.
BENCH_QUICK=1: 200 users, shorter windows. BENCH_LOG=FILE keeps the daemon's log, debug
lines included.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from tests.doubles.served import HARNESS, KEY, Served

from bench._common import QUICK, report
from bench._daemon import Daemon, p95, wait_until

LATENCY = 0.02
PROBE_MODE = os.environ.get("BENCH_PROBE", "database")
USERS = int(os.environ.get("BENCH_USERS", "200" if QUICK else "1000"))
PER_USER = 20 if PROBE_MODE == "database" else min(20, 9_999 // USERS)
QUIET_WINDOW = 20.0 if QUICK else 60.0
HINTED = 30 if QUICK else 100  # hinted cycles before the second RSS reading
RATE = 2.0  # agents' writes a second, across all users, while propagation is measured
RSS_TARGET_MB = 300.0

CONFIG = """
[sync]
active = "server"
probe = "1s"

[backup]
interval = "1d"

[ui]
listen = "127.0.0.1:{port}"

[providers.server]
type = "mem0-server"
base_url = "{url}"
api_key_env = "BENCH_SERVER_KEY"
scope = {{ user_id = "*" }}
{database}

[providers.agents]
type = "mnem"
path = "{home}/agents/{{user_id}}/memory"
create = true

[providers.backup]
type = "pmm-dir"
path = "{home}/backup"
direction = "push"
"""

AGENT = """
import gc, sys, time, mnem
for line in sys.stdin:
    path, node, text = line.rstrip("\\n").split("\\t")
    while True:
        try:
            store = mnem.open(path)
            break
        except mnem.StoreIoError:
            time.sleep(0.01)
    store.add(node, text)
    store.commit("agent wrote " + node)
    del store
    gc.collect()
    print(time.time(), flush=True)
"""


class Agents:
    """One process of agents writing nodes into users' mnem stores, one write at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AGENT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def write(self, store: Path, node: str, text: str) -> float:
        """Commit NODE into STORE; the wall time (time.time) of the commit."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{store}\t{node}\t{text}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def runs(home: Path) -> int:
    """Cycles the daemon has run (its staging database's runs), read as any reader would."""
    database = home / "state" / "staging.db"
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    finally:
        conn.close()


def user(number: int) -> str:
    return f"user{number:04d}"


def main() -> None:
    try:
        import mnem  # noqa: F401
    except ImportError as exc:
        print(f"# org rows skipped: the real mnem SDK is not importable here ({exc})")
        return
    with tempfile.TemporaryDirectory(prefix="bench-org-") as tmp:
        home = Path(tmp)
        if PROBE_MODE != "database":
            with Served("mem0-org", 0.0) as server:
                run(home, server, None)
            return
        from tests.postgres_server import memories_table, running_postgres

        with running_postgres() as postgres:
            url = postgres.url(postgres.create_database())
            memories_table(url)
            with Served("mem0-org", 0.0, database_url=url) as server:
                run(home, server, url)


def run(home: Path, server: Served, database_url: str | None) -> None:
    seeded = server.seed(USERS, PER_USER)
    print(f"# {USERS} users x {PER_USER} memories ({seeded:,}), probe: {PROBE_MODE}", flush=True)
    server.set_latency(LATENCY)
    port = free_port()
    database = 'database_url_env = "BENCH_DATABASE_URL"' if database_url else ""
    config = CONFIG.format(port=port, url=server.base_url, home=home, database=database)
    env = {"BENCH_SERVER_KEY": KEY, "BENCH_DATABASE_URL": database_url or ""}
    before = server.stats()["requests"]
    log = os.environ.get("BENCH_LOG")  # a file for the daemon's log, with its debug lines
    daemon = Daemon(home, config, env, debug=bool(log))
    try:
        first = daemon.wait_for(r"sync #1 ", timeout=3600)
        first_requests = server.stats()["requests"] - before
        first_seconds = float(first.split(" in ", 1)[1].split("s", 1)[0])
        rss_first = daemon.rss_mb()
        print(f"# {first}", flush=True)
        discovered = json.loads(daemon.memsync("status", "--json").stdout)
        scopes = len(discovered["providers"]["server"].get("scopes") or {})
        report("org: users discovered", float(scopes or 0), "", f"all {USERS}", scopes == USERS)
        floor = first_requests * LATENCY
        report(
            "org: first sync time / floor",
            first_seconds / floor,
            "x",
            f"floor {floor:.1f}s = {first_requests} requests x {LATENCY * 1000:.0f} ms; "
            f"took {first_seconds:.1f}s; <= 1.5x",
            first_seconds / floor <= 1.5,
        )
        report(
            f"org: RSS after the first sync ({USERS} scopes, {seeded:,} memories)",
            rss_first,
            " MB",
            f"<= {RSS_TARGET_MB:.0f} MB",
            rss_first <= RSS_TARGET_MB,
        )
        quiet(home, daemon, server, first_requests)
        live(home, daemon, server, rss_first)
    finally:
        daemon.stop()
        if log:
            Path(log).write_text("\n".join(daemon.lines) + "\n")


def quiet(home: Path, daemon: Daemon, server: Served, full_pass: int) -> None:
    """Nothing changes: no cycle starts, and the probes are all the server sees, with the full
    pass's share (FULL_PASS requests, as the first sync's reads, every interval)."""
    said = daemon.wait_for(r"full pass every [\d.]+s")
    interval = float(said.split("full pass every ", 1)[1].split("s", 1)[0])
    time.sleep(3.0)  # let the first sync's own stores' events arrive
    cycles = runs(home)
    start = server.stats()["requests"]
    started = time.monotonic()
    time.sleep(QUIET_WINDOW)  # the window being measured, not a wait for a condition
    asked = server.stats()["requests"] - start
    elapsed = time.monotonic() - started
    more = runs(home) - cycles
    per_minute = asked / elapsed * 60 + full_pass / interval * 60
    report(
        f"org: cycles while nothing changes ({QUIET_WINDOW:.0f} s after the first sync)",
        float(more),
        "",
        "0",
        more == 0,
    )
    report(
        "org: quiet requests a minute (probe 1s, full pass at its default)",
        per_minute,
        "",
        f"<= 15: {asked} in {elapsed:.0f}s, plus a full pass of {full_pass} every {interval:g}s",
        per_minute <= 15,
    )


def live(home: Path, daemon: Daemon, server: Served, rss_first: float) -> None:
    """Agents write steadily (mnem and server alike); each write's time to the other side."""
    agents = Agents()
    client = httpx.Client(base_url=server.base_url, headers={"X-API-Key": KEY, HARNESS: "1"})
    to_server: list[float] = []
    to_mnem: list[float] = []
    cycles_before = runs(home)
    pending: list[threading.Thread] = []
    try:
        number = 0
        while runs(home) - cycles_before < HINTED or len(to_server) < 20 or len(to_mnem) < 20:
            number += 1
            who = random.randrange(USERS)
            text = f"live note {number} of {user(who)}"
            if number % 2:
                store = home / "agents" / user(who) / "memory"
                written = agents.write(store, f"note-{number}", text)
                thread = threading.Thread(
                    target=_arrives_at_server, args=(server, user(who), text, written, to_server)
                )
            else:
                before = _signature(home, user(who))
                written = time.time()
                body = {"messages": [{"role": "user", "content": text}], "user_id": user(who)}
                client.post("/memories", json={**body, "infer": False}).raise_for_status()
                thread = threading.Thread(
                    target=_arrives_in_mnem, args=(home, user(who), before, written, to_mnem)
                )
            thread.start()
            pending.append(thread)
            time.sleep(random.expovariate(RATE))
        for thread in pending:
            thread.join(timeout=300)
    finally:
        agents.close()
        client.close()
    hinted = runs(home) - cycles_before
    rss = daemon.rss_mb()
    report(
        f"org: RSS after {hinted} hinted cycles / after the first sync",
        rss / rss_first,
        "x",
        f"{rss:.0f} MB against {rss_first:.0f} MB; <= 1.1x",
        rss / rss_first <= 1.1,
    )
    for name, delays in (("mnem -> server", to_server), ("server -> mnem", to_mnem)):
        worst = p95(delays)
        report(
            f"org: propagation {name}, p95 while agents write ({RATE:g}/s)",
            worst,
            " s",
            f"<= 2 s; median {sorted(delays)[len(delays) // 2]:.2f} s over {len(delays)}",
            worst <= 2.0,
        )


def _signature(home: Path, who: str) -> Any:
    from memsync.scopes.watch import signature_of

    return signature_of(home / "agents" / who / "memory" / ".mnem")


def _arrives_at_server(
    server: Served, who: str, text: str, written: float, delays: list[float]
) -> None:
    wait_until(lambda: server.holds(who, text), f"{text!r} on the server", timeout=240)
    delays.append(time.time() - written)


def _arrives_in_mnem(
    home: Path, who: str, before: Any, written: float, delays: list[float]
) -> None:
    wait_until(lambda: _signature(home, who) != before, f"a write into {who}'s store", timeout=240)
    delays.append(time.time() - written)


if __name__ == "__main__":
    main()
