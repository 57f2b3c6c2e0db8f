"""Fault points for the crash tests: named places in a cycle where a test can kill memsync.

Disabled unless MEMSYNC_KILL_AT is set (tests only): ``MEMSYNC_KILL_AT=replay:result:17``
sends SIGKILL to this process the 17th time it passes ``replay:result``. Costs one dict
lookup per point when disabled.

``killed_inside(name)`` marks a call that runs in a library holding the GIL (mnem's commit,
in Rust), where no thread of this process could act: when it is the target, a watcher process
is started first, and it sends SIGKILL once this thread has spent ``INSIDE_NS`` of CPU time in
the call (read from /proc, the kernel's own accounting) and only if the call has not returned.
It writes what it did to MEMSYNC_KILL_REPORT: ``killed inside NAME after N us of CPU``, or
``missed NAME``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_TARGET = os.environ.get("MEMSYNC_KILL_AT", "")
_NAME, _, _COUNT = _TARGET.rpartition(":") if _TARGET.count(":") >= 2 else (_TARGET, "", "1")
_SEEN: dict[str, int] = {}
INSIDE_NS = 2_000_000  # 2 ms of the thread's CPU time spent in the call


def _due(name: str) -> bool:
    if not _TARGET or name != _NAME:
        return False
    _SEEN[name] = _SEEN.get(name, 0) + 1
    return _SEEN[name] == int(_COUNT or 1)


def fault_point(name: str) -> None:
    """Die here, hard, if a test asked for it."""
    if _due(name):
        os.kill(os.getpid(), signal.SIGKILL)


@contextmanager
def killed_inside(name: str) -> Iterator[None]:
    """Around a call a test may ask memsync to be killed inside (see the module docstring)."""
    if not _due(name):
        yield
        return
    report = os.environ.get("MEMSYNC_KILL_REPORT", os.devnull)
    tid = threading.get_native_id()
    code = "from memsync.base.faults import watch; watch()"
    watcher = subprocess.Popen(
        [sys.executable, "-c", code, str(os.getpid()), str(tid), name, report],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert watcher.stdin is not None and watcher.stdout is not None
    watcher.stdout.readline()  # "ready": it holds /proc open and waits for the call
    watcher.stdin.write(b"go\n")
    watcher.stdin.flush()
    try:
        yield
    finally:
        watcher.stdin.write(b"returned\n")
        watcher.stdin.close()
        watcher.wait()


def _cpu_ns(stat: int) -> int:
    return int(os.pread(stat, 256, 0).split()[0])  # schedstat: ns on the CPU, first field


def watch() -> None:
    """The watcher process of ``killed_inside``: argv is PID TID NAME REPORT."""
    pid, tid, name, report = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
    stat = os.open(f"/proc/{pid}/task/{tid}/schedstat", os.O_RDONLY)
    print("ready", flush=True)
    sys.stdin.readline()  # "go": the call is about to start
    os.set_blocking(sys.stdin.fileno(), False)
    start = _cpu_ns(stat)
    while True:
        spent = _cpu_ns(stat) - start
        returned = sys.stdin.buffer.read() or b""
        if b"returned" in returned:
            report.write_text(f"missed {name}: it returned after {spent // 1000} us of CPU\n")
            return
        if spent >= INSIDE_NS:
            os.kill(pid, signal.SIGKILL)
            report.write_text(f"killed inside {name} after {spent // 1000} us of CPU\n")
            return
        time.sleep(0.0002)
