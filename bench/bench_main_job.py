"""The main job, Mem0 → mnem, against what a user would run instead: ADR-0024's import.

The baseline is ``bench/adr0024_import.py``, the import written from ADR-0024's semantics (a
rising ``top_k`` until a call comes back short, ``Store.add`` for each memory with its
``mem0:{id}`` node id, provenance mapped, ``created_at`` as the event time, one commit). It
and memsync run as whole commands, start to exit, alternated, each into a new mnem store; the
figure is the median of the pairs' ratios, and every run is printed. One local Mem0 store per
size (Qdrant on disk, the hash embedder), seeded once per run in bulk and reused by every row.

- ``memsync migrate --from mem0 --to mnem`` into a store that does not exist yet
  (``create = true``): ≤ 1.10x the script, at 10k and at 100k memories.
- ``memsync sync``, the first sync into a new store: ≤ 1.05x the script, at 10k and 100k.
- An update cycle after 1% of 100k memories were edited in Mem0, against a cycle with no
  change, in one process as the daemon runs them (≤ 1.5x); a cycle after 0.1% is printed
  beside it, with what a change costs and what mnem's own commit and diff cost at 100k nodes.
- memsync's own time per memory with the stores and staging on tmpfs, the disk taken out
  (printed, no target).

BENCH_FSYNC_US=400 adds the first-sync rows again on a modelled disk: both commands write their
stores (and memsync its staging) on tmpfs, with ``bench/slowsync.c`` preloaded, which makes
every fsync and fdatasync cost that many microseconds more, paid where a disk's wait is. A
shared machine's disk varies more between two runs than the 5% the row judges; the modelled
disk does not, and it still charges each mnem ``add`` its sync with Python's GIL held, as a
disk does. The real disk's rows are printed too.

BENCH_QUICK=1: 1k and 10k instead of 10k and 100k. ``python bench/run_all.py
bench.bench_main_job`` runs these rows alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import QUICK, Command, median, memsync_command, report, run_command, timed
from bench._mnem_sdk import why_no_real_sdk
from bench.bench_first_sync import env, mem0_table, provider, seed

SMALL, LARGE = (1_000, 10_000) if QUICK else (10_000, 100_000)
ATTEMPTS = {SMALL: 5, LARGE: 3}  # alternated pairs; the disk's noise between runs is large
MIGRATE_TARGET, SYNC_TARGET, CYCLE_TARGET = 1.10, 1.05, 1.5
FSYNC_US = int(os.environ.get("BENCH_FSYNC_US") or 0)  # the modelled disk's sync, in us
SHIM = Path(__file__).with_name("slowsync.c")


def seeded(root: Path, n: int) -> None:
    """N memories in a local Mem0 store at ROOT, written in bulk (``bench_first_sync.seed``);
    on tmpfs first where there is one, then copied to disk: the same files, without the
    local Qdrant's many small synchronous writes on a shared disk (minutes at 100k)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        seed(root, n)
        return
    with tempfile.TemporaryDirectory(prefix="memsync-bench-seed-", dir=shm) as scratch:
        seed(Path(scratch) / "source", n)
        shutil.copytree(Path(scratch) / "source", root)


def label(n: int) -> str:
    return f"{n // 1000}k"


def modelled_disk(scratch: Path) -> dict[str, str] | None:
    """The environment that makes tmpfs a disk whose every sync costs ``FSYNC_US`` more (the
    shim built into SCRATCH); None, said, without a C compiler."""
    shim = scratch / "slowsync.so"
    built = subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(SHIM), "-ldl"],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        print(f"# BENCH_FSYNC_US: cannot build {SHIM.name}: {built.stderr.strip()[-300:]}")
        return None
    return {"LD_PRELOAD": str(shim), "FSYNC_DELAY_US": str(FSYNC_US)}


def script(source: Path, target: Path, extra: dict[str, str] | None = None) -> Command:
    done = run_command(
        [sys.executable, "-m", "bench.adr0024_import", str(source), str(target)],
        {**env(), **(extra or {})},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def memsync_run(
    workdir: Path, source: Path, target: Path, *command: str, extra: dict[str, str] | None = None
) -> Command:
    """A memsync command as a user runs it, into a mnem store made on its first write (its
    home in WORKDIR; EXTRA: more of the environment)."""
    home = workdir / f"home-{target.name}"
    config = workdir / f"{target.name}.toml"
    config.write_text(
        '[sync]\nactive = "mnem"\n'
        + mem0_table("mem0", source)
        + f'\n[providers.mnem]\ntype = "mnem"\npath = "{target}"\ncreate = true\n'
        # ADR-0024's import is the current state: so is the sync it is measured against (the
        # first sync that brings Mem0's past is bench_history's row)
        + "import_history = false\n"
    )
    done = run_command(
        [*memsync_command(), "--config", str(config), *command],
        {**env(), "MEMSYNC_HOME": str(home), **(extra or {})},
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    shutil.rmtree(home, ignore_errors=True)
    return done


def migrate(
    workdir: Path, source: Path, target: Path, extra: dict[str, str] | None = None
) -> Command:
    return memsync_run(
        workdir, source, target, "migrate", "--from", "mem0", "--to", "mnem", extra=extra
    )


def first_sync(
    workdir: Path, source: Path, target: Path, extra: dict[str, str] | None = None
) -> Command:
    return memsync_run(workdir, source, target, "sync", extra=extra)


def against_the_script(
    workdir: Path,
    source: Path,
    n: int,
    what: str,
    run: Callable[..., Command],
    target: float,
    extra: dict[str, str] | None = None,
    where: str = "",
) -> list[Command]:
    """RUN against the script, alternated; the stores (and memsync's home) in WORKDIR, EXTRA
    in both commands' environment, WHERE said in the row."""
    scripts, runs = [], []
    for attempt in range(ATTEMPTS[n]):  # alternated, each into a new store, then dropped
        for commands, command in ((scripts, script), (runs, None)):
            into = workdir / f"into-{what.replace(' ', '-')}-{len(commands)}-{attempt}"
            if command is not None:
                commands.append(command(source, into, extra))
            else:
                commands.append(run(workdir, source, into, extra=extra))
            shutil.rmtree(into, ignore_errors=True)
    pairs = [m.seconds / s.seconds for s, m in zip(scripts, runs, strict=True)]
    ratio = median(pairs)
    report(
        f"{what} {label(n)} mem0->mnem{where}, memsync vs the ADR-0024 import script, "
        "start to exit",
        ratio,
        "x",
        f"<= {target:.2f}x",
        ratio <= target,
    )
    cpu = median([m.cpu / s.cpu for s, m in zip(scripts, runs, strict=True)])
    print(
        f"# the median of {len(pairs)} alternated pairs (script/memsync, in the order run): "
        + ", ".join(f"{s.seconds:.1f}/{m.seconds:.1f}" for s, m in zip(scripts, runs, strict=True))
        + f"; best of each {min(c.seconds for c in scripts):.1f}s / "
        f"{min(c.seconds for c in runs):.1f}s; the processes' CPU, median of the pairs, {cpu:.2f}x",
        flush=True,
    )
    return runs


def on_a_modelled_disk(workdir: Path) -> None:
    """The first-sync rows again, the stores and memsync's staging on tmpfs behind the shim
    (BENCH_FSYNC_US: see the module docstring); the sources stay where they are."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        print("# BENCH_FSYNC_US: no writable /dev/shm here: no modelled disk")
        return
    with tempfile.TemporaryDirectory(prefix="memsync-bench-disk-", dir=shm) as scratch:
        extra = modelled_disk(Path(scratch))
        if extra is None:
            return
        where = f" on a modelled disk (tmpfs, +{FSYNC_US} us a sync)"
        for n in (SMALL, LARGE):
            source = workdir / f"source-{n}"
            args = (n, "first sync", first_sync, SYNC_TARGET, extra, where)
            against_the_script(Path(scratch), source, *args)


def own_time_on_tmpfs(workdir: Path, n: int) -> None:
    """The same commands with the stores and staging on tmpfs: what is left is CPU."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        print("# no writable /dev/shm here: memsync's own time per memory not measured")
        return
    with tempfile.TemporaryDirectory(prefix="memsync-bench-main-", dir=shm) as scratch:
        root = Path(scratch)
        shutil.copytree(workdir / f"source-{n}", root / "source")
        times: dict[str, list[float]] = {"script": [], "migrate": [], "sync": []}
        for attempt in range(2):
            for name, command in (("script", None), ("migrate", migrate), ("sync", first_sync)):
                into = root / f"{name}-{attempt}"
                done = (
                    script(root / "source", into)
                    if command is None
                    else command(root, root / "source", into)
                )
                times[name].append(done.seconds)
                shutil.rmtree(into, ignore_errors=True)
    by_hand = min(times["script"])
    for name in ("migrate", "sync"):
        mine = min(times[name])
        print(
            f"# memsync's own time a memory, stores and staging on tmpfs ({label(n)}, best of 2): "
            f"{name} {(mine - by_hand) / n * 1e6:.0f} us (script {by_hand:.1f}s, memsync "
            f"{mine:.1f}s)",
            flush=True,
        )


def update_cycles(workdir: Path, n: int) -> None:
    """In one process, as the daemon runs them: first sync, quiet cycles, 0.1% and 1% edited."""
    import mnem

    from memsync.config import parse_config
    from memsync.engine.from_config import build_engine
    from memsync.engine.report import SyncOptions
    from memsync.providers.mnem.provider import MnemProvider
    from memsync.staging import StagingStore

    source = workdir / f"source-{n}"
    target = workdir / "cycles-mnem"
    mnem.init(str(target))
    config = parse_config(
        '[sync]\nactive = "target"\n'
        '[providers.source]\ntype = "pmm-dir"\npath = "/unused"\n'
        '[providers.target]\ntype = "pmm-dir"\npath = "/unused"\n'
    )
    providers: dict[str, Any] = {
        "source": provider("source", source),
        "target": MnemProvider("target", target),
    }
    db = workdir / "cycles.db"

    def cycle() -> None:
        with StagingStore.open(db) as store:
            result = build_engine(config, store, providers).run_cycle(SyncOptions())
            assert result.exit_code == 0, result.as_dict()

    first = timed(cycle)
    timed(cycle)  # lists memsync's own first commit (a diff naming every node): not quiet yet
    quiet = timed(cycle)
    timings: dict[str, tuple[float, float]] = {}  # share -> (the cycle, the quiet one after)
    edited = 0
    for share, changes in (("0.1%", n // 1000), ("1%", n // 100)):
        opened = providers["source"]
        opened.open()
        items = opened.memory.get_all(filters={"user_id": "alice"}, top_k=n + 1)["results"]
        for item in items[edited : edited + changes]:
            opened.memory.update(item["id"], item["memory"] + " (edited)")
        opened.close()
        edited += changes
        timings[share] = (timed(cycle), timed(cycle))
    # Against the quiet cycle that follows it: the same Mem0 store, whose local Qdrant lists
    # more slowly after updates (its own cost), and the same mnem store.
    ratio = timings["1%"][0] / timings["1%"][1]
    report(
        f"update cycle, 1% of {label(n)} edited in mem0, vs a no-change cycle (mem0->mnem, "
        "in one process)",
        ratio,
        "x",
        f"<= {CYCLE_TARGET}x",
        ratio <= CYCLE_TARGET,
    )
    per_change = {
        share: (cycle_s - quiet_s) / (n // (1000 if share == "0.1%" else 100))
        for share, (cycle_s, quiet_s) in timings.items()
    }
    print(
        f"# first sync {first:.1f}s, no-change {quiet:.2f}s; 0.1% edited "
        f"{timings['0.1%'][0]:.2f}s against {timings['0.1%'][1]:.2f}s no-change after it "
        f"({timings['0.1%'][0] / timings['0.1%'][1]:.2f}x); 1% edited {timings['1%'][0]:.2f}s "
        f"against {timings['1%'][1]:.2f}s; what a change costs beyond a no-change cycle: "
        f"{per_change['0.1%'] * 1000:.2f} ms at 0.1%, {per_change['1%'] * 1000:.2f} ms at 1% "
        "(in proportion to the changes when the two agree; the no-change cycles' own spread "
        "is printed above)",
        flush=True,
    )
    floor_of_mnem(target)


def floor_of_mnem(root: Path) -> None:
    """What mnem itself costs per cycle at this size, whatever memsync does: one commit of
    one node, and one diff between two commits (a listing after a write)."""
    import gc

    commit, diff = _probe(root)
    gc.collect()  # the store's handle goes with it
    print(
        f"# mnem's own floor at this store's size: a one-node commit {commit * 1000:.0f} ms, "
        f"a diff between two commits {diff * 1000:.0f} ms",
        flush=True,
    )


def _probe(root: Path) -> tuple[float, float]:
    import mnem

    store = mnem.open(str(root))
    before = store.head_commit()
    store.add("bench:probe", "a probe")
    commit = timed(lambda: store.commit("bench probe", author="bench"))
    after = store.head_commit()
    return commit, timed(lambda: store.diff(before, after))


def main() -> None:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    reason = why_no_real_sdk()
    if reason is not None:
        print(f"# skipped: {reason}")
        return
    workdir = Path(tempfile.mkdtemp(prefix="memsync-bench-main-"))
    os.environ["MEMSYNC_HOME"] = str(workdir / "home")
    for n in (SMALL, LARGE):  # seeded once each, in bulk, reused by every row
        started = time.perf_counter()
        seeded(workdir / f"source-{n}", n)
        print(f"# seeded {label(n)} Mem0 memories in {time.perf_counter() - started:.0f}s")
    for n in (SMALL, LARGE):
        source = workdir / f"source-{n}"
        against_the_script(workdir, source, n, "migrate", migrate, MIGRATE_TARGET)
        against_the_script(workdir, source, n, "first sync", first_sync, SYNC_TARGET)
    if FSYNC_US:
        on_a_modelled_disk(workdir)
    own_time_on_tmpfs(workdir, SMALL)
    update_cycles(workdir, LARGE)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
