"""A full disk while memsync writes its staging database: a clear error, no corruption.

The kernel's file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) makes every write past
the limit fail with EFBIG, as a full disk fails with ENOSPC, in a real `memsync sync`.
"""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_memsync, subprocess_env, write_config


def limited(limit: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_mid_sync_is_a_clear_error_and_the_database_survives(home: Path) -> None:
    write_config(
        home,
        f'[sync]\nactive = "a"\n[providers.a]\ntype = "pmm-dir"\npath = "{home / "a"}"\nscope_key = "s"\n'
        f'[providers.b]\ntype = "pmm-dir"\npath = "{home / "b"}"\nscope_key = "s"\n',
    )
    source = home / "seed.jsonl"
    lines = [
        '{"pmm_version":1,"exported_at":"2026-11-30T09:00:00Z","source_provider":"x","scope":{}}'
    ]
    lines += [
        json.dumps({"id": f"m{i}", "content": f"memory {i} " + "x" * 200}) for i in range(3000)
    ]
    source.write_text("\n".join(lines) + "\n")
    assert run_memsync(home, "import", str(source), "--into", "a").returncode == 0
    assert run_memsync(home, "sync", "--provider", "a").returncode == 0  # a database exists
    database = home / "state" / "staging.db"
    size = database.stat().st_size

    env = subprocess_env(MEMSYNC_HOME=str(home))
    full = subprocess.run(
        [sys.executable, "-m", "memsync", "sync"],
        env=env,
        text=True,
        capture_output=True,
        preexec_fn=limited(size + 64 * 1024),
        timeout=120,
    )
    assert full.returncode != 0
    assert "Traceback" not in full.stderr
    assert full.stderr.count("\n") == 1 and "free some space" in full.stderr

    conn = sqlite3.connect(database)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    after = run_memsync(home, "sync", "--json")
    assert after.returncode == 0, after.stderr
    assert run_memsync(home, "verify", "a", "b").returncode == 0
