"""Shared helpers for the benchmarks: timing, peak memory, the `name: value (target)` line."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

QUICK = os.environ.get("BENCH_QUICK") == "1"


def timed(function: Callable[[], Any]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def best_of(runs: int, function: Callable[[], Any]) -> float:
    """The fastest of several runs: the least disturbed by a noisy machine."""
    return min(timed(function) for _ in range(runs))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_subprocess(module: str, *args: str) -> dict[str, Any]:
    """Run `python -m module args` and parse the JSON it prints last (a clean peak RSS)."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def report(name: str, value: float, unit: str, target: str, ok: bool) -> None:
    mark = "" if ok else "  <-- MISSED"
    print(f"{name}: {value:.2f}{unit} ({target}){mark}", flush=True)
