"""memsync against HTTP providers, in one process: requests counted per memory, and a quiet
cycle whose every request costs 50 ms, as a round trip does.

The doubles in tests/doubles speak each API's protocol in-process; ``faults.latency`` makes
each request wait 50 ms before it is served, the way a network hop (or a server checking a
key with bcrypt) does. Requests per memory are those a cycle made beyond those of a no-change
cycle (which only lists), counted at the double.

"Listing pages alone" is the platform's pages fetched and decoded by a bare client, one
after another, as a script that only lists would do it; memsync's own listing alone (pages
fetched ahead, records mapped) is printed beside it, to show what staging adds on top.

How long syncs take against the floor (requests x latency / concurrency), timed as a user
times `memsync sync`, start to exit, is ``bench_http_e2e``.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")

import httpx
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.doubles.mem0_server_app import Mem0ServerDouble

from bench._common import QUICK, report
from bench.synthetic import SyntheticProvider
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.from_config import build_engine
from memsync.engine.report import SyncOptions
from memsync.providers.base import Provider
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.platform import MAX_PAGE_SIZE, Mem0PlatformProvider
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.staging import StagingStore

LATENCY = 0.05
CONCURRENCY = 8
N = 400 if QUICK else 2_000
N_BEFORE = 100 if QUICK else 200
N_QUIET = 2_000 if QUICK else 10_000
KEY = "bench-key-0123456789"
CONFIG = """
[sync]
active = "source"
[providers.source]
type = "pmm-dir"
path = "/unused/source"
[providers.remote]
type = "pmm-dir"
path = "/unused/remote"
"""
PATIENT = RetryPolicy(attempts=2, max_elapsed=600.0)


class Target:
    """One double and a way to build memsync's provider for it."""

    def __init__(self, name: str, double: Any, build: Callable[[int], Provider]) -> None:
        self.name = name
        self.double = double
        self.build = build

    def requests(self) -> int:
        return len(self.double.faults.seen)


def mem0_server() -> Target:
    double = Mem0ServerDouble(api_key=KEY)
    return Target(
        "mem0-server",
        double,
        lambda c: Mem0ServerProvider(
            "remote",
            "http://127.0.0.1:8888",
            {"user_id": "alice"},
            secret=Secret(KEY, "$KEY"),
            transport=double.transport(),
            retry=PATIENT,
            concurrency=c,
        ),
    )


def mem0_platform() -> Target:
    double = Mem0PlatformDouble(api_key=KEY, metadata_mode="merge")
    return Target(
        "mem0-platform",
        double,
        lambda c: Mem0PlatformProvider(
            "remote",
            {"user_id": "alice"},
            secret=Secret(KEY, "$KEY"),
            base_url="https://api.mem0.test",
            transport=double.transport(),
            retry=PATIENT,
            concurrency=c,
        ),
    )


class Run:
    """A source of generated memories synced into one target, cycle by cycle."""

    def __init__(self, target: Target, n: int, concurrency: int) -> None:
        self.target = target
        self.source = SyntheticProvider("source", n)
        self.providers = {"source": self.source, "remote": target.build(concurrency)}
        self.db = Path(tempfile.mkdtemp(prefix="memsync-bench-http-")) / "staging.db"
        self.config = parse_config(CONFIG)

    def cycle(self, *, full: bool = False) -> tuple[float, int, dict[str, Any]]:
        """Seconds, requests made, and the report of one cycle."""
        before = self.target.requests()
        started = time.perf_counter()
        with StagingStore.open(self.db) as store:
            result = build_engine(self.config, store, self.providers).run_cycle(  # type: ignore[arg-type]
                SyncOptions(full=full)
            )
        seconds = time.perf_counter() - started
        assert result.exit_code == 0, result.as_dict()
        return seconds, self.target.requests() - before, result.as_dict()


def first_sync(make: Callable[[], Target]) -> Run:
    """A first sync of N memories into a fresh double, for the cycles measured after it.

    How long a first sync takes, start to exit, against the floor is ``bench_http_e2e``'s
    figure: it times the real command against a double served over TCP.
    """
    run = Run(make(), N, CONCURRENCY)
    run.cycle()
    return run


def per_memory(run: Run, label: str, target: float, edited: int) -> None:
    """Requests per memory written by a cycle, beyond those of a no-change cycle.

    Requests to the memory endpoints count per memory. Listing-level requests beyond the
    quiet cycle's (the freshness check before each replay batch, issue 12: one per batch, not
    one per write) are printed on their own line, so neither hides in the other.
    """
    seen = run.target.double.faults.seen
    run.target.double.faults.latency = 0.0
    start = len(seen)
    run.cycle()
    quiet_requests = seen[start:]
    listing_kinds = {(s.method, s.path) for s in quiet_requests}
    run.source.edited = set(range(edited))
    start = len(seen)
    _, _, changed = run.cycle()
    written = changed["providers"]["remote"]["written"]
    assert written == edited, changed
    cycle = seen[start:]
    writes = [s for s in cycle if (s.method, s.path) not in listing_kinds]
    listing_extra = len(cycle) - len(writes) - len(quiet_requests)
    value = len(writes) / written
    report(label, value, " requests", f"<= {target:g}", value <= target)
    print(
        f"# {len(writes)} requests to the memory endpoints for {written} updates "
        f"({value:.4f}); {listing_extra} listing-level request(s) beyond the quiet cycle's "
        "(the freshness check, one per replay batch)",
        flush=True,
    )


def created_per_memory() -> None:
    run = Run(mem0_server(), N_BEFORE, CONCURRENCY)
    _, requests, first = run.cycle()
    _, listing_only, quiet = run.cycle()  # nothing to write: the cost of listing and probing
    assert quiet["actions_total"] == 0, quiet
    written = first["providers"]["remote"]["written"]
    assert written == N_BEFORE, first
    value = (requests - listing_only) / written
    report("requests per created memory (mem0-server)", value, " requests", "<= 1.0", value <= 1.0)


def pages_alone(double: Mem0PlatformDouble, page_size: int) -> float:
    """Seconds to fetch and decode every page of the scope with a bare client, one page
    after another, as a script that only lists would: the listing's own cost."""
    http = httpx.Client(transport=double.transport(), base_url="https://api.mem0.test")
    started = time.perf_counter()
    page, held = 1, 0
    while True:
        answer = http.post(
            "/v3/memories/",
            params={"page": page, "page_size": page_size},
            json={"filters": {"user_id": "alice"}},
            headers={"Authorization": f"Token {KEY}"},
        ).json()
        held += len(answer["results"])
        if not answer["next"]:
            break
        page += 1
    seconds = time.perf_counter() - started
    http.close()
    assert held == N_QUIET
    return seconds


def quiet_platform() -> None:
    """A full no-change cycle over 10k platform memories against listing its pages alone."""
    run = Run(mem0_platform(), N_QUIET, CONCURRENCY)
    run.cycle()  # the first sync, without latency: only the quiet cycle is measured
    double = run.target.double
    double.faults.latency = LATENCY
    cycles, alone, own = [], [], []
    for _ in range(2):  # alternated, the better of each: the machine is shared
        seconds, requests, result = run.cycle(full=True)
        assert result["actions_total"] == 0, result
        cycles.append(seconds)
        alone.append(pages_alone(double, MAX_PAGE_SIZE))
        provider = run.target.build(CONCURRENCY)
        started = time.perf_counter()
        listing = provider.listing()
        assert sum(len(p.records) for p in listing.pages()) == N_QUIET and listing.complete
        own.append(time.perf_counter() - started)
        provider.close()
    ratio = min(cycles) / min(alone)
    report(
        f"http no-change cycle {N_QUIET / 1000:g}k platform ({LATENCY * 1000:.0f} ms/request) "
        "vs listing pages alone",
        ratio,
        "x",
        "<= 1.2x",
        ratio <= 1.2,
    )
    print(
        f"# quiet cycle {min(cycles):.2f}s ({requests} requests, full listing); the pages alone, "
        f"one after another {min(alone):.2f}s; memsync's listing alone (pages ahead, records "
        f"mapped) {min(own):.2f}s, so staging and planning add {min(cycles) / min(own):.2f}x",
        flush=True,
    )


class SlowEmbedder:
    """A remote embedder's cost: each call waits LATENCY, as a network round trip does."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.config = inner.config
        self.calls = 0

    def embed(self, text: Any, memory_action: str | None = None) -> Any:
        self.calls += 1
        time.sleep(LATENCY)
        return self.inner.embed(text, memory_action)


def mem0_oss_remote_embedder() -> None:
    """A first sync into mem0-oss whose embedder costs 50 ms a call: concurrency 8 against 1."""
    from tests.doubles.mem0_server_app import offline_memory

    from memsync.providers.mem0.oss import Mem0OssProvider

    n = N_BEFORE
    seconds: dict[int, float] = {}
    for concurrency in (1, CONCURRENCY):
        memory = offline_memory()
        memory.embedding_model = SlowEmbedder(memory.embedding_model)
        target = Mem0OssProvider.from_memory(
            "remote", memory, {"user_id": "alice"}, concurrency=concurrency
        )
        run = Run(Target("mem0-oss", None, lambda c, t=target: t), n, concurrency)
        run.target.requests = lambda: 0  # type: ignore[method-assign]
        seconds[concurrency], _, _ = run.cycle()
        assert memory.embedding_model.calls == n
    ratio = seconds[CONCURRENCY] / seconds[1]
    print(
        f"# mem0-oss first sync {n} with a {LATENCY * 1000:.0f} ms embedder: "
        f"{seconds[1] / n * 1000:.1f} ms/memory at concurrency 1, "
        f"{seconds[CONCURRENCY] / n * 1000:.1f} at {CONCURRENCY} "
        f"(embeddings ahead, adds one at a time): {ratio:.2f}x",
        flush=True,
    )


def main() -> None:
    platform = first_sync(mem0_platform)
    per_memory(platform, "requests per updated memory (mem0-platform, batch)", 0.01, N)
    server = first_sync(mem0_server)
    per_memory(server, "requests per updated memory (mem0-server)", 1.0, N // 10)
    created_per_memory()
    quiet_platform()
    mem0_oss_remote_embedder()


if __name__ == "__main__":
    main()
