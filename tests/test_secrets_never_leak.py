"""A seeded API key never appears in anything memsync prints or writes.

A loopback server plays a hostile Mem0 Platform: it echoes the Authorization header back in
every error body. Every command's stdout and stderr, --json output, status, exports, backups,
the staging database and the daemon's log are searched for the key.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import run_memsync, write_config

KEY = "m0-SEEDED-SECRET-7f3a9c1e5b"


class Echo(BaseHTTPRequestHandler):
    status = 500

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace")
        echo = json.dumps(
            {"detail": f"bad request with {self.headers.get('Authorization')}", "body": body}
        )
        self.send_response(Echo.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(echo)))
        self.end_headers()
        self.wfile.write(echo.encode())

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hostile_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def home_with_key(home: Path, hostile_server: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEM0_API_KEY", KEY)
    write_config(
        home,
        f"""[sync]
active = "notes"
interval = "1s"
[providers.notes]
type = "pmm-dir"
path = "{home / "notes"}"
scope_key = "alice"
[providers.cloud]
type = "mem0-platform"
base_url = "{hostile_server}"
scope = {{ user_id = "alice" }}
api_key_env = "MEM0_API_KEY"
[providers.other]
type = "mem0-server"
base_url = "{hostile_server}"
scope = {{ user_id = "alice" }}
api_key_env = "MEM0_API_KEY"
""",
    )
    pmm = home / "seed.jsonl"
    pmm.write_text(
        '{"pmm_version":1,"exported_at":"2026-11-30T09:00:00Z","source_provider":"mem0","scope":{}}\n'
        '{"id":"a","content":"likes tea","metadata":{}}\n'
    )
    assert run_memsync(home, "import", str(pmm), "--into", "notes").returncode == 0
    return home


def files_under(root: Path) -> Iterator[Path]:
    for path in root.rglob("*"):
        if path.is_file():
            yield path


ALL_COMMANDS = (
    ("check",),
    ("sync",),
    ("sync", "--json"),
    ("sync", "--dry-run", "--json"),
    ("status",),
    ("status", "--json"),
    ("export", "--provider", "notes"),
    ("export", "--provider", "cloud"),
    ("backup",),
    ("log", "--json"),
    ("conflicts", "--json"),
    ("verify", "notes", "cloud", "--json"),
    ("-vv", "sync"),
)
# A 500 is retried with backoff (real waits): a few commands show the same code paths.
SERVER_ERROR_COMMANDS = (("check",), ("-vv", "sync", "--json"), ("status", "--json"))


@pytest.mark.parametrize(
    ("status", "commands"), [(401, ALL_COMMANDS), (500, SERVER_ERROR_COMMANDS)]
)
def test_the_key_is_in_no_output_and_no_file(
    home_with_key: Path, status: int, commands: tuple[tuple[str, ...], ...]
) -> None:
    Echo.status = status
    home = home_with_key
    outputs = []
    for args in commands:
        result = run_memsync(home, *args)
        outputs.append((args, result.stdout + result.stderr))
    for args, output in outputs:
        assert KEY not in output, args
        assert "Traceback" not in output, (args, output[-1500:])
    if status == 401:
        assert any("MEM0_API_KEY" in output for _, output in outputs)  # the variable is named
    for path in files_under(home):
        assert KEY.encode() not in path.read_bytes(), path


def test_the_daemon_log_never_shows_the_key(home_with_key: Path) -> None:
    Echo.status = 401
    env = {**os.environ, "MEMSYNC_HOME": str(home_with_key)}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memsync", "-vv", "daemon"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(6)
    daemon.send_signal(signal.SIGTERM)
    _, log = daemon.communicate(timeout=20)
    assert daemon.returncode == 0
    assert "cloud" in log and KEY not in log
