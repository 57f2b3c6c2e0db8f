"""`make bench`'s gate for the rows that need the real mnem SDK (bench/_mnem_sdk.py).

Skipped only where `make mnem-sdk` said the SDK cannot be built here, with its reason; a
missing `import mnem` without that reason stops the benchmark, saying what to run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench import _mnem_sdk


@pytest.fixture
def no_mnem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setitem(sys.modules, "mnem", None)  # `import mnem` raises ImportError
    marker = tmp_path / "mnem-sdk-unavailable"
    monkeypatch.setattr(_mnem_sdk, "UNAVAILABLE", marker)
    return marker


def test_the_build_said_why_so_only_the_mnem_rows_skip_with_that_reason(no_mnem: Path) -> None:
    no_mnem.write_text("../shared/mnem-sdk/build.sh not found\n")
    assert _mnem_sdk.why_no_real_sdk() == (
        "real mnem SDK not built here: ../shared/mnem-sdk/build.sh not found"
    )


def test_without_a_reason_the_benchmark_stops_saying_what_to_run(no_mnem: Path) -> None:
    with pytest.raises(SystemExit, match=r"run `make mnem-sdk`"):
        _mnem_sdk.why_no_real_sdk()


def test_with_the_sdk_built_nothing_is_skipped() -> None:
    assert _mnem_sdk.why_no_real_sdk() is None
