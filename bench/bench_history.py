"""Mem0's past into a new mnem store: ``memsync migrate`` with history against without it.

One local Mem0 store per size (Qdrant on disk, the hash embedder), with a year of history:
1.1 N memories added, 0.3 N edits and 0.1 N deletes spread uniformly over a year (about 1.5
events a memory), N alive now. The live memories are written in bulk into Qdrant, and the
history rows into Mem0's own history database in its schema, in the order and with the dates
Mem0's ``add``/``update``/``delete`` write them (``created_at`` the memory's, ``updated_at`` the
event's). memsync's journal holds the deleted memories as a sync would have seen them before
the move (a staging database made once per size), so their pasts are placed too.

Rows, each a whole command start to exit, alternated with its baseline, each into a new store:

- ``migrate --history`` against ``migrate --no-history`` (the current-state import): <= 2x;
- the store with history against the store without (allocated bytes, each measured once its
  handle is let go): within ``history_budget`` (4x);
- what the import chose (window, commits, versions) and, since mnem 0.0.7's ``rm`` reads the
  whole head state at every call, what a removal costs at that size and the deletes' share.

BENCH_QUICK=1: 1k and 10k instead of 10k and 100k. ``python bench/run_all.py
bench.bench_history`` runs these rows alone.
"""

from __future__ import annotations

import gc
import json
import os
import random
import shutil
import sqlite3
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._common import QUICK, ROOT, Command, median, memsync_command, report, run_command
from bench._mnem_sdk import why_no_real_sdk
from bench.bench_first_sync import DIMS, env, mem0_table, provider

SMALL, LARGE = (1_000, 10_000) if QUICK else (10_000, 100_000)
ATTEMPTS = {SMALL: 3, LARGE: 1}
TIME_TARGET, BUDGET = 2.0, 4.0
YEAR_MS = 365 * 86_400_000
T0 = 1_735_689_600_000  # 2025-01-01
ACTORS = [("user", None), ("assistant", "bot-7"), ("assistant", "support-bot"), ("user", "alice")]


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def synthetic_year(n: int, seed: int = 37) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """N memories alive now (their payloads) and a year of history rows, in time order."""
    rnd = random.Random(seed)
    total = int(n * 1.1)
    ids = [str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(total)]
    events: list[tuple[int, int, str, str, str | None, str | None]] = []
    born = {}
    text = {}
    for number, memory in enumerate(ids):
        born[memory] = T0 + rnd.randrange(YEAR_MS)
        text[memory] = f"memory {number}: likes tea, team {number % 97}"
        events.append((born[memory], 0, memory, "ADD", None, text[memory]))
    deleted = set(rnd.sample(ids, total - n))
    end = {m: T0 + YEAR_MS for m in ids}
    for memory in sorted(deleted):
        end[memory] = rnd.randrange(born[memory] + 2, T0 + YEAR_MS)
    for edit in range(int(n * 0.3)):
        memory = rnd.choice(ids)
        if end[memory] - born[memory] > 2:
            when = rnd.randrange(born[memory] + 1, end[memory] - 1)
            events.append((when, 1, memory, "UPDATE", None, f"{text[memory]}; edit {edit}"))
    for memory in deleted:
        events.append((end[memory], 2, memory, "DELETE", None, None))
    events.sort()
    actor = {m: ACTORS[rnd.randrange(len(ACTORS))] for m in ids}
    current: dict[str, str] = {}
    updated: dict[str, int] = {}
    rows = []
    for when, _, memory, event, _, new in events:
        role, actor_id = actor[memory]
        old = current.get(memory)
        created = iso(born[memory])
        if event == "ADD":
            rows.append((memory, None, new, "ADD", created, created, 0, actor_id, role))
        elif event == "UPDATE":
            rows.append((memory, old, new, "UPDATE", created, iso(when), 0, actor_id, role))
        else:
            rows.append((memory, old, None, "DELETE", created, iso(when), 1, actor_id, role))
        if new is None:
            current.pop(memory, None)
        else:
            current[memory] = new
            updated[memory] = when
    payloads = [
        {
            "data": current[m],
            "hash": "",
            "created_at": iso(born[m]),
            "updated_at": iso(updated[m]),
            "user_id": "alice",
            "role": actor[m][0],
            **({"actor_id": actor[m][1]} if actor[m][1] else {}),
            "_id": m,
        }
        for m in ids
        if m in current
    ]
    return payloads, rows


def seed(root: Path, n: int) -> list[tuple[Any, ...]]:
    """The Mem0 store at ROOT; the rows of the memories deleted before the move."""
    payloads, rows = synthetic_year(n)
    source = provider("seed", root)
    source.open()  # Mem0 makes its history table with its own schema
    memory = source.memory
    for start in range(0, len(payloads), 1000):
        chunk = payloads[start : start + 1000]
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)] * len(chunk),
            payloads=[{k: v for k, v in p.items() if k != "_id"} for p in chunk],
            ids=[p["_id"] for p in chunk],
        )
    source.close()
    with sqlite3.connect(root / "history.db") as db:
        db.executemany(
            "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, "
            "updated_at, is_deleted, actor_id, role) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(str(uuid.uuid4()), *row) for row in rows],
        )
    db.close()
    return [row for row in rows if row[3] == "DELETE"]


def journal(home: Path, deletes: list[tuple[Any, ...]]) -> None:
    """memsync's journal, as a sync before the move left it: each deleted memory seen, then
    seen removed."""
    from memsync.base.paths import resolve_paths
    from memsync.base.records import Record
    from memsync.staging import StagingStore
    from memsync.staging.journal import journal_row

    os.environ["MEMSYNC_HOME"] = str(home)
    paths = resolve_paths()
    paths.ensure()
    with StagingStore.open(paths.database) as store, store.transaction():
        run = store.runs.start("2025-06-01T00:00:00Z", os.getpid())
        rows = []
        for memory, old, _, _, created, _, _, actor, role in deletes:
            provenance = {"user_id": "alice", "role": role, "source": actor or role}
            seen = Record(
                id=memory, content=old, scope_key="alice", created_at=created, provenance=provenance
            )
            rows.append(journal_row(run, "mem0", f"mem0:{memory}", "added", seen, memory))
            rows.append(journal_row(run, "mem0", f"mem0:{memory}", "removed", None, memory))
        store.journal.append(rows)
    del os.environ["MEMSYNC_HOME"]


def allocated(store: Path) -> int:
    total = 0
    for folder, _, files in os.walk(store / ".mnem"):
        total += sum(os.stat(os.path.join(folder, f)).st_blocks * 512 for f in files)
    return total


def migrate(workdir: Path, source: Path, target: Path, home: Path, history: bool) -> Command:
    run_home = workdir / f"home-{target.name}"
    shutil.copytree(home, run_home)
    config = workdir / f"{target.name}.toml"
    config.write_text(
        '[sync]\nactive = "mem0"\n'
        + mem0_table("mem0", source)
        + f'\n[providers.mnem]\ntype = "mnem"\npath = "{target}"\ncreate = true\n'
    )
    flag = "--history" if history else "--no-history"
    done = run_command(
        [
            *memsync_command(),
            "--config",
            str(config),
            "migrate",
            "--from",
            "mem0",
            "--to",
            "mnem",
            flag,
            "--json",
        ],
        # this tree's memsync, wherever the environment's editable install points
        {**env(), "MEMSYNC_HOME": str(run_home), "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    shutil.rmtree(run_home, ignore_errors=True)
    return done


def removal_cost(store: Path, samples: int = 40) -> float:
    """Milliseconds one ``rm`` takes on this store (staged, then unstaged: nothing kept)."""
    import mnem

    gc.collect()
    opened = mnem.open(str(store))
    try:
        ids = random.Random(1).sample(sorted(opened.working_memory()), samples)
        started = time.perf_counter()
        for node_id in ids:
            opened.rm(node_id)
        spent = time.perf_counter() - started
        for node_id in ids:
            opened.unstage(node_id)
    finally:
        del opened
        gc.collect()
    return spent / samples * 1000


def one_size(workdir: Path, n: int) -> None:
    label = f"{n // 1000}k"
    source, home = workdir / f"source-{n}", workdir / f"home-{n}"
    deletes = seed(source, n)
    journal(home, deletes)
    current: list[Command] = []
    history: list[Command] = []
    sizes: dict[str, list[int]] = {"current": [], "history": []}
    for attempt in range(ATTEMPTS[n]):
        for kind, commands in (("current", current), ("history", history)):
            into = workdir / f"{kind}-{n}-{attempt}"
            commands.append(migrate(workdir, source, into, home, kind == "history"))
            gc.collect()
            sizes[kind].append(allocated(into))
            if attempt < ATTEMPTS[n] - 1 or kind == "current":
                shutil.rmtree(into, ignore_errors=True)
    pairs = [h.seconds / c.seconds for c, h in zip(current, history, strict=True)]
    ratio = median(pairs)
    report(
        f"history import {label} mem0->mnem, migrate --history vs --no-history, start to exit",
        ratio,
        "x",
        f"<= {TIME_TARGET:.1f}x",
        ratio <= TIME_TARGET,
    )
    cpu = median([h.cpu / c.cpu for c, h in zip(current, history, strict=True)])
    print(
        f"# the median of {len(pairs)} alternated pairs (current/history seconds): "
        + ", ".join(
            f"{c.seconds:.1f}/{h.seconds:.1f}" for c, h in zip(current, history, strict=True)
        )
        + f"; the processes' CPU {cpu:.2f}x",
        flush=True,
    )
    size = median(sizes["history"]) / median(sizes["current"])
    report(
        f"store with history {label} vs without, on disk",
        size,
        "x",
        f"<= {BUDGET:g}x, the budget",
        size <= BUDGET,
    )
    found = json.loads(history[-1].stdout)["history"]
    print(
        f"# {label}: {median(sizes['current']) / 1e6:.1f} MB without history, "
        f"{median(sizes['history']) / 1e6:.1f} MB with ({found['predicted_bytes'] / 1e6:.1f} MB "
        f"predicted); {found['versions']} versions of {found['memories']} memories in "
        f"{found['commits']} commits by {found['window']}"
        + (f", at most {found['layer_cap']} a window" if found["layer_cap"] else "")
        + f"; reasons {found['reasons'] or 'none'}",
        flush=True,
    )
    kept = workdir / f"history-{n}-{ATTEMPTS[n] - 1}"
    rm_ms = removal_cost(kept)
    removing = found["removal_seconds"]
    rest = history[-1].seconds - removing
    print(
        f"# {label}: of the last history import's {history[-1].seconds:.0f}s, "
        f"{found['write_seconds']:.0f}s wrote its commits and {removing:.0f}s removed the "
        f"{len(deletes)} deleted memories' nodes (mnem 0.0.7's rm reads the whole head state: "
        f"{rm_ms:.1f} ms a call at {n} nodes); without the removals "
        f"{rest / current[-1].seconds:.2f}x the import without history",
        flush=True,
    )
    shutil.rmtree(kept, ignore_errors=True)


def main() -> None:
    why = why_no_real_sdk()
    if why:
        print(f"# skipped: {why}")
        return
    for n in (SMALL, LARGE):
        with tempfile.TemporaryDirectory(prefix="memsync-bench-history-") as scratch:
            one_size(Path(scratch), n)


if __name__ == "__main__":
    main()
