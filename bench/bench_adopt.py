"""Adoption at 100k: two stores holding the same memories under different ids, first sync.

Two in-process providers generate the same 100,000 texts under different ids (and 100 of
their own each). With adoption on, the first sync pairs the shared ones in SQL and writes 200
memories; with it off, the same sync copies every shared memory into the other side. Each
run is a process of its own, so its peak RSS is its own. The adoption step's own time is
printed too, as a share of its sync.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from bench._common import QUICK, in_subprocess, peak_rss_mb, report, timed

N = 20_000 if QUICK else 100_000
OWN = 100


def child(mode: str) -> None:
    from bench.synthetic import SyntheticProvider
    from memsync.base.records import Record
    from memsync.config import parse_config
    from memsync.engine import cycle as engine_module
    from memsync.engine.from_config import build_engine
    from memsync.engine.report import SyncOptions
    from memsync.staging import StagingStore

    class Side(SyntheticProvider):
        """N shared texts under this side's own ids, then OWN texts only it holds."""

        def _record(self, i: int) -> Record:
            record = super()._record(i)
            record.id = f"{self.name}-{i:09d}"
            if i >= N:
                record.content = f"{self.name} only {i}"
            return record

    config = parse_config(
        f'[sync]\nactive = "new"\nadopt = "{mode}"\nmax_delete_count = 1000000\n'
        '[providers.old]\ntype = "pmm-dir"\npath = "/unused/old"\n'
        '[providers.new]\ntype = "pmm-dir"\npath = "/unused/new"\n'
    )
    providers = {"old": Side("old", N + OWN), "new": Side("new", N + OWN)}
    db = Path(tempfile.mkdtemp(prefix="memsync-bench-adopt-")) / "staging.db"
    spent = {"adopt": 0.0}
    real_adopt = engine_module.adopt

    def timed_adopt(*args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return real_adopt(*args, **kwargs)
        finally:
            spent["adopt"] += time.perf_counter() - started

    engine_module.adopt = timed_adopt  # type: ignore[assignment]
    result = {}

    def cycle() -> None:
        with StagingStore.open(db) as store:
            result["report"] = build_engine(config, store, providers).run_cycle(SyncOptions())  # type: ignore[arg-type]

    seconds = timed(cycle)
    done = result["report"]
    assert done.exit_code == 0, done.as_dict()
    written = sum(o.written for o in done.providers.values())
    expected = 2 * OWN if mode == "content" else 2 * (N + OWN)
    assert written == expected, (written, expected)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "adopt_seconds": spent["adopt"],
                "written": written,
                "rss_mb": peak_rss_mb(),
            }
        )
    )


def main() -> None:
    on = in_subprocess("bench.bench_adopt", "content")
    off = in_subprocess("bench.bench_adopt", "off")
    k = N // 1000
    print(
        f"# adopt on: {on['seconds']:.1f}s ({on['written']} written, adoption step "
        f"{on['adopt_seconds']:.1f}s = {on['adopt_seconds'] / on['seconds']:.0%}), "
        f"peak rss {on['rss_mb']:.0f} MB; adopt off: {off['seconds']:.1f}s "
        f"({off['written']} written), peak rss {off['rss_mb']:.0f} MB"
    )
    ratio = on["seconds"] / off["seconds"]
    report(
        f"adopt {k}k shared: first sync time vs the same sync with adopt off",
        ratio,
        "x",
        "<= 1.2x",
        ratio <= 1.2,
    )
    rss = on["rss_mb"]
    report(f"adopt {k}k shared: peak RSS", rss, " MB", "< 300 MB", rss < 300)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1])
    else:
        main()
