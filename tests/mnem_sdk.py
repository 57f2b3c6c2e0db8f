"""The real mnem SDK for tests: required, except where its build said there is no Rust here.

`make mnem-sdk` (and `.ci/run`) build the real SDK into the test environment with
``../shared/mnem-sdk/build.sh``. When that build cannot run at all (exit 3: no Rust
toolchain, or no ../shared folder) it leaves its reason in ``UNAVAILABLE`` and the real-SDK
tests skip with it. In every other case a missing ``import mnem`` is an error, not a skip.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

UNAVAILABLE = Path(sys.prefix) / "mnem-sdk-unavailable"  # written by `make mnem-sdk`


def unavailable_reason() -> str | None:
    """Why `make mnem-sdk` could not build the SDK here, if it said so."""
    try:
        return UNAVAILABLE.read_text().strip() or "no reason given"
    except FileNotFoundError:
        return None


def real_sdk() -> ModuleType:
    """`import mnem`; a skip with build.sh's reason, or a failure that says what to run."""
    try:
        import mnem
    except ImportError as exc:
        reason = unavailable_reason()
        if reason is not None:
            pytest.skip(f"real mnem SDK not built here: {reason}")
        pytest.fail(
            f"the real mnem SDK is not importable ({exc}): run `make mnem-sdk` "
            "(../shared/mnem-sdk/build.sh .venv/bin/python)",
            pytrace=False,
        )
    return mnem
