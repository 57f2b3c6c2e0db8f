"""`memsync sync` timed as a user times it, start to exit, against HTTP doubles served over TCP.

Each double (Mem0's server, the Mem0 Platform, Hindsight) runs in a process of its own under
uvicorn (``tests.doubles.served``), every request delayed by the latency a network round trip adds.
memsync runs as the real command in a subprocess, from a pmm-dir holding 2,000 memories:

- **creates**: the first sync writes all of them into the double;
- **updates**: every memory is edited in the pmm-dir, and the next sync carries the edits;
- **deletes**: every memory is removed from the pmm-dir, and `sync --force-delete` removes them.

The **floor** of a run is what its requests cost if they overlapped perfectly: the requests
the double received during that command × the latency ÷ the concurrency (8). At 50 ms a request
a run must take at most 1.15 × its floor + 2 s: memsync's start-up, its listing, planning and
bookkeeping hide behind the requests in flight, apart from a fixed two seconds.

At 0 ms the requests cost nothing, so what is left is memsync's own work: its process's CPU
time (user + system, from the kernel's accounting of that process alone), per memory written,
at most 3 ms. The double's CPU is measured in its own process and printed beside it, as is the
wall time; neither is counted in memsync's figure.

``# bare client`` times a plain httpx loop making the same creates 8 at a time against the
same double: what the double and this machine cost without memsync.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.doubles.served import KEY, Served

from bench._common import QUICK, Command, memsync_command, report, run_command
from memsync.base.pmm import Header, write_pmm_file
from memsync.base.records import Record

LATENCY = 0.05
CONCURRENCY = 8
N = 400 if QUICK else 2_000
CPU_TARGET_MS = 3.0
KINDS = ("mem0-server", "mem0-platform", "hindsight")


def target_table(kind: str, base_url: str) -> str:
    common = f'base_url = "{base_url}"\napi_key_env = "BENCH_KEY"\nconcurrency = {CONCURRENCY}\n'
    if kind == "hindsight":
        return f'type = "hindsight"\nbank = "alice"\n{common}'
    return f'type = "{kind}"\nscope = {{ user_id = "alice" }}\n{common}'


class World:
    """A pmm-dir of N memories synced into one served double by the real `memsync` command."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.root = Path(tempfile.mkdtemp(prefix=f"memsync-bench-e2e-{served.kind}-"))
        self.source = self.root / "source"
        self.source.mkdir()
        self.config = self.root / "config.toml"
        self.config.write_text(
            '[sync]\nactive = "source"\n'
            f'[providers.source]\ntype = "pmm-dir"\npath = "{self.source}"\nscope_key = "alice"\n'
            f"[providers.remote]\n{target_table(served.kind, served.base_url)}"
        )
        self.env = {
            **os.environ,
            "MEMSYNC_HOME": str(self.root / "home"),
            "BENCH_KEY": KEY,
            "MEM0_TELEMETRY": "False",
        }
        self.write_source(range(N), edited=False)

    def write_source(self, ids: range, *, edited: bool) -> None:
        suffix = " (edited)" if edited else ""
        stamp = "2026-01-02T00:00:00+00:00" if edited else "2026-01-01T00:00:00+00:00"
        records = (
            Record(
                id=f"m{i:06d}",
                content=f"memory {i}: prefers tea, team {i % 97}{suffix}",
                metadata={"topic": "drinks", "n": i},
                scope_key="alice",
                created_at="2026-01-01T00:00:00+00:00",
                updated_at=stamp,
            )
            for i in ids
        )
        write_pmm_file(
            self.source / "alice.pmm.jsonl", Header("bench", {"user_id": "alice"}), records
        )

    def sync(self, *args: str) -> tuple[Command, int, float, str]:
        """The command, the requests the double received meanwhile, the double's CPU, and
        what the report says memsync wrote into the double."""
        before = self.served.stats()
        command = run_command(
            [*memsync_command(), "--config", str(self.config), "sync", "--json", *args],
            self.env,
        )
        after = self.served.stats()
        if command.returncode != 0:
            raise RuntimeError(
                f"memsync sync exited {command.returncode}:\n{command.stdout}\n{command.stderr}"
            )
        remote = json.loads(command.stdout)["providers"]["remote"]
        wrote = f"{remote['written']:,} written"
        if remote.get("replanned"):
            wrote += f", {remote['replanned']:,} held for the next cycle (changed since the mirror)"
        if remote.get("state") == "partial":
            wrote += f"; its listing partial: {remote['partial_reason']}"
        return (
            command,
            after["requests"] - before["requests"],
            after["cpu"] - before["cpu"],
            wrote,
        )

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


STEPS: list[tuple[str, Callable[[World], None], tuple[str, ...]]] = [
    ("creates", lambda world: None, ()),
    ("updates", lambda world: world.write_source(range(N), edited=True), ()),
    ("deletes", lambda world: world.write_source(range(0), edited=False), ("--force-delete",)),
]


def at_latency(kind: str) -> None:
    """Creates, updates and deletes at LATENCY: end-to-end seconds against the floor."""
    with Served(kind, LATENCY) as served:
        world = World(served)
        try:
            for step, prepare, args in STEPS:
                prepare(world)
                command, requests, _, wrote = world.sync(*args)
                floor = requests * LATENCY / CONCURRENCY
                limit = 1.15 * floor + 2.0
                report(
                    f"e2e memsync sync {N / 1000:g}k {step} into {kind} "
                    f"({LATENCY * 1000:.0f} ms/request), start to exit",
                    command.seconds,
                    "s",
                    f"<= {limit:.1f}s = 1.15 x floor {floor:.1f}s + 2s",
                    command.seconds <= limit,
                )
                print(
                    f"# {requests} requests, {command.seconds / floor:.2f}x the floor; "
                    f"memsync's CPU {command.cpu:.1f}s; {wrote}",
                    flush=True,
                )
        finally:
            world.close()


def own_time(kind: str) -> None:
    """Creates, updates and deletes at 0 ms: memsync's own CPU per memory written."""
    with Served(kind, 0.0) as served:
        world = World(served)
        try:
            for step, prepare, args in STEPS:
                prepare(world)
                command, requests, double_cpu, wrote = world.sync(*args)
                per_memory = command.cpu / N * 1000
                report(
                    f"memsync CPU per memory, {N / 1000:g}k {step} into {kind} (0 ms/request), "
                    "start to exit",
                    per_memory,
                    " ms",
                    f"<= {CPU_TARGET_MS:g} ms",
                    per_memory <= CPU_TARGET_MS,
                )
                print(
                    f"# wall {command.seconds:.2f}s for {requests} requests; the double's own "
                    f"CPU {double_cpu:.2f}s, in its process; {wrote}",
                    flush=True,
                )
        finally:
            world.close()


def bare_client() -> None:
    """The same creates from a plain threaded httpx loop: the double's and the machine's cost."""
    import httpx

    with Served("mem0-server", LATENCY) as served:
        client = httpx.Client(
            base_url=served.base_url,
            headers={"X-API-Key": KEY},
            limits=httpx.Limits(max_connections=CONCURRENCY),
        )

        def create(i: int) -> int:
            body = {
                "messages": [{"role": "user", "content": f"memory {i}: prefers tea"}],
                "user_id": "alice",
                "metadata": {"topic": "drinks", "n": i},
                "infer": False,
            }
            return client.post("/memories", json=body).status_code

        started = time.perf_counter()
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            statuses = set(pool.map(create, range(N)))
        seconds = time.perf_counter() - started
        client.close()
        assert statuses == {200}, statuses
        floor = N * LATENCY / CONCURRENCY
        print(
            f"# bare client: {N} creates into mem0-server, {CONCURRENCY} at a time, "
            f"{seconds:.1f}s ({seconds / floor:.2f}x the floor {floor:.1f}s): the double's "
            "and the machine's own overhead",
            flush=True,
        )


def main() -> None:
    bare_client()
    for kind in KINDS:
        at_latency(kind)
    for kind in KINDS:
        own_time(kind)


if __name__ == "__main__":
    main()
