"""What memsync's own commits cost a mnem store on disk, against the SDK's own commits of the
same memories (issue 37 §2): the check behind bench_growth's "a store's day replayed", which
makes a store's day of commits with the SDK directly.

STORES stores of PER_USER memories, each made by memsync's first sync from a Mem0 library
store, and its twin made with the SDK alone (the same nodes, one commit). Into each store, a day of memsync's commits at a thousand users' load
(COMMITS: 86 a store, half new memories, half edits of synced ones): each a change in Mem0 and
a memsync cycle (``run_sync`` in this process, as `memsync sync` runs it, which opens the
store, lists it, commits and lets it go: what the daemon does at that load, where a store's
commits are minutes apart). Into each twin, the same nodes with the SDK alone: open, add,
commit, let go. Allocated bytes, as ``du``. redb grows a file by steps of a few hundred KB,
so one store's day says little; the rows sum STORES of them.
"""

from __future__ import annotations

import gc
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.mem0_fixtures import DIMS, insert_behind_memsync, mem0_payload
from tests.test_e2e_mem0 import App, mem0_table

from bench._common import QUICK, report
from memsync.base.paths import home_paths
from memsync.config import load_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.runner import run_sync
from memsync.providers.mnem.disk import store_bytes

PER_USER = 20
STORES = 2 if QUICK else 6
COMMITS = 86  # a store's share of memsync's commits a day: 86,400 over 1,000 users
RATIO_TARGET = 1.25  # memsync's commit may cost at most this much more than the SDK's
VECTOR = [1.0] + [0.0] * (DIMS - 1)


@dataclass
class Cost:
    """Bytes the stores grew by, through memsync's cycles and through the SDK alone."""

    ours: int = 0
    sdk: int = 0
    commits: int = 0

    @property
    def ratio(self) -> float:
        return self.ours / max(self.sdk, 1)


def main() -> None:
    try:
        import mnem  # noqa: F401
    except ImportError as exc:
        print(f"# commit-cost rows skipped: the real mnem SDK is not importable here ({exc})")
        return
    cost = measure()
    report(
        "growth: memsync's own commits against the SDK's, a store's day",
        cost.ratio,
        "x",
        f"<= {RATIO_TARGET:g}x; {cost.ours / cost.commits / 1e3:.1f} KB a commit through "
        f"memsync's cycle vs {cost.sdk / cost.commits / 1e3:.1f} KB with the SDK alone; "
        f"{STORES} stores of {PER_USER} memories x {COMMITS} commits (half new memories, half "
        f"edits), the store let go after each",
        cost.ratio <= RATIO_TARGET,
    )


def measure(stores: int = STORES) -> Cost:
    """memsync's and the SDK's bytes over STORES stores' days (see the module docstring)."""
    cost = Cost()
    for _ in range(stores):
        with tempfile.TemporaryDirectory(prefix="bench-commit-cost-") as tmp:
            ours, sdk = _one_day(Path(tmp))
        cost.ours, cost.sdk, cost.commits = cost.ours + ours, cost.sdk + sdk, cost.commits + COMMITS
    return cost


def _one_day(home: Path) -> tuple[int, int]:
    ours, copy = home / "agent", home / "sdk-twin"
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(
        '[sync]\nactive = "old"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{ours}"\ncreate = true\n'
        "import_history = false\n"
    )
    with App(home, "old") as memory:
        memories = [
            insert_behind_memsync(memory, _payload(f"memory {i}: " + "a fact " * 8))
            for i in range(PER_USER)
        ]
    _cycle(home)
    _sdk_twin(ours, copy)
    made = []  # each commit's node and text, for the twin
    before = store_bytes(ours)
    for number in range(COMMITS):
        text = _text(number)
        with App(home, "old") as memory:
            if number % 2:  # an edit of a synced memory
                memory_id = memories[number % PER_USER]
                memory.vector_store.update(
                    vector_id=memory_id, vector=VECTOR, payload=_payload(text)
                )
            else:
                memory_id = insert_behind_memsync(memory, _payload(text))
        made.append((f"mem0:{memory_id}", text))
        _cycle(home)
    through_memsync = store_bytes(ours) - before
    before = store_bytes(copy)
    for node_id, text in made:
        _sdk_commit(copy, node_id, text)
    return through_memsync, store_bytes(copy) - before


def _payload(text: str) -> dict[str, Any]:
    return mem0_payload(text, user_id="alice")


def _text(number: int) -> str:
    return f"a memory of the day, {number}: " + "something the agent learned " * 3


def _cycle(home: Path) -> None:
    paths = home_paths(home)
    done = run_sync(paths, load_config(paths.config_file), SyncOptions())
    if done.exit_code != 0:
        raise SystemExit(f"the memsync cycle failed (exit {done.exit_code})")


def _sdk_twin(store: Path, twin: Path) -> None:
    """A store made at TWIN as memsync made STORE (init, its nodes added, one commit), with the
    SDK alone: born alike, where a copy of the file would not be (redb's file is sparse)."""
    import mnem

    source = mnem.open(str(store))
    nodes = list(source.working_memory().values())
    del source
    gc.collect()
    made = mnem.init(str(twin))
    for node in nodes:
        made.add(
            node.id,
            node.content,
            content_kind=node.content_kind,
            provenance=node.provenance,
            event_time=node.event_time,
        )
    made.commit("sdk: the first sync", author="agent")
    del made, nodes
    gc.collect()


def _sdk_commit(store: Path, node_id: str, text: str) -> None:
    """NODE_ID as memsync writes it (a synced node's kind and provenance), with the SDK alone."""
    import mnem

    handle = mnem.open(str(store))
    like: Any = next(iter(handle.working_memory().values()))
    handle.add(node_id, text, content_kind=like.content_kind, provenance=like.provenance)
    handle.commit("sdk: 1 changed", author="agent")
    del handle, like
    gc.collect()


if __name__ == "__main__":
    main()
