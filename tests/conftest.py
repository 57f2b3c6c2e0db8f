"""Shared fixtures: an isolated MEMSYNC_HOME and a way to run the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memsync.cli import main

os.environ.setdefault("MEM0_TELEMETRY", "False")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private MEMSYNC_HOME with its config directory created."""
    root = tmp_path / "home"
    (root / "config").mkdir(parents=True)
    monkeypatch.setenv("MEMSYNC_HOME", str(root))
    yield root


@pytest.fixture
def cli(home: Path):  # type: ignore[no-untyped-def]
    """Invoke memsync in-process (fast); returns click's Result."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return invoke


def run_memsync(
    home: Path, *args: str, env_extra: dict[str, str] | None = None, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """Run memsync as a real subprocess, for behaviour that needs a process of its own."""
    env = {**os.environ, "MEMSYNC_HOME": str(home), **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "memsync", *args],
        env=env,
        text=True,
        capture_output=True,
        timeout=120,
        **kwargs,  # type: ignore[arg-type]
    )


def write_config(home: Path, text: str) -> Path:
    path = home / "config" / "config.toml"
    path.write_text(text)
    return path
