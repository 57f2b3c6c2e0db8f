"""`memsync daemon` as systemd runs it: a real process, a real notify socket, real signals.

Two pmm-dir providers make a fully offline config; intervals of a second keep it fast.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memsync.engine.report import CycleReport, ProviderOutcome
from memsync.orchestration.daemon.jobs import summarize
from memsync.orchestration.daemon.logging import OneLineFormatter, Redactor, journal_attached
from memsync.orchestration.daemon.notify import Notifier
from tests.conftest import run_memsync, subprocess_env, write_config

CONFIG = """
[sync]
active = "notes"
interval = "{interval}"

[backup]
interval = "1h"

[providers.notes]
type = "pmm-dir"
path = "{home}/notes"
scope_key = "alice"

[providers.copy]
type = "pmm-dir"
path = "{home}/copy"
scope_key = "alice"
"""

THIRD = """
[providers.third]
type = "pmm-dir"
path = "{home}/third"
scope_key = "alice"
direction = "push"
"""

HEADER = {
    "pmm_version": 1,
    "exported_at": "2026-11-30T09:00:00Z",
    "source_provider": "pmm",
    "scope": {},
}
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (DEBUG|INFO|WARNING|ERROR|CRITICAL) \S")


def add_memories(home: Path, *memories: tuple[str, str]) -> None:
    """Write the notes provider's file as a user's agent would (whole file, then rename)."""
    path = home / "notes" / "alice.pmm.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = path.read_text().splitlines() if path.exists() else [json.dumps(HEADER)]
    for memory_id, content in memories:
        lines.append(
            json.dumps({"id": memory_id, "content": content, "metadata": {}, "scope_key": "alice"})
        )
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


def contents(directory: Path) -> set[str]:
    found: set[str] = set()
    for path in directory.glob("*.pmm.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            if line.strip():
                found.add(json.loads(line)["content"])
    return found


def edit_config(path: Path, text: str) -> None:
    """Save the config the way editors do: a new file renamed over the old one."""
    tmp = path.with_name(".config.toml.swp")
    tmp.write_text(text)
    tmp.replace(path)


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class NotifySocket:
    """The receiving end of sd_notify, as systemd binds it: an AF_UNIX datagram socket."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.settimeout(0.1)
        self.address = address
        self.messages: list[dict[str, str]] = []
        self.arrived: list[float] = []  # time.monotonic() each message was read

    def _drain(self) -> None:
        while True:
            try:
                data = self.sock.recv(4096)
            except (TimeoutError, BlockingIOError):
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            self.messages.append(fields)
            self.arrived.append(time.monotonic())

    def wait_for(
        self, key: str, value: str | None = None, *, after: int = 0, timeout: float = 60
    ) -> int:
        """Index of the first message from `after` on carrying key (=value); waits for it."""
        deadline = time.monotonic() + timeout
        while True:
            self._drain()
            for index, message in enumerate(self.messages[after:], start=after):
                if key in message and (value is None or message[key] == value):
                    return index
            if time.monotonic() > deadline:
                raise AssertionError(f"no {key}={value or '*'} notification; got {self.messages}")

    def count(self, key: str) -> int:
        self._drain()
        return sum(1 for m in self.messages if key in m)

    def close(self) -> None:
        self.sock.close()


class DaemonProcess:
    """`python -m memsync daemon` with its stderr collected line by line."""

    def __init__(self, home: Path, argv: list[str] | None = None, **env: str) -> None:
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "memsync", "daemon"],
            env=subprocess_env(MEMSYNC_HOME=str(home), **env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        assert self.proc.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream: io.TextIOBase) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_for_line(self, needle: str, timeout: float = 60) -> str:
        found: list[str] = []
        wait_until(
            lambda: found.extend(line for line in self.lines if needle in line) or found,
            timeout,
            repr(needle),
        )
        return found[0]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> tuple[int, float]:
        started = time.monotonic()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code, time.monotonic() - started

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def setup(home: Path) -> Path:
    write_config(home, CONFIG.format(home=home, interval="1s"))
    add_memories(home, ("m1", "likes green tea"))
    return home


@pytest.fixture
def notify_socket() -> Iterator[NotifySocket]:
    # A short directory: AF_UNIX paths are limited to 107 bytes, pytest's tmp_path can be longer.
    directory = tempfile.mkdtemp(prefix="ms-", dir="/tmp")
    sock = NotifySocket(os.path.join(directory, "notify"))
    yield sock
    sock.close()
    os.unlink(sock.address)
    os.rmdir(directory)


@pytest.fixture
def daemons() -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(home: Path, **env: str) -> DaemonProcess:
        process = DaemonProcess(home, **env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


# --- the daemon process ------------------------------------------------------------------------


def listening_sockets(pid: int) -> list[str]:
    """TCP sockets in LISTEN and bound UDP sockets that belong to pid (from /proc, no psutil)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        match = re.fullmatch(r"socket:\[(\d+)\]", target)
        if match:
            inodes.add(match.group(1))
    found = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            listening = state == "0A" if table.startswith("tcp") else state == "07"
            if inode in inodes and listening:
                found.append(f"{table} {local}")
    return found


def test_the_port_check_sees_a_listening_socket() -> None:
    """The check below can fail: it finds this test process's own listening socket."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert any(entry.startswith("tcp ") for entry in listening_sockets(os.getpid()))


def test_daemon_reports_ready_syncs_on_its_interval_and_stops_cleanly(
    setup: Path, notify_socket: NotifySocket, daemons: Callable[..., DaemonProcess]
) -> None:
    home = setup
    daemon = daemons(home, NOTIFY_SOCKET=notify_socket.address)
    ready = notify_socket.wait_for("READY", "1")
    wait_until(lambda: "likes green tea" in contents(home / "copy"), 60, "the first sync")
    status = notify_socket.wait_for("STATUS", after=ready + 1)
    assert re.match(
        r"sync #\d+ ok in \d+\.\ds: 2 providers ok", notify_socket.messages[status]["STATUS"]
    )

    add_memories(home, ("m2", "walks at dawn"))  # a later cycle, on the interval, carries it over
    wait_until(lambda: "walks at dawn" in contents(home / "copy"), 60, "a scheduled sync")

    assert listening_sockets(daemon.pid) == []
    report = json.loads(run_memsync(home, "status", "--json").stdout)
    assert report["daemon"]["running"] and report["daemon"]["pid"] == daemon.pid
    assert report["providers"]["copy"]["last_cycle"]["duration_s"] is not None
    assert f"daemon: running (pid {daemon.pid}, since " in run_memsync(home, "status").stdout

    code, took = daemon.stop(signal.SIGTERM)
    assert code == 0 and took < 10
    notify_socket.wait_for("STOPPING", "1", timeout=30)
    assert daemon.lines and all(LOG_LINE.match(line) for line in daemon.lines), daemon.lines
    assert any("stopping (SIGTERM)" in line for line in daemon.lines)
    report = json.loads(run_memsync(home, "status", "--json").stdout)
    assert report["daemon"] == {"running": False}


def test_sigint_stops_like_sigterm(setup: Path, daemons: Callable[..., DaemonProcess]) -> None:
    daemon = daemons(setup)
    daemon.wait_for_line("sync #1")
    code, took = daemon.stop(signal.SIGINT)
    assert code == 0 and took < 10
    assert any("stopping (SIGINT)" in line for line in daemon.lines)


def test_config_edit_reloads_and_a_broken_config_keeps_the_running_one(
    setup: Path, daemons: Callable[..., DaemonProcess]
) -> None:
    home = setup
    config = home / "config" / "config.toml"
    daemon = daemons(home)
    daemon.wait_for_line("sync #1")

    edit_config(config, CONFIG.format(home=home, interval="1s") + THIRD.format(home=home))
    daemon.wait_for_line("config reloaded (config file changed): 3 providers")
    wait_until(
        lambda: "likes green tea" in contents(home / "third"), 60, "the new provider to fill"
    )

    edit_config(
        config,
        CONFIG.format(home=home, interval="1s").replace('type = "pmm-dir"', 'type = "pmm-dri"', 1),
    )
    line = daemon.wait_for_line("config not reloaded")
    assert "unknown provider type" in line and "still running the previous config" in line
    add_memories(home, ("m2", "reads at night"))
    wait_until(
        lambda: "reads at night" in contents(home / "third"), 60, "syncs under the old config"
    )
    assert daemon.proc.poll() is None
    assert daemon.stop()[0] == 0


def test_sighup_reloads_between_reloading_and_ready(
    setup: Path, notify_socket: NotifySocket, daemons: Callable[..., DaemonProcess]
) -> None:
    daemon = daemons(setup, NOTIFY_SOCKET=notify_socket.address)
    ready = notify_socket.wait_for("READY", "1")
    daemon.proc.send_signal(signal.SIGHUP)
    reloading = notify_socket.wait_for("RELOADING", "1", after=ready + 1)
    assert re.fullmatch(r"\d+", notify_socket.messages[reloading]["MONOTONIC_USEC"])
    # MONOTONIC_USEC is CLOCK_MONOTONIC, the clock systemd compares it with.
    now_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    assert 0 <= now_usec - int(notify_socket.messages[reloading]["MONOTONIC_USEC"]) < 30_000_000
    notify_socket.wait_for("READY", "1", after=reloading + 1)
    daemon.wait_for_line("config reloaded (SIGHUP)")
    assert daemon.stop()[0] == 0


def test_watchdog_pings_at_half_the_timeout(
    setup: Path, notify_socket: NotifySocket, daemons: Callable[..., DaemonProcess]
) -> None:
    """WATCHDOG_USEC=2 s: a ping about every second, again and again, never in a burst.

    No count in a time window (a busy machine only delays pings): three pings must come, and
    no two closer than half the interval; the in-process test checks the interval itself.
    """
    daemon = daemons(setup, NOTIFY_SOCKET=notify_socket.address, WATCHDOG_USEC="2000000")
    after = notify_socket.wait_for("READY", "1")
    pings = []
    for _ in range(3):
        after = notify_socket.wait_for("WATCHDOG", "1", after=after + 1, timeout=60)
        pings.append(notify_socket.arrived[after])
    assert all(later - earlier >= 0.5 for earlier, later in itertools.pairwise(pings)), pings
    assert daemon.stop()[0] == 0


def test_no_watchdog_pings_for_another_pid(
    setup: Path, notify_socket: NotifySocket, daemons: Callable[..., DaemonProcess]
) -> None:
    daemon = daemons(
        setup, NOTIFY_SOCKET=notify_socket.address, WATCHDOG_USEC="200000", WATCHDOG_PID="1"
    )
    notify_socket.wait_for("READY", "1")
    daemon.wait_for_line("sync #2 ", timeout=60)  # two 1 s intervals: ten watchdog periods
    assert notify_socket.count("WATCHDOG") == 0
    assert daemon.stop()[0] == 0


def test_abstract_notify_socket(setup: Path, daemons: Callable[..., DaemonProcess]) -> None:
    sock = NotifySocket(f"@memsync-test-{uuid.uuid4().hex}")
    try:
        daemon = daemons(setup, NOTIFY_SOCKET=sock.address)
        sock.wait_for("READY", "1")
        assert daemon.stop()[0] == 0
        sock.wait_for("STOPPING", "1", timeout=30)
    finally:
        sock.close()


def test_a_second_daemon_exits_at_once_naming_the_first(
    setup: Path, notify_socket: NotifySocket, daemons: Callable[..., DaemonProcess]
) -> None:
    first = daemons(setup, NOTIFY_SOCKET=notify_socket.address)
    notify_socket.wait_for("READY", "1")
    started = time.monotonic()
    second = run_memsync(setup, "daemon")
    assert second.returncode == 7 and time.monotonic() - started < 10
    assert f"a memsync daemon is already running (pid {first.pid}" in second.stderr
    assert second.stderr.count("\n") == 1
    assert first.proc.poll() is None
    assert first.stop()[0] == 0


def test_an_invalid_config_at_start_exits_2_with_one_line(home: Path) -> None:
    write_config(home, "[sync]\nactive = 'x'\n")
    result = run_memsync(home, "daemon")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "providers: required key is missing" in result.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_manual_sync_during_a_daemon_cycle_names_the_daemon_and_keys_never_reach_the_log(
    home: Path, daemons: Callable[..., DaemonProcess]
) -> None:
    """A provider that never answers (a closed loopback port) keeps each cycle busy retrying."""
    key = "sk-memsync-test-" + uuid.uuid4().hex
    write_config(
        home,
        CONFIG.format(home=home, interval="1s")
        + f"""
[providers.remote]
type = "mem0-server"
base_url = "http://127.0.0.1:{free_port()}"
scope = {{ user_id = "alice" }}
api_key_env = "MEMSYNC_TEST_KEY"
direction = "push"
""",
    )
    add_memories(home, ("m1", "likes green tea"))
    daemon = daemons(home, MEMSYNC_TEST_KEY=key)
    wait_until(lambda: (home / "run" / "memsync.base.lock").exists(), 60, "the first cycle")
    manual = subprocess.run(
        [sys.executable, "-m", "memsync", "sync", "--wait", "0.5"],
        env=subprocess_env(MEMSYNC_HOME=str(home), MEMSYNC_TEST_KEY=key),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert manual.returncode == 7, manual.stderr
    assert f"the memsync daemon (pid {daemon.pid}) is running a sync cycle" in manual.stderr
    daemon.wait_for_line("remote error")
    assert daemon.stop()[0] == 0
    assert daemon.lines and not any(key in line for line in daemon.lines)


# --- pieces, in process ------------------------------------------------------------------------


def test_notifier_sends_nothing_without_notify_socket() -> None:
    assert Notifier({}).ready() is False
    assert Notifier({"NOTIFY_SOCKET": "relative/path"}).ready() is False


def test_notifier_reaches_a_path_socket(notify_socket: NotifySocket) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": notify_socket.address})
    assert notifier.ready("up\nand running")
    index = notify_socket.wait_for("READY", "1", timeout=30)
    assert notify_socket.messages[index]["STATUS"] == "up and running"  # one line, always


def test_notifier_survives_a_socket_nobody_listens_on(tmp_path: Path) -> None:
    assert Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")}).status("x") is False


def test_watchdog_interval_is_half_of_watchdog_usec() -> None:
    assert Notifier({"WATCHDOG_USEC": "30000000"}).watchdog_interval == 15.0
    assert (
        Notifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}).watchdog_interval
        == 15.0
    )
    assert Notifier({"WATCHDOG_USEC": "nope"}).watchdog_interval is None
    assert Notifier({}).watchdog_interval is None


def test_redactor_removes_known_keys_and_key_assignments() -> None:
    redactor = Redactor()
    redactor.update(["s3cr3t-value-123"])
    assert "s3cr3t" not in redactor.scrub("request failed: key s3cr3t-value-123 refused")
    assert redactor.scrub("Authorization: Bearer abcdef123456") == "Authorization: Bearer ***"
    assert redactor.scrub("api_key=zzzzzzzzzz other") == "api_key=*** other"
    assert redactor.scrub("listed 3 memories") == "listed 3 memories"


def log_through(
    journal: bool, message: str, *args: object, level: int = logging.INFO, exc: bool = False
) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(OneLineFormatter(journal))
    redactor = Redactor()
    redactor.update(["hunter2-hunter2"])
    handler.addFilter(redactor)
    logger = logging.getLogger(f"memsync.test.{uuid.uuid4().hex}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    if exc:
        try:
            raise ValueError("boom\nsecond line")
        except ValueError:
            logger.exception(message, *args)
    else:
        logger.log(level, message, *args)
    return stream.getvalue()


def test_log_lines_are_one_line_with_journal_priorities_under_systemd() -> None:
    assert log_through(True, "synced", level=logging.WARNING) == "<4>synced\n"
    assert log_through(True, "synced", level=logging.ERROR) == "<3>synced\n"
    assert log_through(True, "synced") == "<6>synced\n"
    plain = log_through(False, "a\nb %s", "hunter2-hunter2")
    assert re.fullmatch(r"\S+Z INFO a \| b \*\*\*\n", plain)
    crashed = log_through(True, "job failed", exc=True)
    assert crashed == "<3>job failed (ValueError: boom | second line)\n"


def test_journal_detection_follows_journal_stream(tmp_path: Path) -> None:
    with open(tmp_path / "log", "w") as stream:
        stat = os.fstat(stream.fileno())
        assert journal_attached(stream, {"JOURNAL_STREAM": f"{stat.st_dev}:{stat.st_ino}"})
        assert not journal_attached(stream, {"JOURNAL_STREAM": f"{stat.st_dev}:{stat.st_ino + 1}"})
        assert not journal_attached(stream, {})
        assert journal_attached(
            stream, {"INVOCATION_ID": "abc"}
        )  # systemd < 231: no JOURNAL_STREAM


def test_cycle_summary_names_providers_that_need_attention() -> None:
    report = CycleReport(run_id=4, dry_run=False, started_at="2026-11-30T09:00:00Z")
    report.providers = {
        "notes": ProviderOutcome("notes", written=2),
        "mnem": ProviderOutcome("mnem", state="busy", error="held by an agent"),
        "other": ProviderOutcome("other", state="skipped"),
    }
    line = summarize(report, 1.26)
    assert line == "sync #4 needs attention in 1.3s: 1 provider ok, mnem busy; wrote 2"


@pytest.mark.slow
def test_a_cycle_stuck_on_a_silent_server_does_not_hold_up_the_stop(
    home: Path, daemons: Callable[..., DaemonProcess]
) -> None:
    """A server that accepts and never answers: SIGTERM still ends the daemon, exit 0, in 10 s."""
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
timeout = 60
direction = "push"
""",
        )
        add_memories(home, ("m1", "likes green tea"))
        daemon = daemons(home)
        daemon.wait_for_line("memsync daemon started")
        silent.settimeout(60)
        held, _ = silent.accept()  # the first cycle now waits on the silent server
        assert not contents(home / "copy")  # it never got as far as writing
        code, took = daemon.stop()
        held.close()
    assert code == 0 and took < 10
    assert any("still running after 8s" in line for line in daemon.lines), daemon.lines


def test_daemon_takes_backups_on_its_interval_and_keeps_the_newest(
    home: Path, daemons: Callable[..., DaemonProcess]
) -> None:
    write_config(
        home,
        CONFIG.format(home=home, interval="1s").replace(
            'interval = "1h"\n', 'interval = "1s"\nkeep = 2\ngzip = true\n'
        ),
    )
    add_memories(home, ("m1", "likes green tea"))
    daemon = daemons(home)
    # The first backup follows the first sync; then one a second.
    wait_until(
        lambda: sum("backup of notes: 1 memories" in line for line in daemon.lines) >= 3,
        20,
        "three backups of notes",
    )
    assert daemon.stop()[0] == 0
    for provider in ("notes", "copy"):
        files = sorted((home / "data" / "backups" / provider).iterdir())
        assert len(files) == 2 and all(f.name.endswith(".pmm.jsonl.gz") for f in files), files


def test_a_lock_directory_that_cannot_be_made_is_one_clear_error(tmp_path: Path) -> None:
    from memsync.base.errors import MemsyncError
    from memsync.base.lock import ProcessLock

    (tmp_path / "not-a-dir").write_text("")
    with pytest.raises(MemsyncError, match=r"cannot create the lock file .*MEMSYNC_HOME"):
        ProcessLock(tmp_path / "not-a-dir" / "daemon.lock", "daemon").acquire()


def test_status_text_says_how_each_provider_fared(capsys: pytest.CaptureFixture[str]) -> None:
    from memsync.orchestration.status import render_status

    def cycle(state: str, **extra: object) -> dict[str, object]:
        return {
            "state": state,
            "finished_at": "2026-11-29T08:00:00Z",
            "duration_s": 3.25,
            "added": 2,
            "changed": 1,
            "removed": 0,
            "complete": state == "ok",
            **extra,
        }

    report = {
        "config": {"path": "/c/config.toml", "ok": True, "active": "mem0"},
        "database": {"path": "/s/staging.db", "exists": True},
        "daemon": {"running": True, "pid": 4242, "since": "2026-11-29T07:00:00.000Z"},
        "cycle": {"running": True, "pid": 4242},
        "providers": {
            "mem0": {
                "type": "mem0-oss",
                "direction": "both",
                "records": 10,
                "last_cycle": cycle("ok"),
            },
            "mnem": {
                "type": "mnem",
                "direction": "both",
                "records": 9,
                "last_cycle": cycle("busy", busy=True, error="store held by an agent"),
            },
            "old": {
                "type": "pmm-dir",
                "direction": "pull",
                "records": 0,
                "last_cycle": cycle("refused", refused="the listing was empty"),
            },
            "web": {
                "type": "hindsight",
                "direction": "push",
                "records": 4,
                "last_cycle": cycle("partial", partial_reason="page 3 failed"),
            },
        },
        "outbox": {"pending": 3, "failed": 1, "dead": 1, "dead_actions": []},
        "conflicts": {"open": 2},
        "last_backup": None,
        "backups": {"mem0": {"path": "/b/x", "at": "2026-11-29T07:30:00.000000Z", "count": 5}},
    }
    render_status(report)
    out = capsys.readouterr().out
    assert "daemon: running (pid 4242, since 2026-11-29T07:00:00.000Z)" in out
    assert "a sync cycle is running now (pid 4242)" in out
    assert (
        "mem0\tmem0-oss\tboth\t10\t2026-11-29 08:00Z (3.2s)\tok, complete\t2/1/0\t2026-11-29 07:30Z (5 kept)"
        in out
    )
    assert "\tstore busy: store held by an agent\t" in out
    assert "\tdeletes refused: the listing was empty\t" in out
    assert "\tpartial: page 3 failed\t" in out
    assert "outbox: 3 pending, 1 failing, 1 dead" in out and "conflicts: 2 open" in out
