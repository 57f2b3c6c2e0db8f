"""Which process holds a mnem store: the one ``flock`` on its files, as Linux lists it.

mnem allows one open handle per store, across processes, and programs such as ``mnem-mcp`` and
``mnem-langgraph`` keep theirs for as long as they run. When memsync finds a store busy, naming
the holder (pid, command line, since when it runs) tells the user which program to stop or
wrap. Read from ``/proc/locks`` and ``/proc/PID``, so looking never takes the lock itself, and
the agent is never disturbed; where these are missing (not Linux) the holder is unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

PROC = Path("/proc")
_MAX_COMMAND = 120


@dataclass(frozen=True)
class Holder:
    """A process holding a store's lock."""

    pid: int
    command: str | None  # its command line, shortened; None when it cannot be read
    started_at: datetime | None  # when the process started (it took the lock at or after)

    def describe(self) -> str:
        """'pid 4242 (mnem-mcp --store /x), running since 2026-09-01 09:12Z'."""
        text = f"pid {self.pid}"
        if self.command:
            text += f" ({self.command})"
        if self.started_at is not None:
            text += f", running since {self.started_at.strftime('%Y-%m-%d %H:%MZ')}"
        return text


def store_holder(path: Path, proc: Path = PROC) -> Holder | None:
    """The process holding the lock of the mnem store at PATH (its ``.mnem`` files), if any
    other than this one; None when nobody does or it cannot be told."""
    wanted = _lockable_files(path / ".mnem")
    if not wanted:
        return None
    try:
        lines = (proc / "locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] not in ("FLOCK", "POSIX", "OFDLCK"):
            continue  # a waiter, or a line this reader does not know
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if key in wanted and pid > 0 and pid != os.getpid():
            return Holder(pid, _command(proc, pid), _started(proc, pid))
    return None


def process(pid: int, proc: Path = PROC) -> Holder:
    """Process PID as a holder is described (its command line and start, where readable)."""
    return Holder(pid, _command(proc, pid), _started(proc, pid))


def _lockable_files(directory: Path) -> set[tuple[int, int, int]]:
    """(major, minor, inode) of each file directly in a store's ``.mnem`` directory."""
    found: set[tuple[int, int, int]] = set()
    try:
        entries = list(directory.iterdir())
    except OSError:
        return found
    for entry in entries:
        try:
            info = entry.stat()
        except OSError:
            continue
        if entry.is_file():
            found.add((os.major(info.st_dev), os.minor(info.st_dev), info.st_ino))
    return found


def _command(proc: Path, pid: int) -> str | None:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    words = [word for word in raw.decode(errors="replace").split("\0") if word]
    if words:
        words[0] = os.path.basename(words[0])
    command = " ".join(" ".join(words).split())  # one line, whatever the arguments hold
    if len(command) > _MAX_COMMAND:
        command = command[: _MAX_COMMAND - 1] + "…"
    return command or None


def _started(proc: Path, pid: int) -> datetime | None:
    """From the process's start (clock ticks after boot, /proc/PID/stat field 22)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        boot = next(
            int(line.split()[1])
            for line in (proc / "stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), tz=UTC)
