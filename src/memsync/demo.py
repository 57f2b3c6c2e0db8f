"""`make demo`: memsync's main job on an embedded default, offline, with no accounts.

Runs the real commands in a throwaway MEMSYNC_HOME so nothing of the user's is touched.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

SAMPLE = [
    {"id": "m1", "content": "Prefers tea over coffee", "metadata": {"topic": "drinks"}},
    {"id": "m2", "content": "Works on the Lisbon team", "metadata": {"topic": "work"}},
    {"id": "m3", "content": "Allergic to peanuts", "metadata": {"topic": "health"}},
    {"id": "m4", "content": "", "metadata": {}},
]


def run(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    print(f"\n$ memsync {shlex.join(args)}", flush=True)
    env = {**os.environ, "MEMSYNC_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-m", "memsync", *args], env=env, text=True, capture_output=True
    )
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if check and result.returncode != 0:
        raise SystemExit(f"demo step failed with exit {result.returncode}")
    return result


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="memsync-demo-"))
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f"""[sync]
active = "notes"

[providers.notes]
type = "pmm-dir"
path = "{home / "notes"}"
scope_key = "alice"

[providers.backup]
type = "pmm-dir"
path = "{home / "backup"}"
direction = "push"
"""
    )
    sample = home / "sample.pmm.jsonl"
    header = {
        "pmm_version": 1,
        "exported_at": "2026-11-30T09:00:00Z",
        "source_provider": "mem0",
        "scope": {"user_id": "alice"},
    }
    lines = [json.dumps(header)] + [json.dumps({**r, "scope_key": "alice"}) for r in SAMPLE]
    sample.write_text("\n".join(lines) + "\n")
    print(f"memsync demo in {home} (deleted by nothing: look around afterwards)")
    run(home, "check")
    run(home, "import", str(sample), "--into", "notes", check=False)
    run(home, "import", str(sample), "--into", "notes", check=False)
    run(home, "export", "--provider", "notes")
    run(home, "status")


if __name__ == "__main__":
    main()
