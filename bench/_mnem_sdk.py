"""Whether the benchmarks can use the real mnem SDK, by the same gate as the tests.

`make bench` builds the SDK as `make test` does (`make mnem-sdk`). Where that build could not
run (no Rust toolchain, no ../shared) it left its reason in the venv, and only the rows that
need the real SDK are skipped, with that reason. Any other missing `import mnem` stops the
benchmark with what to run: a skip must never hide a broken build.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

UNAVAILABLE = Path(sys.prefix) / "mnem-sdk-unavailable"  # written by `make mnem-sdk`


def why_no_real_sdk() -> str | None:
    """None when `import mnem` works; the build's reason when it said it cannot build."""
    try:
        importlib.import_module("mnem")
    except ImportError as exc:
        try:
            reason = UNAVAILABLE.read_text().strip() or "no reason given"
        except FileNotFoundError:
            raise SystemExit(
                f"the real mnem SDK is not importable ({exc}): run `make mnem-sdk` "
                "(../shared/mnem-sdk/build.sh .venv/bin/python)"
            ) from None
        return f"real mnem SDK not built here: {reason}"
    return None
