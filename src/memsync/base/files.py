"""Files memsync creates: private (0600) and replaced atomically, so a crash never leaves half."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from memsync.base.paths import make_private_dir


@contextlib.contextmanager
def atomic_writer(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """Write to a temporary file beside PATH, fsync it, then rename it over PATH.

    On any error (a full disk included) the temporary file is removed and PATH is untouched.
    """
    path = Path(path)
    if not path.parent.exists():
        make_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        f: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_private_text(path: Path, text: str) -> None:
    """Atomically write a small text file readable only by its owner."""
    with atomic_writer(path) as f:
        f.write(text)
