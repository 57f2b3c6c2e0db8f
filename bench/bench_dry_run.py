"""What a dry run costs now that it works on a scratch copy of the staging database.

`memsync sync --dry-run` against `memsync sync`, each timed as a user times the command
(a process, start to exit), on a synced world of 10,000 memories in PMM directories (the
active store, a two-way copy, a push-only backup: 30,000 mirrored records). The dry run
copies the staging database (SQLite's backup API) before it mirrors and plans; the target
says that copy stays a small part of the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._common import QUICK, report, timed

N = 2_000 if QUICK else 10_000
ROOT = Path(__file__).resolve().parent.parent

CONFIG = """
[sync]
active = "notes"
max_delete_count = 100000
[providers.notes]
type = "pmm-dir"
path = "{home}/notes"
scope_key = "alice"
[providers.copy]
type = "pmm-dir"
path = "{home}/copy"
scope_key = "alice"
[providers.backup]
type = "pmm-dir"
path = "{home}/backup"
scope_key = "alice"
direction = "push"
"""


def memsync(home: Path, *args: str) -> None:
    env = {**os.environ, "MEMSYNC_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "memsync", *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="memsync-bench-dry-run-"))
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(CONFIG.format(home=home))
    notes = home / "notes"
    notes.mkdir()
    header = {"pmm_version": 1, "exported_at": "2026-12-01T00:00:00Z", "source_provider": "x"}
    lines = [json.dumps({**header, "scope": {}})] + [
        json.dumps(
            {
                "id": f"m{i}",
                "content": f"memory {i}: likes tea",
                "metadata": {},
                "scope_key": "alice",
            }
        )
        for i in range(N)
    ]
    (notes / "alice.pmm.jsonl").write_text("\n".join(lines) + "\n")
    memsync(home, "sync")  # the first cycle: 2N writes

    # Interleaved, the fastest of each: a noisy machine drifts, and drifts both alike.
    reals, dries = [], []
    for _ in range(5):
        reals.append(timed(lambda: memsync(home, "sync")))
        dries.append(timed(lambda: memsync(home, "sync", "--dry-run")))
    real, dry = min(reals), min(dries)
    size = (home / "state" / "staging.db").stat().st_size / 1e6
    ratio = dry / real
    report(
        f"dry run vs sync, quiet, {N // 1000}k memories ({size:.0f} MB staging)",
        ratio,
        "x",
        "<= 1.5x",
        ratio <= 1.5,
    )


if __name__ == "__main__":
    main()
