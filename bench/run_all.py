"""`make bench`: every benchmark, each printing `name: value (target)` lines.

Every figure is a ratio against a baseline measured in the same run (these machines are
noisy: absolute times drift), or a count of work done. BENCH_QUICK=1 runs smaller sizes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# These run first, in this order (cheap ones before long ones); every other bench/bench_*.py
# follows in name order, so a new module is picked up without being listed here.
FIRST = [
    "bench.bench_staging",
    "bench.bench_pmm",
    "bench.bench_engine",
    "bench.bench_scale",
    "bench.bench_mem0_listing",
    "bench.bench_mnem_work",
    "bench.bench_first_sync",
    "bench.bench_main_job",
    "bench.bench_adopt",
    "bench.bench_http",
    "bench.bench_rate_limit",
    "bench.bench_server_team",
    "bench.bench_scopes",
    "bench.bench_status_page",
    "bench.bench_live",
    "bench.bench_dry_run",
]


def all_benches() -> list[str]:
    found = sorted(f"bench.{path.stem}" for path in (ROOT / "bench").glob("bench_*.py"))
    return [m for m in FIRST if m in found] + [m for m in found if m not in FIRST]


def main() -> int:
    env = {**os.environ, "MEM0_TELEMETRY": "False", "PYTHONPATH": str(ROOT)}
    # Start-up is timed as a user meets it: with the bytecode cache Python writes by default.
    # (This machine's shells set PYTHONDONTWRITEBYTECODE, which recompiles every memsync
    # module at each start, a fifth of a second of CPU that no installed memsync pays.)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    failed = []
    began = time.monotonic()
    for module in sys.argv[1:] or all_benches():
        print(f"## {module}", flush=True)
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", module], cwd=ROOT, env=env, text=True, capture_output=True
        )
        lines = [
            line for line in result.stdout.splitlines() if ": " in line or line.startswith("#")
        ]
        print("\n".join(lines), flush=True)
        if result.returncode != 0:
            failed.append(module)
            print(result.stderr[-2000:], file=sys.stderr)
        print(f"# ({time.monotonic() - started:.0f}s)", flush=True)
    print(f"# total {time.monotonic() - began:.0f}s", flush=True)
    if failed:
        print(f"failed to run: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
