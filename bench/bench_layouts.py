"""mnem layouts at scale: 1,000 users in ONE LangGraph store against one store per user, and
what dating agents' nodes by their commits costs.

Users: an in-process source discovers 1,000 users (as ``bench_scopes``) and each user's few
memories go into REAL mnem (built from ../shared/mnem-sdk), either one store per user (a path
template, ``create = true``) or one store whose LangGraph layout gives each user a namespace
(``["memories", "{user_id}"]``), the one store also held as the daemon holds it for the
agents it serves (``held``: others may commit between memsync's calls, so each scope's writes
check what others committed since the run read the store). All go through the same scope layer
(``scopes.cycle.run_scoped_cycle``); printed: the first sync and a quiet second cycle, and how
many times each opened a store (a wrapper around ``mnem.open``, counted per cycle). The row is
the quiet cycle's time, one store against a store per user: the cost a daemon pays every
interval for a team that changed nothing. Target: one store no slower (<= 1.0x), opened once.
A second row: the held store's first sync against the same one held by the run alone (<= 1.2x;
before the run's scopes shared one account of others' commits, each diffed from the run's head).

Dates: a store where an agent wrote 1,000 LangGraph items, one commit each (as
``mnem-langgraph``'s ``put`` does: no ``event_time``), first-synced into an in-process
receiver, with the created_at and updated_at of each node read from its commits (one walk of the
log) against the same sync with that look-up switched off (dated when first seen). Each run
its own process, best of two interleaved rounds. BENCH_QUICK=1: 200 users, 300 nodes.
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench._common import QUICK, in_subprocess, report
from bench._mnem_sdk import why_no_real_sdk

USERS = 200 if QUICK else 1000
PER_USER = 3
AGENT_NODES = 300 if QUICK else 1000
NEW_NODES = 10  # what agents wrote between two cycles
ROUNDS = 2


def users_child(users: int, per_user: int, layout: str) -> None:
    import mnem

    from bench.synthetic import SyntheticProvider
    from memsync.base.records import Record
    from memsync.base.scopes import Scope, scoped_name
    from memsync.config import parse_config
    from memsync.engine.report import SyncOptions
    from memsync.orchestration.scopes.cycle import run_scoped_cycle
    from memsync.providers.discovery import Discovery
    from memsync.providers.mnem.configured import build as build_mnem
    from memsync.staging import StagingStore

    class Team(SyntheticProvider):
        discovers_scopes = True

        def __init__(self, name: str, users: int, per_user: int, user: str = "") -> None:
            super().__init__(name, per_user)
            self.users, self.user = users, user

        def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
            return Discovery({Scope.of({"user_id": f"user{i:04d}"}) for i in range(self.users)})

        def bind(self, scope: Scope) -> Team:
            return Team(scoped_name(self.name, scope), 1, self.n, scope.as_dict()["user_id"])

        def _record(self, i: int) -> Record:
            record = super()._record(i)
            record.id = f"{self.user}-{i:04d}"
            record.scope_key = self.user
            return record

    opens = 0
    real_open = mnem.open

    def counting_open(path: str) -> Any:
        nonlocal opens
        opens += 1
        return real_open(path)

    mnem.open = counting_open
    held = None
    if layout == "held":  # as in the daemon: the store lent to the run and the agents it serves
        from memsync.providers.held import HeldStores

        held, layout = HeldStores(), "one-store"
    root = Path(tempfile.mkdtemp(prefix="memsync-bench-layouts-"))
    where = (
        f'path = "{root}/agents"\n'
        'layout = { type = "langgraph", namespace = ["memories", "{user_id}"] }\n'
        if layout == "one-store"
        else f'path = "{root}/agents/{{user_id}}"\n'
    )
    config = parse_config(
        '[sync]\nactive = "mem0"\n'
        '[providers.mem0]\ntype = "mem0-oss"\nscope = { user_id = "*" }\ndirection = "pull"\n'
        f'[providers.agents]\ntype = "mnem"\ncreate = true\ndirection = "push"\n{where}'
    )
    agents = build_mnem("agents", config.providers["agents"], config, held=held)  # type: ignore[arg-type]
    bases: dict[str, Any] = {"mem0": Team("mem0", users, per_user), "agents": agents}
    with StagingStore.open(root / "staging.db") as store:
        started = time.perf_counter()
        first = run_scoped_cycle(config, store, bases, SyncOptions())
        seconds = time.perf_counter() - started
        first_opens, opens = opens, 0
        started = time.perf_counter()
        quiet = run_scoped_cycle(config, store, bases, SyncOptions())
        quiet_seconds = time.perf_counter() - started
    assert first.exit_code == 0, first.as_dict()["scopes"]
    assert first.replayed["create"] == users * per_user
    assert quiet.planned_total == 0
    print(
        json.dumps(
            {
                "seconds": seconds,
                "quiet_seconds": quiet_seconds,
                "first_opens": first_opens,
                "quiet_opens": opens,
            }
        )
    )


def dates_child(nodes: int, dated: str) -> None:
    import mnem

    from memsync.config import parse_config
    from memsync.engine.from_config import build_engine
    from memsync.engine.report import SyncOptions
    from memsync.providers.base import Provider
    from memsync.providers.memory import MemoryProvider
    from memsync.providers.mnem.configured import build as build_mnem
    from memsync.providers.mnem.provider import MnemProvider
    from memsync.staging import StagingStore

    root = Path(tempfile.mkdtemp(prefix="memsync-bench-dates-"))
    store = mnem.init(str(root / "agents"))
    for i in range(nodes):  # mnem-langgraph's put: one commit a node, no event_time
        mnem.agents.remember(store, f"memories:alice:k{i:05d}", {"content": f"fact {i}"})
    del store
    gc.collect()
    if dated == "off":
        MnemProvider.version_dates = Provider.version_dates  # type: ignore[method-assign]
    config = parse_config(
        '[sync]\nactive = "agents"\n'
        '[providers.agents]\ntype = "mnem"\n'
        f'path = "{root}/agents"\n'
        'layout = { type = "langgraph", namespace = ["memories", "alice"] }\n'
        '[providers.copy]\ntype = "pmm-dir"\n'
        f'path = "{root}/copy"\nscope_key = "alice"\ndirection = "push"\n'
    )
    providers = {
        "agents": build_mnem("agents", config.providers["agents"], config),  # type: ignore[arg-type]
        "copy": MemoryProvider("copy", client_ids=True, family="pmm"),
    }
    with StagingStore.open(root / "staging.db") as staging:
        engine = build_engine(config, staging, providers)
        started = time.perf_counter()
        result = engine.run_cycle(SyncOptions())
        seconds = time.perf_counter() - started
        assert result.replayed["create"] == nodes, result.as_dict()
        store = mnem.open(str(root / "agents"))
        for i in range(NEW_NODES):  # what agents wrote since: one commit each
            mnem.agents.remember(store, f"memories:alice:n{i:05d}", {"content": f"news {i}"})
        del store
        gc.collect()
        engine = build_engine(config, staging, providers)
        started = time.perf_counter()
        result = engine.run_cycle(SyncOptions())
        cycle_seconds = time.perf_counter() - started
        assert result.replayed["create"] == NEW_NODES, result.as_dict()
    print(json.dumps({"seconds": seconds, "cycle_seconds": cycle_seconds}))


def main() -> None:
    no_sdk = why_no_real_sdk()
    if no_sdk:
        print(f"# skipped: mnem layouts (real mnem stores): {no_sdk}")
        return
    runs: dict[str, list[dict[str, Any]]] = {"one-store": [], "per-user": [], "held": []}
    for _ in range(ROUNDS):
        for layout in runs:
            runs[layout].append(
                in_subprocess("bench.bench_layouts", "users", str(USERS), str(PER_USER), layout)
            )
    one = min(runs["one-store"], key=lambda r: r["quiet_seconds"])
    per = min(runs["per-user"], key=lambda r: r["quiet_seconds"])
    for name, run in (("one LangGraph store", one), ("a store per user", per)):
        print(
            f"# {USERS} users x {PER_USER}, {name}: first sync {run['seconds']:.1f}s "
            f"({run['first_opens']} opens), quiet cycle {run['quiet_seconds']:.2f}s "
            f"({run['quiet_opens']} opens)"
        )
    ratio = one["quiet_seconds"] / per["quiet_seconds"]
    report(
        f"layouts {USERS} users: quiet cycle, one LangGraph store vs a store per user",
        ratio,
        "x",
        "<= 1.0x, one open",
        ratio <= 1.0 and one["quiet_opens"] == 1,
    )
    held = min(r["seconds"] for r in runs["held"]) / min(r["seconds"] for r in runs["one-store"])
    report(
        f"layouts {USERS} users: first sync into one LangGraph store, held as the daemon holds "
        "it for the agents it serves vs held by the run alone",
        held,
        "x",
        "<= 1.2x",
        held <= 1.2,
    )
    dated: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for _ in range(ROUNDS):
        for switch in dated:
            dated[switch].append(
                in_subprocess("bench.bench_layouts", "dates", str(AGENT_NODES), switch)
            )
    first = {k: min(r["seconds"] for r in runs) for k, runs in dated.items()}
    cycle = {k: min(r["cycle_seconds"] for r in runs) for k, runs in dated.items()}
    print(
        f"# first sync of {AGENT_NODES} agent-written nodes ({AGENT_NODES} commits): dated by "
        f"their commits {first['on']:.1f}s, dated when first seen {first['off']:.1f}s "
        f"({first['on'] / first['off']:.1f}x: one changed_by a commit, once in a node's life)"
    )
    print(
        f"# the next cycle, {NEW_NODES} new nodes in {NEW_NODES} commits: dated "
        f"{cycle['on'] * 1000:.0f} ms, undated {cycle['off'] * 1000:.0f} ms"
    )
    report(
        f"layouts: a cycle after agents wrote {NEW_NODES} nodes, dated by commit vs on sight",
        cycle["on"] / cycle["off"],
        "x",
        "<= 1.5x",
        cycle["on"] / cycle["off"] <= 1.5,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "users":
        users_child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "dates":
        dates_child(int(sys.argv[2]), sys.argv[3])
    else:
        main()
