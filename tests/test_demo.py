"""`make demo` where mnem's SDK could not be built: a second Mem0 store, and the build's reason.

(With the SDK, `tests/test_e2e_mnem.py::test_make_demo_shows_mem0_to_mnem` runs it.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import subprocess_env

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
