"""What memsync's commits cost mnem's disk under a thousand users' agents, by layout (issue 37
§2): the growth a day and the propagation p95, for one store per user, one team store and a
store per namespace (the recommended layout).

The load: 2 writes a second over the org, half of them on the server side (another Mem0
client adding memories, which memsync replays into mnem), half by agents through the store
memsync serves (``memsync.langgraph.MnemosyneStore`` on the team store and on the sharded
root, memsync's store client on the per-user stores: half new memories, half edits of
memories synced from Mem0). The world is bench_org's: a Mem0 server double in a process of
its own, its memories in a real PostgreSQL, 20 ms injected into every request, USERS users of
PER_USER memories; ``memsync daemon`` as its own process, probe at 1 s.

For each layout: the daemon's first sync, then the daemon stopped and every store aged by
AGE + AGE_OPENS agent commits (one node rewritten, the SDK directly, nobody else holding the
stores): redb grows a young store's file by steps over its first few dozen commits, once, and
the first few commits after a store was let go by a process that committed many times cost
several times the later ones; a day gives each store 170 commits, a window one or two, so a
window right after the import would see those steps at a rate no later day does (35 KB a
commit against 3.6 KB aged so). The team store is not aged: each of its commits costs its
20,000 nodes from the first. Then every store measured (allocated bytes, as ``du``, nobody
holding them); the daemon started again, WINDOW seconds of the load, each write's propagation
timed (mnem -> server: the text on the server; server -> mnem: the node readable through the
served store); the daemon stopped, the stores measured again.

The window starts once the restarted daemon has caught up (no cycle for 5 s): the aged stores'
warm-up nodes reach the server first, which is not the load's.

A live day is too long for this machine. Two figures of memsync's commits a day, both judged:
- the window's growth times 86,400 / WINDOW, times memsync's share of the window's commits;
- a store's day replayed: ten of the stores each take their share of a day's commits, one per
  open of the store, with the SDK; that cost a commit times the window's rate of memsync's
  commits. bench_commit_cost checks that a commit made by memsync's cycle costs what the SDK's
  does (0.99x on 2026-12-05).
The p95 is the window's. The machine is shared (2 cores, other work on it): times are upper
bounds. BENCH_QUICK=1: 200 users, a 60 s window.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tests.doubles.served import HARNESS, KEY, Served

from bench._common import QUICK, ROOT, report
from bench._daemon import Daemon, p95, wait_until
from memsync.providers.mnem.disk import store_bytes
from memsync.providers.mnem.handle import AUTHOR

LATENCY = 0.02
USERS = int(os.environ.get("BENCH_USERS", "200" if QUICK else "1000"))
PER_USER = 20
WINDOW = float(os.environ.get("BENCH_WINDOW", "60" if QUICK else "180"))
RATE = 2.0  # writes a second over the org, half on each side
BUDGET = 1e9  # bytes a day
P95_TARGET = 2.0
# a store's share of a day's commits (BENCH_DAY_COMMITS: fewer, to try the bench out)
COMMITS_A_DAY = int(os.environ.get("BENCH_DAY_COMMITS", RATE * 86_400 / USERS))
AGE = 50  # commits a store is aged by before the window (a quarter of its day's)
AGE_OPENS = 5  # of which the last, each in an open of its own (see ``age``)
SETTLE = float(os.environ.get("BENCH_SETTLE", "600"))  # how long a write may take to arrive

BASE = """
[sync]
active = "server"
probe = "1s"

[backup]
interval = "1d"

[providers.server]
type = "mem0-server"
base_url = "{url}"
api_key_env = "BENCH_SERVER_KEY"
scope = {{ user_id = "*" }}
database_url_env = "BENCH_DATABASE_URL"

[providers.agents]
type = "mnem"
create = true
"""
LAYOUTS = {
    "one store per user": 'path = "{home}/agents/{{user_id}}/memory"\n',
    "one team store": 'path = "{home}/agents"\n'
    'layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"] }}\n',
    "a store per namespace": 'path = "{home}/agents"\n'
    'layout = {{ type = "langgraph", namespace = ["memories", "{{user_id}}"], '
    'stores = "per-namespace" }}\n',
}

# An agent process: one client of the served store, reading commands on stdin. Per-user
# stores: memsync's store client per user's store (16 kept); the LangGraph layouts: memsync's
# LangGraph store on the root. "new USER TEXT", "edit USER TEXT" (over a memory synced from
# Mem0), "has USER ID" (whether the memory with that Mem0 id is readable; the reader's).
AGENT = r"""
import random, sys, time, uuid
from collections import OrderedDict
from pathlib import Path
kind, root = sys.argv[1], sys.argv[2]
if kind == "per-user":
    from memsync.orchestration.serve.client import StoreClient
    clients = OrderedDict()
    def client(user):
        if user not in clients:
            clients[user] = StoreClient(Path(root) / user / "memory", client="bench agent")
            while len(clients) > 16:
                clients.popitem(last=False)[1].close()
        clients.move_to_end(user)
        return clients[user]
    def new(user, text):
        client(user).call("remember", id=f"note-{uuid.uuid4()}", content=text, author="agent")
    def edit(user, text):
        synced = [i for i in client(user).call("recall") if i.startswith("mem0:")]
        client(user).call("remember", id=random.choice(synced), content=text, author="agent")
    def has(user, memory):
        return client(user).call("recall", id=f"mem0:{memory}") is not None
else:
    from memsync.langgraph import MnemosyneStore
    store = MnemosyneStore(root)
    def new(user, text):
        store.put(("memories", user), str(uuid.uuid4()), {"content": text})
    def edit(user, text):
        found = store.search(("memories", user), limit=100)
        synced = [i.key for i in found if "_meta" in i.value]
        store.put(("memories", user), random.choice(synced), {"content": text})
    def has(user, memory):
        return store.get(("memories", user), memory) is not None
for line in sys.stdin:
    op, user, arg = line.rstrip("\n").split("\t")
    if op == "has":
        print(int(has(user, arg)), flush=True)
        continue
    (new if op == "new" else edit)(user, arg)
    print(time.time(), flush=True)
"""


class Agent:
    """An agent process (see AGENT): one command at a time, its answer."""

    def __init__(self, kind: str, root: Path, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSYNC_", "MEM0_"))}
        env.update(MEMSYNC_HOME=str(home), PYTHONPATH=str(ROOT / "src"))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AGENT, kind, str(root)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lock = threading.Lock()

    def ask(self, *parts: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write("\t".join(parts) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer:
            raise SystemExit(f"the agent process stopped (exit {self.proc.poll()})")
        return answer.strip()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@dataclass
class Measured:
    layout: str
    window: float = 0.0
    grown: int = 0
    commits: int = 0
    ours: int = 0  # of those commits, memsync's own (author "memsync")
    stores: int = 0
    before: int = 0
    to_server: list[float] = field(default_factory=list)
    to_mnem: list[float] = field(default_factory=list)
    day_commit: float | None = None  # bytes a commit over a store's replayed day

    @property
    def per_day(self) -> float:
        return self.grown / self.window * 86_400

    @property
    def ours_a_day(self) -> float:
        """memsync's commits a day at the window's rate."""
        return self.ours / self.window * 86_400


def user(number: int) -> str:
    return f"user{number:04d}"


def on_disk(root: Path) -> tuple[int, int, int, int]:
    """Allocated bytes of every store under ROOT, how many stores, their commits, and how
    many of those are memsync's (each store opened and let go: nobody else holds them now)."""
    found = per_store(root)
    total = sum(size for size, _ in found.values())
    logs = [entry for _, log in found.values() for entry in log]
    ours = sum(entry.startswith(f"{AUTHOR}: ") for entry in logs)
    return total, len(found), len(logs), ours


def per_store(root: Path) -> dict[str, tuple[int, list[str]]]:
    """Each store under ROOT: its allocated bytes and its commits' messages, newest first."""
    import mnem

    found = {}
    for where, _dirs, files in os.walk(root):
        if Path(where).name != ".mnem":
            continue
        size = sum(os.stat(os.path.join(where, f)).st_blocks * 512 for f in files)
        handle = mnem.open(str(Path(where).parent))
        found[where] = (size, [f"{c.author}: {c.message}" for c in handle.log(first_parent=True)])
        del handle
        gc.collect()
    return found


def main() -> None:
    try:
        import mnem  # noqa: F401
    except ImportError as exc:
        print(f"# growth rows skipped: the real mnem SDK is not importable here ({exc})")
        return
    from tests.postgres_server import memories_table, running_postgres

    results = []
    with running_postgres() as postgres:
        url = postgres.url(postgres.create_database())
        memories_table(url)
        with Served("mem0-org", 0.0, database_url=url) as server:
            seeded = server.seed(USERS, PER_USER)
            print(
                f"# {USERS} users x {PER_USER} memories ({seeded:,}); {RATE:g} writes/s, "
                f"half agents through the served store, half on the server",
                flush=True,
            )
            server.set_latency(LATENCY)
            for layout, where in LAYOUTS.items():
                if os.environ.get("BENCH_ONLY") and os.environ["BENCH_ONLY"] not in layout:
                    continue
                with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
                    results.append(run(Path(tmp), server, url, layout, where))
    rows(results)


def run(home: Path, server: Served, url: str, layout: str, where: str) -> Measured:
    config = BASE.format(url=server.base_url) + where.format(home=home)
    env = {"BENCH_SERVER_KEY": KEY, "BENCH_DATABASE_URL": url}
    kind = "per-user" if layout == "one store per user" else "langgraph"
    agents = home / "agents"
    measured = Measured(layout)
    debug = os.environ.get("BENCH_LOG")  # a file for the daemons' logs, debug lines included
    daemon = Daemon(home, config, env, debug=bool(debug))
    try:
        first = daemon.wait_for(r"sync #1 ", timeout=3600)
        print(f"# {layout}: {first}", flush=True)
    finally:
        daemon.stop()
        if debug:
            with Path(debug).open("a") as log:
                log.write("\n".join(daemon.lines) + "\n")
    imported, _, _, _ = on_disk(agents)
    if layout != "one team store":  # its commits cost its 20,000 nodes from the first
        age(agents, AGE)
    measured.before, measured.stores, commits_before, ours_before = on_disk(agents)
    print(
        f"# {layout}: {imported / 1e6:.0f} MB after the first sync; aged by {AGE + AGE_OPENS} "
        f"commits a "
        f"store: +{(measured.before - imported) / 1e6:.0f} MB, once",
        flush=True,
    )
    daemon = Daemon(home, config, env, debug=bool(debug))
    try:
        daemon.wait_for(r"sync #\d+ ", timeout=3600)  # its first cycle (run ids go on)
        daemon.wait_caught_up()  # the stores' warm-up commits, replayed into the server
        agent, reader = Agent(kind, agents, home), Agent(kind, agents, home)
        measured.window = live(agent, reader, server, measured)
        agent.close()
        reader.close()
    finally:
        daemon.stop()
        if debug:
            with Path(debug).open("a") as log:
                log.write("\n".join(daemon.lines) + "\n")
    after, _, commits_after, ours_after = on_disk(agents)
    measured.grown, measured.commits = after - measured.before, commits_after - commits_before
    measured.ours = ours_after - ours_before
    if layout != "one team store":
        measured.day_commit = replay_day(agents)
    print(
        f"# {layout}: {measured.stores} stores, {measured.before / 1e6:.0f} MB before the "
        f"window; {measured.commits} commits in it ({measured.ours} memsync's), "
        f"{measured.grown / 1e6:.1f} MB "
        f"({measured.grown / max(measured.commits, 1) / 1e3:.1f} KB a commit)",
        flush=True,
    )
    return measured


def age(root: Path, commits: int) -> None:
    """COMMITS agent commits into every store under ROOT (one node rewritten), as a day's first
    hours make them: in one open of the store, then AGE_OPENS more, each in an open of its own
    as the daemon makes them minutes apart (the first few commits after a store was let go
    by a process that committed many times cost several times the later ones: a window that
    meets them measures them). Nobody else holds the stores now."""
    import mnem

    for where, _dirs, _files in os.walk(root):
        if Path(where).name != ".mnem":
            continue
        handle = mnem.open(str(Path(where).parent))
        first = next(iter(handle.working_memory()))
        namespace = first.rpartition(":")[0] if first.startswith("memories:") else ""
        node = f"{namespace}:bench-warm-up" if namespace else "bench-warm-up"
        for number in range(commits + AGE_OPENS):
            if number >= commits:  # one commit an open, as the daemon makes them
                del handle
                gc.collect()
                handle = mnem.open(str(Path(where).parent))
            value = {"content": f"warm-up {number}"} if namespace else f"warm-up {number}"
            handle.add(node, value)
            handle.commit(f"agent warm-up {number}", author="agent")
        del handle
        gc.collect()


def replay_day(root: Path, sample: int = 10) -> float:
    """Bytes a commit over a whole day of one store, on SAMPLE of ROOT's stores (after the
    window, which is measured already): each gets its day's share of the load (COMMITS_A_DAY
    commits: half new memories, half edits), one commit per open of the store as the daemon
    makes them minutes apart, with the SDK directly. A window of minutes catches redb growing
    a store's file by a step (stores aged alike reach their steps together); a day amortizes
    them."""
    import mnem

    found = sorted(Path(w).parent for w, _d, _f in os.walk(root) if Path(w).name == ".mnem")
    chosen = found[:: max(1, len(found) // sample)][:sample]
    grown = made = 0
    for store in chosen:
        before = store_bytes(store)
        for commit in range(COMMITS_A_DAY):
            handle = mnem.open(str(store))
            nodes = list(handle.working_memory().items())
            node_id, node = nodes[commit % len(nodes)]
            text = f"a day's write {commit}"
            if commit % 2:  # a new memory, in the store's own namespace
                node_id = f"{node_id.rpartition(':')[0]}:day-{commit}".lstrip(":")
            value = {"content": text} if isinstance(node.content, dict) else text
            handle.add(node_id, value)
            handle.commit(f"day {commit}", author="agent")
            del handle, nodes, node
            gc.collect()
            made += 1
        grown += store_bytes(store) - before
    return grown / max(made, 1)


def live(agent: Agent, reader: Agent, server: Served, measured: Measured) -> float:
    """WINDOW seconds of the load; each write's propagation. The window's length."""
    client = httpx.Client(base_url=server.base_url, headers={"X-API-Key": KEY, HARNESS: "1"})
    pending: list[threading.Thread] = []
    number = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < WINDOW:
            number += 1
            who = user(random.randrange(USERS))
            text = f"live note {number} of {who}"
            if number % 2:
                op = "edit" if number % 4 == 1 else "new"
                written = float(agent.ask(op, who, text))
                thread = threading.Thread(
                    target=_arrives, args=(server, who, text, written, measured.to_server)
                )
            else:
                written = time.time()
                body = {"messages": [{"role": "user", "content": text}], "user_id": who}
                answer = client.post("/memories", json={**body, "infer": False})
                answer.raise_for_status()
                memory = answer.json()["results"][0]["id"]
                thread = threading.Thread(
                    target=_readable, args=(reader, who, memory, written, measured.to_mnem)
                )
            thread.start()
            pending.append(thread)
            time.sleep(random.expovariate(RATE))
        elapsed = time.monotonic() - started
        for thread in pending:
            thread.join(timeout=600)
    finally:
        client.close()
    return elapsed


def _arrives(server: Served, who: str, text: str, written: float, delays: list[float]) -> None:
    wait_until(lambda: server.holds(who, text), f"{text!r} on the server", timeout=600)
    delays.append(time.time() - written)


def _readable(reader: Agent, who: str, memory: str, written: float, delays: list[float]) -> None:
    deadline = time.monotonic() + 600
    while reader.ask("has", who, memory) != "1":
        if time.monotonic() > deadline:
            raise SystemExit(f"{memory} of {who} never reached mnem")
        time.sleep(0.02)
    delays.append(time.time() - written)


def rows(results: list[Measured]) -> None:
    team = next((m for m in results if m.layout == "one team store"), None)
    for measured in results:
        day = measured.per_day
        report(
            f"growth: {measured.layout}, the mnem side a day at {RATE:g} writes/s",
            day / 1e9,
            " GB",
            f"every commit, agents' too; {measured.grown / 1e6:.1f} MB in a "
            f"{measured.window:.0f} s window x "
            f"86,400 / {measured.window:.0f} (extrapolated), {measured.commits} commits, "
            f"{measured.grown / max(measured.commits, 1) / 1e3:.1f} KB each; "
            f"{day / team.per_day:.3f}x the team store's"
            if team
            else "the team store not run",
            True,
        )
        share = measured.ours / max(measured.commits, 1)
        report(
            f"growth: {measured.layout}, memsync's commits a day (window)",
            day * share / 1e9,
            " GB",
            f"< 1 GB; the window's growth x {measured.ours} of its {measured.commits} "
            f"commits, memsync's (the others are the agents' own, through the served store)",
            day * share < BUDGET,
        )
        if measured.day_commit is not None:
            replayed = measured.day_commit * RATE * 86_400
            report(
                f"growth: {measured.layout}, the mnem side a day, a store's day replayed",
                replayed / 1e9,
                " GB",
                f"every commit, agents' too; {COMMITS_A_DAY} commits (half new memories) into "
                f"10 of its stores, one open each, the SDK directly: "
                f"{measured.day_commit / 1e3:.1f} KB a commit x {RATE * 86_400:,.0f} commits a day",
                True,
            )
            ours = measured.day_commit * measured.ours_a_day
            report(
                f"growth: {measured.layout}, memsync's commits a day, a store's day replayed",
                ours / 1e9,
                " GB",
                f"< 1 GB; {measured.day_commit / 1e3:.1f} KB a commit x "
                f"{measured.ours_a_day:,.0f} memsync commits a day (the window's rate)",
                ours < BUDGET,
            )
        for name, delays in (
            ("mnem -> server", measured.to_server),
            ("server -> mnem", measured.to_mnem),
        ):
            worst = p95(delays)
            report(
                f"growth: {measured.layout}, propagation {name} p95",
                worst,
                " s",
                f"<= {P95_TARGET:g} s; median {sorted(delays)[len(delays) // 2]:.2f} s over "
                f"{len(delays)} writes in the window",
                worst <= P95_TARGET,
            )
    print(
        json.dumps({m.layout: {"per_day_bytes": m.per_day, "commits": m.commits} for m in results})
    )


if __name__ == "__main__":
    main()
