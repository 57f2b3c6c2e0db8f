"""``memsync daemon`` as its own process for the live benchmarks: its log lines, its memory,
and waiting for what it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memsync.base.lock import cycle_lock, is_locked
from memsync.base.paths import home_paths

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 120.0

DAEMONS: list[Daemon] = []


def wait_until(condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    """Wait for CONDITION (polled every 5 ms); on a timeout, print the daemons' last lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.005)
    for daemon in DAEMONS:
        print("\n".join(daemon.lines[-30:]), file=sys.stderr)
    raise SystemExit(f"timed out after {timeout:g}s waiting for {what}")


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95 + 0.5) - 1)]


class Daemon:
    """`python -m memsync daemon` in a home of its own, its log lines collected."""

    def __init__(
        self, home: Path, config: str, env: dict[str, str] | None = None, *, debug: bool = False
    ) -> None:
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "config" / "config.toml").write_text(config)
        self.home = home
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSYNC_", "MEM0_"))}
        clean.update(MEMSYNC_HOME=str(home), MEM0_TELEMETRY="False", PYTHONPATH=str(ROOT / "src"))
        clean.update(env or {})
        self.env = clean
        verbose = ["-v"] if debug else []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memsync", *verbose, "daemon"],
            env=clean,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        DAEMONS.append(self)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = DEADLINE) -> str:
        """The first log line matching PATTERN, once there is one."""
        found: list[str] = []

        def seen() -> bool:
            found[:] = [line for line in list(self.lines) if re.search(pattern, line)][:1]
            return bool(found)

        wait_until(seen, repr(pattern), timeout)
        return found[0]

    def wait_caught_up(self, quiet: float = 5.0, timeout: float = 1800) -> None:
        """Until no cycle has run for QUIET seconds (the cycle lock free at every look): what a
        restart found to do (hints of every store, listed in full) is done before a window."""
        lock = cycle_lock(home_paths(self.home)).path
        free_since = [time.monotonic()]

        def caught_up() -> bool:
            now = time.monotonic()
            if is_locked(lock):
                free_since[0] = now
            return now - free_since[0] >= quiet

        wait_until(caught_up, f"the daemon to be {quiet:g}s without a cycle", timeout)

    def matching(self, pattern: str) -> list[str]:
        return [line for line in list(self.lines) if re.search(pattern, line)]

    def rss_mb(self) -> float:
        """The daemon's resident memory now (VmRSS)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def peak_rss_mb(self) -> float:
        """The most resident memory the daemon has had so far (VmHWM, the kernel's own)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM")

    def memsync(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A `memsync` command against this daemon's home."""
        return subprocess.run(
            [sys.executable, "-m", "memsync", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=1800,
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def hinted_seconds(self) -> list[float]:
        found = [
            re.search(r"sync #\d+ \w+ in ([\d.]+)s for changes in ", line) for line in self.lines
        ]
        return [float(m.group(1)) for m in found if m]
