"""A seeded API key never appears in anything memsync prints or writes, under every auth style.

A loopback server plays a hostile provider: it echoes every credential header it receives
(``X-API-Key``, ``Authorization: Token``, ``Authorization: Bearer``) back in every error
body. Each HTTP provider type talks to it with the header it really uses, each with a key of
its own: the Mem0 Platform (Token), a Mem0 server (X-API-Key, and one with Bearer), Hindsight
(Bearer) and Cognee (X-Api-Key). The test first checks that each key really reached the server
in its header (so every echo carried a secret), then searches every command's stdout and
stderr, --json output, status, exports, backups, the staging database and the daemon's log.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.conftest import run_memsync, subprocess_env, write_config

# provider name -> (type, auth setting, the key, the header it must arrive in, its prefix)
PROVIDERS = {
    "cloud": ("mem0-platform", None, "m0-SEEDED-SECRET-7f3a9c1e5b", "Authorization", "Token "),
    "server": ("mem0-server", "api-key", "m0sk-SEEDED-SECRET-41d2e", "X-API-Key", ""),
    "server_bearer": (
        "mem0-server",
        "bearer",
        "m0jwt-SEEDED-SECRET-9ab0",
        "Authorization",
        "Bearer ",
    ),
    "hindsight": ("hindsight", None, "hs-SEEDED-SECRET-33c7f1", "Authorization", "Bearer "),
    "cognee": ("cognee", "api-key", "cg-SEEDED-SECRET-c0ffee42", "X-API-Key", ""),
}
KEYS = {name: spec[2] for name, spec in PROVIDERS.items()}
ENV = {f"MEMSYNC_TEST_{name.upper()}_KEY": key for name, key in KEYS.items()}


class Echo(BaseHTTPRequestHandler):
    status = 500
    seen: ClassVar[set[tuple[str, str]]] = set()  # (header, value) pairs that carried a credential

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace")
        credentials = {
            header: self.headers.get(header)
            for header in ("Authorization", "X-API-Key")
            if self.headers.get(header)
        }
        Echo.seen.update((h.lower(), v) for h, v in credentials.items() if v)
        echo = json.dumps({"detail": f"bad request with {credentials}", "body": body})
        self.send_response(Echo.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(echo)))
        self.end_headers()
        self.wfile.write(echo.encode())

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hostile_server() -> Iterator[str]:
    Echo.seen = set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def provider_table(name: str, url: str) -> str:
    kind, auth, _, _, _ = PROVIDERS[name]
    lines = [f"[providers.{name}]", f'type = "{kind}"', f'base_url = "{url}"']
    lines.append(f'api_key_env = "MEMSYNC_TEST_{name.upper()}_KEY"')
    if auth:
        lines.append(f'auth = "{auth}"')
    if kind.startswith("mem0"):
        lines.append('scope = { user_id = "alice" }')
    if kind == "hindsight":
        lines.append('bank = "alice"')
    if kind == "cognee":
        lines.append('dataset = "alice"')
    return "\n".join(lines) + "\n"


@pytest.fixture
def home_with_key(home: Path, hostile_server: str) -> Path:
    write_config(
        home,
        f"""[sync]
active = "notes"
interval = "1s"
[providers.notes]
type = "pmm-dir"
path = "{home / "notes"}"
scope_key = "alice"
"""
        + "".join(provider_table(name, hostile_server) for name in PROVIDERS),
    )
    pmm = home / "seed.jsonl"
    pmm.write_text(
        '{"pmm_version":1,"exported_at":"2026-11-30T09:00:00Z","source_provider":"mem0","scope":{}}\n'
        '{"id":"a","content":"likes tea","metadata":{}}\n'
    )
    assert run_memsync(home, "import", str(pmm), "--into", "notes").returncode == 0
    return home


def memsync(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_memsync(home, *args, env_extra=ENV)


def assert_each_key_went_in_its_own_header() -> None:
    """Every provider really sent its key, in the header its service expects."""
    for name, (_, _, key, header, prefix) in PROVIDERS.items():
        assert (header.lower(), prefix + key) in Echo.seen, (name, sorted(Echo.seen))


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
    *(("export", "--provider", name) for name in PROVIDERS),
    ("backup",),
    ("log", "--json"),
    ("conflicts", "--json"),
    *(("verify", "notes", name, "--json") for name in PROVIDERS),
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
        result = memsync(home, *args)
        outputs.append((args, result.stdout + result.stderr))
    assert_each_key_went_in_its_own_header()
    for args, output in outputs:
        for key in KEYS.values():
            assert key not in output, args
        assert "Traceback" not in output, (args, output[-1500:])
    if status == 401:
        for variable in ENV:  # the variable is named, never its value
            assert any(variable in output for _, output in outputs), variable
    for path in files_under(home):
        data = path.read_bytes()
        for key in KEYS.values():
            assert key.encode() not in data, path


def test_the_daemon_log_never_shows_the_key(home_with_key: Path) -> None:
    Echo.status = 401
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memsync", "-vv", "daemon"],
        env=subprocess_env(MEMSYNC_HOME=str(home_with_key), **ENV),
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert daemon.stderr is not None
    for line in daemon.stderr:  # read until the first cycle's summary, however long it takes
        lines.append(line)
        if "sync #1 " in line:
            break
    daemon.send_signal(signal.SIGTERM)
    _, rest = daemon.communicate(timeout=120)
    log = "".join(lines) + rest
    assert daemon.returncode == 0, log[-2000:]
    assert_each_key_went_in_its_own_header()
    assert "cloud" in log and "hindsight" in log and "cognee" in log
    for key in KEYS.values():
        assert key not in log
