"""Fault points for the crash tests: named places in a cycle where a test can kill memsync.

Disabled unless MEMSYNC_KILL_AT is set (tests only): ``MEMSYNC_KILL_AT=replay:result:17``
sends SIGKILL to this process the 17th time it passes ``replay:result``. Costs one dict
lookup per point when disabled.

``killed_inside(name)`` marks a call that runs in a library holding the GIL (mnem's commit,
in Rust), where no thread of this process could act: when it is the target, a watcher process
is started first, and it kills this process once this thread has spent ``INSIDE_NS`` of CPU
time in the call (read from /proc, the kernel's own accounting, counted from this thread's CPU
time when the call starts, however late the watcher is scheduled) and only if the call has not
returned. It stops the process first (SIGSTOP), notes where the thread stopped (the file of the
innermost code on its stack outside the C library, from its registers and stack in /proc), then
sends SIGKILL: the kill lands exactly where it looked. It writes what it did to
MEMSYNC_KILL_REPORT: ``killed inside NAME after N us of CPU, stopped in FILE``, or ``missed
NAME``.
"""

from __future__ import annotations

import contextlib
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
    _may_inspect(watcher.pid)
    watcher.stdout.readline()  # "ready": it holds /proc open and waits for the call
    # The watcher counts from this thread's CPU time now, not from whenever it is scheduled
    # next; and this thread yields to it (nice 19), so that on a busy machine its kill lands
    # soon after the CPU time it waits for, not at the end of the call.
    watcher.stdin.write(f"go {_cpu_ns_of(tid)}\n".encode())
    watcher.stdin.flush()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, 19)
    try:
        yield
    finally:
        watcher.stdin.write(b"returned\n")
        watcher.stdin.close()
        watcher.wait()


def _may_inspect(pid: int) -> None:
    """Let the watcher PID read this process's registers and stack: under Yama's ptrace_scope 1
    only an ancestor may, unless the process names it (PR_SET_PTRACER; a no-op without Yama)."""
    import ctypes  # a test's kill only: not imported by every memsync process

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(0x59616D61, pid, 0, 0, 0)


def _cpu_ns(stat: int) -> int:
    return int(os.pread(stat, 256, 0).split()[0])  # schedstat: ns on the CPU, first field


def _cpu_ns_of(tid: int) -> int:
    stat = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
    try:
        return _cpu_ns(stat)
    finally:
        os.close(stat)


def watch() -> None:
    """The watcher process of ``killed_inside``: argv is PID TID NAME REPORT."""
    pid, tid, name, report = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
    stat = os.open(f"/proc/{pid}/task/{tid}/schedstat", os.O_RDONLY)
    print("ready", flush=True)
    start = int(sys.stdin.readline().split()[1])  # "go NS": the call starts, NS of CPU spent
    os.set_blocking(sys.stdin.fileno(), False)
    while True:
        spent = _cpu_ns(stat) - start
        returned = sys.stdin.buffer.read() or b""
        if b"returned" in returned:
            report.write_text(f"missed {name}: it returned after {spent // 1000} us of CPU\n")
            return
        if spent >= INSIDE_NS:
            os.kill(pid, signal.SIGSTOP)
            where = stopped_in(pid, tid)
            os.kill(pid, signal.SIGKILL)
            report.write_text(
                f"killed inside {name} after {spent // 1000} us of CPU, stopped in {where}\n"
            )
            return
        time.sleep(0.0002)


# The C library, the loader and the vDSO: code a library calls (memcpy, malloc, a syscall),
# never the caller that says where the thread is.
_RUNTIME = ("libc.so", "libm.so", "ld-linux", "libpthread.so", "libgcc_s.so", "[vdso]")


def stopped_in(pid: int, tid: str) -> str:
    """The file of the innermost code on stopped thread TID's stack that is not the C runtime
    (its program counter, then the return addresses above its stack pointer): which library
    the thread was running in."""
    import struct

    task = Path(f"/proc/{pid}/task/{tid}")
    deadline = time.monotonic() + 10
    try:
        while task.joinpath("stat").read_text().rpartition(")")[2].split()[0] not in "tT":
            if time.monotonic() > deadline:
                return "an unknown place (the thread did not stop)"
            time.sleep(0.0001)
        sp, pc = (int(field, 16) for field in task.joinpath("syscall").read_text().split()[-2:])
        code: list[tuple[int, int, str]] = []
        stack = (sp, sp)
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            fields = line.split()
            low, high = (int(bound, 16) for bound in fields[0].split("-"))
            if low <= sp < high:
                stack = (sp, min(high, sp + 256 * 1024))
            if "x" in fields[1]:
                code.append((low, high, Path(fields[5]).name if len(fields) > 5 else "[anon]"))
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
            memory.seek(stack[0])
            words = memory.read(stack[1] - stack[0])
    except (OSError, ValueError, IndexError) as exc:
        return f"an unknown place ({exc})"
    for address in (pc, *(w for (w,) in struct.iter_unpack("<Q", words[: len(words) // 8 * 8]))):
        owner = next((name for low, high, name in code if low <= address < high), None)
        if owner is not None and not owner.startswith(_RUNTIME):
            return owner
    return "an unknown place (no caller on its stack)"
