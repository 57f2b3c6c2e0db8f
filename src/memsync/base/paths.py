"""Where memsync keeps its files: platformdirs by default, everything under MEMSYNC_HOME if set."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP = "memsync"


@dataclass(frozen=True)
class Paths:
    """The directories and files one memsync instance uses."""

    config_file: Path
    state_dir: Path
    data_dir: Path
    runtime_dir: Path

    @property
    def database(self) -> Path:
        return self.state_dir / "staging.db"

    @property
    def backups_dir(self) -> Path:
        return self.data_dir / "backups"

    @property
    def lock_file(self) -> Path:
        return self.runtime_dir / "memsync.base.lock"

    def ensure(self) -> None:
        """Create the private directories (0700) memsync writes into."""
        for directory in (self.state_dir, self.data_dir, self.backups_dir, self.runtime_dir):
            make_private_dir(directory)


def make_private_dir(directory: Path) -> None:
    """Create a directory readable only by its owner; leave existing modes of parents alone."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if directory.stat().st_mode & 0o077:
        directory.chmod(0o700)


def home_paths(root: Path) -> Paths:
    """Every path under one home directory, as ``MEMSYNC_HOME=ROOT`` places them."""
    return Paths(
        config_file=root / "config" / "config.toml",
        state_dir=root / "state",
        data_dir=root / "data",
        runtime_dir=root / "run",
    )


def resolve_paths(config_override: str | os.PathLike[str] | None = None) -> Paths:
    """Paths for this process: MEMSYNC_HOME relocates all of them, --config overrides one."""
    home = os.environ.get("MEMSYNC_HOME")
    if home:
        paths = home_paths(Path(home).expanduser())
    else:
        with warnings.catch_warnings():
            # Without XDG_RUNTIME_DIR (no login session) platformdirs falls back to a private
            # /tmp/runtime-UID directory and warns; that fallback is what we want.
            warnings.simplefilter("ignore")
            runtime = platformdirs.user_runtime_path(APP, appauthor=False, ensure_exists=False)
        paths = Paths(
            config_file=platformdirs.user_config_path(APP, appauthor=False) / "config.toml",
            state_dir=platformdirs.user_state_path(APP, appauthor=False),
            data_dir=platformdirs.user_data_path(APP, appauthor=False),
            runtime_dir=runtime,
        )
    if config_override is not None:
        paths = Paths(
            config_file=Path(config_override).expanduser(),
            state_dir=paths.state_dir,
            data_dir=paths.data_dir,
            runtime_dir=paths.runtime_dir,
        )
    return paths
