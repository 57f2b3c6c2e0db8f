"""Process locks in the runtime directory: one daemon at a time, one sync cycle at a time.

flock locks vanish with their process, so a crashed daemon never leaves a stale lock; the
pid written inside is only for the message that names the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.paths import Paths, make_private_dir
from memsync.base.records import utc_now_iso

DAEMON_LOCK = "daemon.lock"


class ProcessLock:
    def __init__(self, path: Path, role: str) -> None:
        self.path = path
        self.role = role
        self._fd: int | None = None

    def acquire(self, timeout: float = 0.0, poll: float = 0.1) -> None:
        """Take the lock, waiting up to timeout seconds; LockHeld names the holder's pid."""
        try:
            make_private_dir(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise MemsyncError(
                f"cannot create the lock file {self.path} ({exc.strerror or exc}); set "
                "XDG_RUNTIME_DIR to a directory of yours, or MEMSYNC_HOME"
            ) from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockHeld(self._held_message(timeout)) from None
                time.sleep(poll)
        os.ftruncate(fd, 0)
        os.write(
            fd, json.dumps({"pid": os.getpid(), "role": self.role, "since": utc_now_iso()}).encode()
        )
        self._fd = fd

    def _held_message(self, waited: float) -> str:
        """Who holds the lock, in words: the daemon by name when it is the daemon."""
        holder = self.holder()
        pid = holder.get("pid")
        who = f"pid {pid}" if pid else "another process"
        after = f"; waited {waited:.0f}s" if waited else ""
        daemon = ProcessLock(self.path.parent / DAEMON_LOCK, "daemon")
        if self.path.name == DAEMON_LOCK:
            since = f", since {holder['since']}" if holder.get("since") else ""
            return (
                f"a memsync daemon is already running ({who}{since}); stop it first "
                f"(`systemctl --user stop memsync` or `kill {pid or 'PID'}`)"
            )
        if pid and is_locked(daemon.path) and daemon.holder().get("pid") == pid:
            return (
                f"the memsync daemon ({who}) is running a sync cycle{after}; try again when "
                "it finishes (`memsync status` shows the daemon; `memsync sync --wait SECONDS` "
                "waits longer)"
            )
        what = holder.get("role", self.role)
        return f"another memsync {what} ({who}) holds {self.path.name}{after}"

    def holder(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.path.read_text() or "{}"))
        except (OSError, ValueError):
            return {}

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ProcessLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def daemon_lock(paths: Paths) -> ProcessLock:
    return ProcessLock(paths.runtime_dir / DAEMON_LOCK, "daemon")


def cycle_lock(paths: Paths) -> ProcessLock:
    return ProcessLock(paths.lock_file, "sync cycle")


def is_locked(path: Path) -> bool:
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def read_daemon_info(paths: Paths) -> dict[str, Any]:
    """Whether a daemon runs (its lock is held), with its pid and start time."""
    lock = daemon_lock(paths)
    if not is_locked(lock.path):
        return {"running": False}
    holder = lock.holder()
    return {"running": True, "pid": holder.get("pid"), "since": holder.get("since")}
