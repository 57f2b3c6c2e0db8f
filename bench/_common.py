"""Shared helpers for the benchmarks: timing, peak memory, commands timed start to exit, and
the ``name: value (target)`` line."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUICK = os.environ.get("BENCH_QUICK") == "1"
ROOT = Path(__file__).resolve().parent.parent


def timed(function: Callable[[], Any]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def best_of(runs: int, function: Callable[[], Any]) -> float:
    """The fastest of several runs: the least disturbed by a noisy machine."""
    return min(timed(function) for _ in range(runs))


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_subprocess(module: str, *args: str) -> dict[str, Any]:
    """Run `python -m module args` and parse the JSON it prints last (a clean peak RSS)."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


@dataclass(frozen=True)
class Command:
    """One command as a user runs it: wall seconds start to exit, and its own CPU seconds."""

    seconds: float
    cpu: float  # user + system time of that process (and any it waited for), not the machine's
    returncode: int
    stdout: str
    stderr: str


def memsync_command() -> list[str]:
    """The ``memsync`` console script of this environment (what a user types)."""
    script = Path(sys.executable).with_name("memsync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memsync"]


def run_command(args: Sequence[str], env: Mapping[str, str] | None = None) -> Command:
    """Run a command to its exit: wall time, and its CPU from the kernel's accounting
    (``wait4``), which a loaded machine does not inflate as it does the wall time."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            list(args), env=dict(env) if env else None, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Command(
            seconds,
            usage.ru_utime + usage.ru_stime,
            process.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )


def startup_seconds(runs: int = 5) -> tuple[float, float]:
    """``memsync --version`` start to exit: the median wall and CPU seconds of ``runs``."""
    commands = [run_command([*memsync_command(), "--version"]) for _ in range(runs)]
    assert all(c.returncode == 0 for c in commands), commands[0].stderr
    return median([c.seconds for c in commands]), median([c.cpu for c in commands])


def report(name: str, value: float, unit: str, target: str, ok: bool) -> None:
    mark = "" if ok else "  <-- MISSED"
    print(f"{name}: {value:.2f}{unit} ({target}){mark}", flush=True)
