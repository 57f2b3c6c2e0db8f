"""`make demo` as a user runs it: Mem0 -> mnem with the real SDK, the later edit winning the
conflict; and where mnem's SDK could not be built, a second Mem0 store and the build's reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import subprocess_env
from tests.mnem_sdk import real_sdk

# The demo as `make demo` runs it, in a Python where `import mnem` fails.
WITHOUT_MNEM = (
    "import runpy, sys; sys.modules['mnem'] = None; "
    "runpy.run_module('memsync.demo', run_name='__main__')"
)


def test_without_the_sdk_the_demo_says_why_and_still_shows_a_cutover(tmp_path: Path) -> None:
    demo = subprocess.run(
        [sys.executable, "-c", WITHOUT_MNEM],
        env=subprocess_env(TMPDIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    marker = Path(sys.prefix) / "mnem-sdk-unavailable"  # what `make mnem-sdk` said, if it did
    reason = marker.read_text().strip() if marker.exists() else "run `make demo`"
    assert f"new = a second Mem0 store (mnem's SDK is not importable here: {reason}" in demo.stdout
    assert demo.stdout.count("reconciled: both hold the same memories") == 2


def test_make_demo_shows_mem0_to_mnem_and_the_later_mnem_edit_winning(tmp_path: Path) -> None:
    """`make demo` (python -m memsync.demo) takes mnem as the new side when the SDK imports;
    the tea memory, edited in Mem0 and then in mnem, keeps mnem's edit, dated by its commit."""
    real_sdk()
    demo = subprocess.run(
        [sys.executable, "-m", "memsync.demo"],
        env=subprocess_env(TMPDIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "new = a mnem store" in demo.stdout
    assert "new [mnem] (active): reachable" in demo.stdout
    assert demo.stdout.count("reconciled: both hold the same memories") == 2
    assert "Speaks Portuguese and English" in demo.stdout  # written by the mnem agent
    assert "support-chat:_seq = 1 in mnem only" in demo.stdout  # exclude kept the counter
    assert "backup (2 scopes)" not in demo.stdout  # the mnem store holds alice's memories

    assert re.search(r"conflict on mem0:\S+: new won \(newest\)", demo.stdout), demo.stdout
    assert "old now holds 'Prefers matcha over coffee'" in demo.stdout
    conflicts = demo.stdout.split("$ memsync conflicts --all", 1)[1].split("\n$ ", 1)[0]
    new = re.search(r"new: 'Prefers matcha over coffee' \(updated (\S+)\)", conflicts)
    old = re.search(r"old: 'Prefers green tea over coffee' \(updated (\S+)\)", conflicts)
    assert new and old, conflicts
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", new[1]), conflicts
    assert "updated None" not in conflicts
