"""Shared fixtures: an isolated MEMSYNC_HOME and a way to run the real CLI.

Also the suite's hygiene, set once here: the caller's MEMSYNC_* and MEM0_* variables never
reach memsync (a developer's own MEMSYNC_HOME or MEM0_API_KEY must not steer a test), and
Hypothesis keeps no example database in the working tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import configuration as hypothesis_configuration
from hypothesis import settings

from memsync.cli import main
from memsync.providers.mem0.server_features import KNOWN

SCRUBBED = ("MEMSYNC_", "MEM0_")
# Variables that configure the tests themselves (live servers, example counts), not memsync.
TEST_SETTINGS = ("MEMSYNC_IT_", "MEMSYNC_MEM0_", "MEMSYNC_SM_", "MEMSYNC_CRASH_")

for _name in list(os.environ):
    if _name.startswith(SCRUBBED) and not _name.startswith(TEST_SETTINGS):
        del os.environ[_name]
os.environ["MEM0_TELEMETRY"] = "False"

settings.register_profile("memsync", database=None)  # no .hypothesis/ examples database
settings.load_profile("memsync")
hypothesis_configuration.set_hypothesis_home_dir(
    Path(tempfile.gettempdir()) / f"memsync-tests-hypothesis-{os.getuid()}"
)


def subprocess_env(**extra: str) -> dict[str, str]:
    """This process's environment for a child, with no MEMSYNC_*/MEM0_* but what is passed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    return {**env, "MEM0_TELEMETRY": "False", **extra}


@pytest.fixture(autouse=True)
def _servers_met_afresh() -> Iterator[None]:
    """Each test meets its own Mem0 servers: what one proved is kept for the process
    (``server_features.KNOWN``), and a double another test served at the same URL (or a
    reused port) may prove otherwise."""
    yield
    KNOWN.clear()


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
    env = subprocess_env(MEMSYNC_HOME=str(home), **(env_extra or {}))
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


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """One real PostgreSQL server for the session (``tests/postgres_server.py``); a machine
    without it fails here with what to install, never skips."""
    from tests.postgres_server import running_postgres

    with running_postgres() as server:
        yield server


@pytest.fixture
def mem0_database(postgres: Any) -> str:
    """A fresh database holding upstream's empty ``memories`` table: its superuser URL."""
    from tests.postgres_server import memories_table

    url = postgres.url(postgres.create_database())
    memories_table(url)
    return url
