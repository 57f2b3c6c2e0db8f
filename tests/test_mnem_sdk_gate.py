"""The gate in tests/mnem_sdk.py: the real SDK is required unless its build said it cannot be.

`make mnem-sdk` writes the reason when build.sh exits 3 (no Rust toolchain) or ../shared is
absent; only then do the real-SDK tests skip, with that reason. A missing `import mnem`
without it is a failure that says what to run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import mnem_sdk


@pytest.fixture
def no_mnem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setitem(sys.modules, "mnem", None)  # `import mnem` raises ImportError
    marker = tmp_path / "mnem-sdk-unavailable"
    monkeypatch.setattr(mnem_sdk, "UNAVAILABLE", marker)
    return marker


def test_without_the_sdk_and_no_reason_the_test_fails_saying_what_to_run(no_mnem: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"run `make mnem-sdk`"):
        mnem_sdk.real_sdk()


def test_when_the_build_found_no_rust_the_test_skips_with_that_reason(no_mnem: Path) -> None:
    no_mnem.write_text("build.sh exit 3: no Rust toolchain >= 1.85 here\n")
    with pytest.raises(pytest.skip.Exception, match=r"build.sh exit 3: no Rust toolchain"):
        mnem_sdk.real_sdk()


def test_with_the_sdk_built_it_is_the_real_one() -> None:
    sdk = mnem_sdk.real_sdk()
    assert sdk.__name__ == "mnem" and hasattr(sdk.Store, "changed_by")
    assert "doubles" not in (sdk.__file__ or "")
