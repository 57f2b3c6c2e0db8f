"""The scale curve: the staging side of a cycle (mirror + journal + plan) at 10k, 100k, 1M.

An in-process provider generates the memories on the fly; a second, empty provider is the
push target, so the plan has one create per memory (a dry run: nothing is written). Each
size runs in its own process so its peak RSS is its own. Time per memory should stay flat.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from bench._common import QUICK, in_subprocess, peak_rss_mb, report, timed

SIZES = (10_000, 100_000) if QUICK else (10_000, 100_000, 1_000_000)


def child(n: int) -> None:
    from bench.synthetic import SyntheticProvider
    from memsync.config import parse_config
    from memsync.engine.from_config import build_engine
    from memsync.engine.report import SyncOptions
    from memsync.providers.memory import MemoryProvider
    from memsync.staging import StagingStore

    config = parse_config(
        '[sync]\nactive = "source"\n'
        '[providers.source]\ntype = "pmm-dir"\npath = "/unused"\n'
        '[providers.replica]\ntype = "pmm-dir"\npath = "/unused"\ndirection = "push"\n'
    )
    providers = {
        "source": SyntheticProvider("source", n),
        "replica": MemoryProvider("replica", client_ids=True, family="pmm"),
    }
    db = Path(tempfile.mkdtemp(prefix="memsync-bench-scale-")) / "staging.db"
    result = {}

    def cycle() -> None:
        with StagingStore.open(db) as store:
            result["report"] = build_engine(config, store, providers).run_cycle(
                SyncOptions(dry_run=True)
            )  # type: ignore[arg-type]

    seconds = timed(cycle)
    assert result["report"].planned_total == n
    print(json.dumps({"seconds": seconds, "rss_mb": peak_rss_mb()}))


def main() -> None:
    runs = {n: in_subprocess("bench.bench_scale", str(n)) for n in SIZES}
    smallest, largest = SIZES[0], SIZES[-1]
    per = {n: runs[n]["seconds"] / n * 1e6 for n in SIZES}
    for n in SIZES:
        print(
            f"# staging side {n // 1000}k: {runs[n]['seconds']:.1f}s, {per[n]:.1f} us/memory, "
            f"peak rss {runs[n]['rss_mb']:.0f} MB"
        )
    ratio = per[largest] / per[smallest]
    report(
        f"staging time per memory {largest // 1000}k vs {smallest // 1000}k",
        ratio,
        "x",
        "<= 1.3x",
        ratio <= 1.3,
    )
    rss = runs[largest]["rss_mb"]
    report(f"staging peak rss at {largest // 1000}k", rss, " MB", "< 300 MB", rss < 300)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(int(sys.argv[1]))
    else:
        main()
