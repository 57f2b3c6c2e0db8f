"""`memsync ui` and the daemon stop when asked: whichever thread the kernel hands the signal
to, while a browser holds connections open, and with a request still being answered.

Real processes, real sockets, real signals. A signal sent to a process goes to any thread
that does not block it; the tests send it to such a thread directly (tgkill), which is what
the kernel does when the main thread is busy outside its wait.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memsync.base.paths import resolve_paths
from memsync.orchestration.ui.auth import csrf_token, load_or_create_token
from tests.conftest import subprocess_env, write_config
from tests.test_daemon import CONFIG, DaemonProcess, add_memories

# A thread started before memsync is imported and before it blocks its signals, as numpy's
# OpenBLAS pool is (sqlite-utils imports numpy when it is installed).
WITH_A_LIBRARY_THREAD = (
    "import threading\n"
    "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
    "from memsync.cli import main\n"
    "main({args!r}, prog_name='memsync')\n"
)


def tgkill(pid: int, tid: int, sig: int) -> None:
    """Send SIG to one thread of another process (glibc's tgkill)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, tid, sig) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {tid}, {sig})")


def threads_taking(pid: int, sig: int) -> list[int]:
    """The threads of PID other than its main one that do not block SIG (from /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = dict(
            line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line
        )
        blocked = int(fields["SigBlk"].strip(), 16)
        if int(task.name) != pid and not blocked & (1 << (sig - 1)):
            found.append(int(task.name))
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Browser:
    """What a browser holding the page open leaves on the server: a keep-alive connection
    after a page load, a connection opened ahead and never used, a request half sent."""

    def __init__(self, port: int, token: str) -> None:
        self.keep_alive = socket.create_connection(("127.0.0.1", port), timeout=60)
        request = (
            f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: token {token}\r\n\r\n"
        )
        self.keep_alive.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.keep_alive.recv(65536)
        header, _, body = head.partition(b"\r\n\r\n")
        assert header.startswith(b"HTTP/1.1 200"), header
        length = int(next(v for k, _, v in _headers(header) if k == "content-length"))
        while len(body) < length:
            body += self.keep_alive.recv(65536)
        assert b"connection: close" not in header.lower()  # the server keeps it open
        self.idle = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.half = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.half.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())

    def closed_by_server(self) -> bool:
        """Every connection reads end-of-file (or a reset): the server let go of them."""
        return all(_ended(s) for s in (self.keep_alive, self.idle, self.half))

    def close(self) -> None:
        for s in (self.keep_alive, self.idle, self.half):
            s.close()


def _ended(connection: socket.socket) -> bool:
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True


def _headers(header: bytes) -> Iterator[tuple[str, str, str]]:
    for line in header.decode().split("\r\n")[1:]:
        key, sep, value = line.partition(":")
        yield key.strip().lower(), sep, value.strip()


@pytest.fixture
def daemon_home(home: Path) -> Path:
    write_config(home, CONFIG.format(home=home, interval="1s"))
    add_memories(home, ("m1", "likes green tea"))
    return home


def test_signals_that_reach_a_library_thread_reload_and_stop_the_daemon_cleanly(
    daemon_home: Path,
) -> None:
    argv = [sys.executable, "-c", WITH_A_LIBRARY_THREAD.format(args=["daemon"])]
    daemon = DaemonProcess(daemon_home, argv=argv)
    try:
        daemon.wait_for_line("sync #1")
        others = threads_taking(daemon.pid, signal.SIGTERM)
        assert others, "the library thread should not block SIGTERM"
        tgkill(daemon.pid, others[0], signal.SIGHUP)
        daemon.wait_for_line("config reloaded (SIGHUP)")
        assert daemon.proc.poll() is None  # SIGHUP's default action would have ended it
        started = time.monotonic()
        tgkill(daemon.pid, others[0], signal.SIGTERM)
        code = daemon.proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        daemon.kill()
    assert code == 0 and took < 10
    daemon._reader.join(timeout=5)
    assert any("stopping (SIGTERM)" in line for line in daemon.lines), daemon.lines
    assert daemon.lines[-1].endswith("INFO stopped")


def test_the_daemon_stops_on_sigterm_while_a_browser_holds_the_page_open(
    daemon_home: Path,
) -> None:
    port = free_port()
    config = daemon_home / "config" / "config.toml"
    config.write_text(config.read_text() + f'\n[ui]\nlisten = "127.0.0.1:{port}"\n')
    daemon = DaemonProcess(daemon_home)
    try:
        daemon.wait_for_line(f"status page on http://127.0.0.1:{port}")
        daemon.wait_for_line("sync #1")
        browser = Browser(port, load_or_create_token(resolve_paths()))
        code, took = daemon.stop(signal.SIGTERM, timeout=30)
        assert browser.closed_by_server()
        browser.close()
    finally:
        daemon.kill()
    assert code == 0 and took < 10
    assert daemon.lines[-1].endswith("INFO stopped"), daemon.lines


class UiProcess:
    """`memsync ui` on a free port, its link read from its first lines."""

    def __init__(self, home: Path, argv: list[str] | None = None) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "memsync", "ui", "--listen", f"127.0.0.1:{self.port}"],
            env=subprocess_env(MEMSYNC_HOME=str(home)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        lines = [self.proc.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("memsync status page on"), lines
        self.token = load_or_create_token(resolve_paths())

    def stop(self, sig: int, timeout: float = 30) -> tuple[int, float, str]:
        started = time.monotonic()
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, time.monotonic() - started, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_memsync_ui_stops_at_once_while_a_browser_holds_the_page_open(
    daemon_home: Path, sig: int, code: int
) -> None:
    ui = UiProcess(daemon_home)
    try:
        browser = Browser(ui.port, ui.token)
        returncode, took, err = ui.stop(sig)
        assert browser.closed_by_server()
        browser.close()
    finally:
        ui.kill()
    assert returncode == code and took < 10
    assert "Traceback" not in err


def test_memsync_ui_takes_a_sigint_that_reaches_a_library_thread(daemon_home: Path) -> None:
    script = WITH_A_LIBRARY_THREAD.format(args=["ui", "--listen", "127.0.0.1:0"])
    ui = UiProcess(daemon_home, argv=[sys.executable, "-c", script])
    try:
        others = threads_taking(ui.proc.pid, signal.SIGINT)
        assert others
        started = time.monotonic()
        tgkill(ui.proc.pid, others[0], signal.SIGINT)
        _, err = ui.proc.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        ui.kill()
    assert ui.proc.returncode == 130 and took < 10
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_a_request_still_running_holds_up_the_stop_for_its_grace_only(home: Path) -> None:
    """A verify against a server that accepts and never answers: SIGTERM still ends
    `memsync ui`, after the grace a request in flight gets, saying it left one running."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        write_config(
            home,
            CONFIG.format(home=home, interval="1s")
            + f"""
[providers.remote]
type = "mem0-server"
base_url = "http://127.0.0.1:{silent.getsockname()[1]}"
scope = {{ user_id = "alice" }}
auth = "none"
timeout = 120
""",
        )
        ui = UiProcess(home)
        try:
            client = httpx.Client(
                base_url=f"http://127.0.0.1:{ui.port}",
                headers={
                    "Authorization": f"token {ui.token}",
                    "X-CSRF-Token": csrf_token(ui.token),
                },
                timeout=120,
            )
            verify = threading.Thread(
                target=post_quietly, args=(client, "/api/verify"), daemon=True
            )
            verify.start()
            silent.settimeout(60)
            held, _ = silent.accept()  # the verify now waits on the silent server
            returncode, took, err = ui.stop(signal.SIGTERM)
            held.close()
            verify.join(timeout=60)
            client.close()
        finally:
            ui.kill()
    assert returncode == 0 and took < 15
    assert "a request was still running" in err


def post_quietly(client: httpx.Client, path: str) -> None:
    """POST a verify of notes and remote; the server going away is what the test expects."""
    with contextlib.suppress(httpx.HTTPError):
        client.post(path, json={"a": "notes", "b": "remote"})
