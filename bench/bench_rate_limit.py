"""A first sync of 5,000 memories into the Mem0 Platform at its documented 1,000 requests a minute.

The Platform double enforces the limit over a sliding window on every route
(tests/doubles/sliding_limit.py: the hardest reading of the documented limit for a client) and
answers ``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset``; each request also waits 20 ms,
as a round trip does. memsync paces with its sliding-window limiter
(``providers/http/pacing.py``); the baseline ("before") is the same sync with a limiter that
ignores the headers: a shared pause on each 429's ``Retry-After`` is all it has.

Scaled down to run in ``make bench``: the window is 10 s instead of 60 s (memsync is told so,
``rate_limit = "1000/10s"``), with the same 1,000 requests a window and the same 5,000
memories, so the sync spans the same five windows. A shorter
window would measure the machine instead of the limit: on two busy cores, 1,000 adds take
longer than 5 s. BENCH_QUICK=1 skips the baseline run. Timed as a user times the command, start
to exit: from building the providers and opening the staging store to closing them.

The floor is the least time the limit allows: the cycle's own work before its first add
(mirror and plan, measured in the same run: the first add's arrival at the double), then
``ceil(adds / limit) - 1`` whole windows, then the last window's adds at the latency floor
(adds x latency / concurrency). Nothing can finish sooner; the ratio is the time to that floor.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")

from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.doubles.sliding_limit import SlidingLimit

from bench._common import QUICK, report
from bench.synthetic import SyntheticProvider
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.from_config import build_engine
from memsync.engine.report import SyncOptions
from memsync.providers.http.pacing import RateLimiter, Ticket
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.staging import StagingStore

N = 5_000
LIMIT = 1_000  # adds a window, as documented (a minute on the Platform)
WINDOW = 10.0  # seconds: the minute, scaled down
LATENCY = 0.02
CONCURRENCY = 8
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
# Retries wait as long as the 429 asks (up to a window) and never run out during the bench.
PATIENT = RetryPolicy(attempts=50, max_elapsed=3600.0, max_retry_after=3600.0)


class HeadersIgnored(RateLimiter):
    """memsync before pacing: the headers are not read; a 429's Retry-After is all it has."""

    def done(self, ticket: Ticket, headers: Any) -> None:
        return


def first_sync(*, paced: bool) -> dict[str, float]:
    started = time.monotonic()
    limit = SlidingLimit(limit=LIMIT, window=WINDOW)
    double = Mem0PlatformDouble(api_key=KEY, metadata_mode="merge", rate_limit=limit)
    double.faults.latency = LATENCY
    remote = Mem0PlatformProvider(
        "remote",
        {"user_id": "alice"},
        secret=Secret(KEY, "$KEY"),
        base_url="https://api.mem0.test",
        transport=double.transport(),
        retry=PATIENT,
        concurrency=CONCURRENCY,
        rate_limit=(LIMIT, WINDOW),
    )
    if not paced:
        remote._client_args["pacer"] = HeadersIgnored()
    providers = {"source": SyntheticProvider("source", N), "remote": remote}
    db = Path(tempfile.mkdtemp(prefix="memsync-bench-ratelimit-")) / "staging.db"
    with StagingStore.open(db) as store:
        result = build_engine(parse_config(CONFIG), store, providers).run_cycle(  # type: ignore[arg-type]
            SyncOptions()
        )
    remote.close()
    seconds = time.monotonic() - started
    assert result.exit_code == 0, result.as_dict()
    assert len(double.memories) == N, len(double.memories)
    assert limit.first_at is not None
    sent = sum(limit.allowed.values())  # the adds and the listing's requests; a 429 is none
    windows = math.ceil(sent / LIMIT)
    last = sent - (windows - 1) * LIMIT
    floor = (limit.first_at - started) + (windows - 1) * WINDOW + last * LATENCY / CONCURRENCY
    return {
        "seconds": seconds,
        "floor": floor,
        "requests": len(double.faults.seen),
        "throttled": sum(limit.refused.values()),
        "before_first_add": limit.first_at - started,
    }


def main() -> None:
    before = None if QUICK else first_sync(paced=False)
    after = first_sync(paced=True)
    ratio = after["seconds"] / after["floor"]
    name = (
        f"rate-limited first sync {N / 1000:g}k into mem0-platform "
        f"({LIMIT} requests in any {WINDOW:g} s, every route, {LATENCY * 1000:.0f} ms/request)"
    )
    report(
        f"{name} vs the limit's floor",
        ratio,
        "x",
        "<= 1.05x",
        ratio <= 1.05 and after["throttled"] == 0,
    )
    print(
        f"answers of 429 in that sync: {after['throttled']:.0f} (0)"
        + ("" if after["throttled"] == 0 else "  <-- MISSED"),
        flush=True,
    )
    baseline = (
        "skipped (BENCH_QUICK)"
        if before is None
        else f"{before['seconds']:.1f}s, {before['seconds'] / before['floor']:.2f}x its floor, "
        f"{before['throttled']:.0f} answers of 429 in {before['requests']:.0f} requests"
    )
    print(
        f"# paced: {after['seconds']:.1f}s, floor {after['floor']:.1f}s (first add after "
        f"{after['before_first_add']:.1f}s), {after['throttled']:.0f} answers of 429 in "
        f"{after['requests']:.0f} requests; before (Retry-After only): {baseline}",
        flush=True,
    )


if __name__ == "__main__":
    main()
