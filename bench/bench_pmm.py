"""PMM export and import of 1,000,000 records: flat memory, and time against a plain loop.

Baselines measured in the same run: a plain loop of json.dumps + write over the same
records (for export and import alike, as the issue asks), and a plain json.loads loop over
the lines (the fairer baseline for import). Each side runs in a subprocess so its peak RSS
is its own.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bench._common import QUICK, in_subprocess, peak_rss_mb, report, timed

SIZES = (10_000, 100_000) if QUICK else (100_000, 1_000_000)


def synthetic(n: int):  # type: ignore[no-untyped-def]
    from memsync.base.records import Record

    for i in range(n):
        yield Record(
            id=f"mem0:{i:08d}",
            content=f"memory number {i}: prefers tea over coffee, works on team {i % 97}",
            metadata={"topic": "drinks", "n": i},
            scope_key="alice",
            created_at="2026-01-01T00:00:00+00:00",
            provenance={"source": "user"},
        )


def child(mode: str, n: int, path: str) -> None:
    from memsync.base.pmm import Header, open_pmm, record_to_pmm, write_pmm_file

    if mode == "baseline-write":
        records = [record_to_pmm(r) for r in synthetic(min(n, 1000))]
        elapsed = timed(lambda: _plain_write(path, records, n))
    elif mode == "export":
        elapsed = timed(lambda: write_pmm_file(Path(path), Header("mem0"), synthetic(n)))
    elif mode == "baseline-read":
        elapsed = timed(lambda: _plain_read(path))
    else:

        def read() -> None:
            with open_pmm(path) as reader:
                for _ in reader:
                    pass

        elapsed = timed(read)
    print(json.dumps({"seconds": elapsed, "rss_mb": peak_rss_mb()}))


def _plain_write(path: str, sample: list[dict[str, object]], n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            record = dict(sample[i % len(sample)])
            record["id"] = f"mem0:{i:08d}"
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def _plain_read(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        for line in f:
            json.loads(line)


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="memsync-bench-pmm-"))
    rss = {}
    for n in SIZES:
        file = str(workdir / f"{n}.pmm.jsonl")
        base = str(workdir / f"{n}.plain.jsonl")
        baseline = in_subprocess("bench.bench_pmm", "baseline-write", str(n), base)
        export = in_subprocess("bench.bench_pmm", "export", str(n), file)
        plain_read = in_subprocess("bench.bench_pmm", "baseline-read", str(n), file)
        imported = in_subprocess("bench.bench_pmm", "import", str(n), file)
        rss[n] = (export["rss_mb"], imported["rss_mb"])
        label = f"{n // 1000}k"
        ratio = export["seconds"] / baseline["seconds"]
        report(f"pmm export {label} vs json.dumps+write loop", ratio, "x", "<= 3x", ratio <= 3)
        ratio = imported["seconds"] / baseline["seconds"]
        report(f"pmm import {label} vs json.dumps+write loop", ratio, "x", "<= 3x", ratio <= 3)
        ratio = imported["seconds"] / plain_read["seconds"]
        report(f"pmm import {label} vs json.loads loop", ratio, "x", "informational", True)
        report(
            f"pmm export {label} peak rss",
            export["rss_mb"],
            " MB",
            "< 150 MB",
            export["rss_mb"] < 150,
        )
        report(
            f"pmm import {label} peak rss",
            imported["rss_mb"],
            " MB",
            "< 150 MB",
            imported["rss_mb"] < 150,
        )
        for path in (file, base):
            os.unlink(path)
    small, large = SIZES
    growth = max(rss[large][0] - rss[small][0], rss[large][1] - rss[small][1])
    report(
        f"pmm peak rss growth {small // 1000}k -> {large // 1000}k",
        growth,
        " MB",
        "flat: < 20 MB",
        growth < 20,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1], int(sys.argv[2]), sys.argv[3])
    else:
        main()
