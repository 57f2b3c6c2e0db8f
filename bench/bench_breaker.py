"""A server killed mid-cycle, timed as a user times `memsync sync`, start to exit (issue 22 §4).

A pmm-dir holds 10,000 memories that a Mem0 server double (served over TCP in a process of its
own) does not have yet. The double lists fine, then exits at the first write it receives, so
every later connection to its port is refused. memsync must notice once: after a few connection
failures in a row it sends nothing more to that server this cycle, keeps the 10,000 writes
pending for the next one, says so in one line, and finishes the cycle. Before the breaker,
each write spent its whole retry schedule: 145 pending writes took 92 s and printed ~580 lines.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from tests.doubles.served import KEY, Served

from bench._common import QUICK, memsync_command, report, run_command
from memsync.base.pmm import Header, write_pmm_file
from memsync.base.records import Record

N = 2_000 if QUICK else 10_000
TARGET = 30.0


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="memsync-bench-breaker-"))
    source = root / "source"
    source.mkdir()
    write_pmm_file(
        source / "alice.pmm.jsonl",
        Header("bench", {"user_id": "alice"}),
        (
            Record(id=f"m{i:06d}", content=f"memory {i}: prefers tea", scope_key="alice")
            for i in range(N)
        ),
    )
    with Served("mem0-server") as served:
        config = root / "config.toml"
        config.write_text(
            '[sync]\nactive = "source"\n'
            f'[providers.source]\ntype = "pmm-dir"\npath = "{source}"\nscope_key = "alice"\n'
            f'[providers.remote]\ntype = "mem0-server"\nbase_url = "{served.base_url}"\n'
            'scope = { user_id = "alice" }\napi_key_env = "BENCH_KEY"\n'
        )
        served.die_on_write()
        env = {**os.environ, "MEMSYNC_HOME": str(root / "home"), "BENCH_KEY": KEY}
        command = run_command([*memsync_command(), "--config", str(config), "sync"], env)
        served.wait_dead()
    with sqlite3.connect(root / "home" / "state" / "staging.db") as conn:
        kept = conn.execute(
            "SELECT COUNT(*) FROM outbox WHERE provider = 'remote' AND state = 'pending' "
            "AND attempts = 0 AND run_id = (SELECT MAX(id) FROM runs)"
        ).fetchone()[0]
    lines = (command.stdout + command.stderr).splitlines()
    said = [line for line in lines if "unreachable" in line]
    assert kept == N and len(said) == 1, (kept, lines)
    report(
        f"e2e memsync sync, {N:,} pending writes to a server killed mid-cycle, start to exit",
        command.seconds,
        "s",
        f"< {TARGET:g}s",
        command.seconds < TARGET,
    )
    print(
        f"# {len(lines)} lines of output, {kept:,} writes kept pending (no attempt spent); "
        f"the line: {said[0]}",
        flush=True,
    )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
