"""What dating mnem versions costs (`conflict = "newest"` sees when mnem changed), at 20,000 nodes.

A store agents filled (the default layout: one node a memory, no ``event_time``), with a
history: the memories added in one commit, then ``HISTORY`` agents' commits of a few edits each,
as mnem's own clients make them. In mnem 0.0.7 each read of a commit's changes (``changed_by``)
scans the store's whole object table, so dating costs in proportion to the commits read times
the store's size. Each `memsync sync` is run as a user runs it (its own process, start to exit)
into a PMM directory, with the dating on, against the very same sync with it switched off
(the provider answering no dates, as before issue 37): a launcher patches that switch and
counts ``changed_by`` calls, then runs memsync's CLI.

Rows: the first sync (the walk of the log, cut at ``WALK_BUDGET_S``: wall seconds, the walk
waits on nothing but the store), a cycle after one agent's commit (dated from the listing's
diff, no read), and a cycle after two (one read): those by the CPU seconds of the process (a
second's work, which a loaded machine's wall clock swamps). Each case runs on its own copy of
the store, on and off alternated, best of ``ROUNDS``. BENCH_QUICK=1: 2,000 nodes, 40 commits.
The machine is shared: ratios in one run are the figures to read.
"""

from __future__ import annotations

import gc
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._common import QUICK, Command, report, run_command
from bench._mnem_sdk import why_no_real_sdk

NODES = 2_000 if QUICK else 20_000
# agents' commits after the first, a few edits each (BENCH_NEWEST_COMMITS: another depth; at
# 1,000 the store is 2 GB and a full walk of its log took 460 s in the research for issue 37)
HISTORY = int(os.environ.get("BENCH_NEWEST_COMMITS") or (40 if QUICK else 300))
ROUNDS = int(os.environ.get("BENCH_NEWEST_ROUNDS") or 2)

# Runs memsync's CLI in this process after the switch: ``off`` makes mnem answer no dates (the
# provider's default), and every changed_by is counted, said on stderr at exit.
LAUNCHER = """
import atexit, sys
import mnem
reads = [0]
real = mnem.Store.changed_by
def counted(store, commit):
    reads[0] += 1
    return real(store, commit)
mnem.Store.changed_by = counted
atexit.register(lambda: print(f"changed_by={reads[0]}", file=sys.stderr))
if sys.argv[1] == "off":
    from memsync.providers.base import Provider
    from memsync.providers.mnem.provider import MnemProvider
    MnemProvider.version_dates = Provider.version_dates
from memsync.cli import main
sys.argv = ["memsync", *sys.argv[2:]]
main()
"""


def build(root: Path) -> None:
    """The agents' store: NODES memories in one commit, then HISTORY commits of 1 to 5 edits."""
    import mnem

    store = mnem.init(str(root))
    ids = [f"fact-{n:06d}" for n in range(NODES)]
    items = [{"id": node_id, "content": f"fact number {n}"} for n, node_id in enumerate(ids)]
    mnem.agents.remember_many(store, items, summary="the memories so far")
    rnd = random.Random(37)
    for j in range(HISTORY):
        edits = [
            {"id": rnd.choice(ids), "content": f"edited in commit {j}, {k}"}
            for k in range(rnd.randint(1, 5))
        ]
        mnem.agents.remember_many(store, edits, summary=f"agent edits {j}")
    del store
    gc.collect()


def agent_commits(root: Path, count: int) -> None:
    """COUNT commits by an agent after the last sync, each editing one memory."""
    import mnem

    store = mnem.open(str(root))
    for n in range(count):
        mnem.agents.remember(store, f"fact-{n * 7:06d}", f"changed after the sync, {n}")
    del store
    gc.collect()


def configure(home: Path, store: Path) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(
        '[sync]\nactive = "agents"\nmax_delete_count = 100000\n'
        f'[providers.agents]\ntype = "mnem"\npath = "{store}"\nscope_key = "alice"\n'
        f'[providers.copy]\ntype = "pmm-dir"\npath = "{home / "copy"}"\n'
        'scope_key = "alice"\ndirection = "push"\n'
    )


def sync(home: Path, switch: str) -> tuple[Command, int, dict[str, Any]]:
    env = {**os.environ, "MEMSYNC_HOME": str(home), "MEM0_TELEMETRY": "False"}
    done = run_command([sys.executable, "-c", LAUNCHER, switch, "sync", "--json"], env)
    assert done.returncode == 0, done.stderr[-2000:]
    reads = int(done.stderr.rsplit("changed_by=", 1)[1].split()[0])
    return done, reads, json.loads(done.stdout)


def case(built: Path, switch: str, later: int) -> dict[str, Any]:
    """A copy of the built store first-synced, then LATER agent commits and a second cycle."""
    work = Path(tempfile.mkdtemp(prefix="memsync-bench-newest-"))
    try:
        store = work / "agents"
        shutil.copytree(built, store)
        configure(work / "home", store)
        first, first_reads, report_ = sync(work / "home", switch)
        agents = report_["providers"]["agents"]
        assert agents["added"] == NODES, agents
        agent_commits(store, later)
        cycle, cycle_reads, _ = sync(work / "home", switch)
        return {
            "first": first.seconds,
            "first_cpu": first.cpu,
            "first_reads": first_reads,
            "undated": int(agents.get("undated", 0)),
            "cycle": cycle.seconds,
            "cycle_cpu": cycle.cpu,
            "cycle_reads": cycle_reads,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    no_sdk = why_no_real_sdk()
    if no_sdk:
        print(f"# skipped: newest (real mnem stores): {no_sdk}")
        return
    from memsync.providers.mnem.dates import WALK_BUDGET_S

    built = Path(tempfile.mkdtemp(prefix="memsync-bench-newest-store-")) / "agents"
    try:
        build(built)
        size = sum(p.stat().st_blocks * 512 for p in built.rglob("*") if p.is_file())
        print(f"# a store of {NODES} nodes and {HISTORY + 1} commits: {size / 1e6:.0f} MB on disk")
        runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for _ in range(ROUNDS):
            for later in (1, 2):
                for switch in ("on", "off"):
                    runs.setdefault((switch, later), []).append(case(built, switch, later))
    finally:
        shutil.rmtree(built.parent, ignore_errors=True)

    def best(switch: str, later: int, key: str) -> dict[str, Any]:
        return min(runs[(switch, later)], key=lambda r: float(r[key]))

    on, off = best("on", 1, "first"), best("off", 1, "first")
    print(
        f"# first sync, {NODES} nodes: dated {on['first']:.1f}s ({on['first_cpu']:.1f}s CPU, "
        f"{on['first_reads']} commits read, {on['undated']} versions left undated), "
        f"undated {off['first']:.1f}s ({off['first_cpu']:.1f}s CPU)"
    )
    extra = on["first"] - off["first"]
    report(
        f"newest {NODES} nodes: first sync, versions dated by their commits vs not dated "
        f"(the walk is cut at {WALK_BUDGET_S:.0f}s)",
        on["first"] / off["first"],
        "x",
        f"extra <= {WALK_BUDGET_S:.0f}s + 25%",
        extra <= WALK_BUDGET_S * 1.25,
    )
    for later in (1, 2):
        on, off = best("on", later, "cycle_cpu"), best("off", later, "cycle_cpu")
        print(
            f"# a cycle after {later} agent commit(s), {NODES} nodes: dated {on['cycle']:.2f}s "
            f"({on['cycle_cpu']:.2f}s CPU, {on['cycle_reads']} commit(s) read from mnem), "
            f"undated {off['cycle']:.2f}s ({off['cycle_cpu']:.2f}s CPU)"
        )
        ratio = on["cycle_cpu"] / off["cycle_cpu"]
        report(
            f"newest {NODES} nodes: a cycle after {later} agent commit(s), dated vs not dated "
            "(CPU seconds of the process)",
            ratio,
            "x",
            f"<= 1.25x, {later - 1} read",
            ratio <= 1.25 and on["cycle_reads"] == later - 1,
        )


if __name__ == "__main__":
    main()
