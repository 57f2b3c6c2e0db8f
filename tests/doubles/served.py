"""A test double served over real HTTP in a process of its own: for the benchmarks, which time
``memsync`` as a user runs it (a subprocess, start to exit, talking TCP to a server), and for
tests of a server that dies mid-cycle.

``Served("mem0-server")`` starts ``python -m tests.doubles.served mem0-server``: one double
from ``tests/doubles`` under uvicorn on a loopback port (a fresh one, or the one given, to
start a server again where it was), every request delayed by ``latency`` (as a network round
trip or a server's key check delays it). The double's own process keeps its CPU apart from
memsync's, and its request log stays countable through a line protocol on stdin (``stats``,
``latency S``, ``die-on-write``: the process exits, unanswering, at the next write it gets).

``Served("mem0-org")`` is a Mem0 server double at an organisation's size (its memories in
``IndexedVectors``, so listing one user of a thousand costs that user only; with
``database_url``, in that PostgreSQL database's upstream ``memories`` table): ``seed`` fills
it in bulk, ``holds`` asks whether a user holds a text without a request, and requests sent
with the ``X-Bench-Client`` header (the benchmark's own client writing as another program
would) are left out of ``stats``, which counts what memsync asked.

``Served("mem0-platform")`` is the Platform double (its memories indexed per user):
``seed_platform`` fills it, ``sliding`` puts the documented limit over every route, ``limits``
says what the limit counted and refused for memsync and for the benchmark's own clients (which
send ``X-Bench-Client``), ``find`` names a memory's id, and its webhooks POST to whatever URL
memsync registers.

TCP_NODELAY is set on the listening socket. A socket made by ``socket.socket()`` has protocol
0, so asyncio does not turn Nagle off for the connections it accepts, and uvicorn writes a
response's head and body separately: the body then waits for the client's delayed ACK, 40 ms
a request on Linux. Real servers bind through uvicorn itself, which does set it (upstream
Mem0's ``uvicorn.run(main.app, host=...)``); without it a benchmark measures Nagle.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

KEY = "bench-key-0123456789"
ROOT = Path(__file__).resolve().parents[2]
WRITES = {"POST", "PUT", "DELETE", "PATCH"}
DATABASE_URL = "MEMSYNC_DOUBLE_DATABASE_URL"  # mem0-org: its memories in this database
HARNESS = "x-bench-client"  # a request with this header is the benchmark's, not memsync's


class Served:
    """A double in its own process: its base URL, its request count, its CPU time."""

    def __init__(
        self, kind: str, latency: float = 0.0, *, port: int = 0, database_url: str | None = None
    ) -> None:
        self.kind = kind
        env = {**os.environ, "MEM0_TELEMETRY": "False", "PYTHONPATH": str(ROOT)}
        if database_url is not None:
            env[DATABASE_URL] = database_url
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.doubles.served", kind, str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self._asking = threading.Lock()  # one question at a time on the line protocol
        ready = self._read()
        self.port = int(ready["port"])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.set_latency(latency)

    def _ask(self, line: str) -> dict[str, Any]:
        assert self._process.stdin is not None
        with self._asking:
            self._process.stdin.write(line + "\n")
            self._process.stdin.flush()
            return self._read()

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.kind} double stopped (exit {self._process.poll()})")
        return dict(json.loads(line))

    def set_latency(self, seconds: float) -> None:
        self._ask(f"latency {seconds}")

    def stats(self) -> dict[str, Any]:
        """``requests`` so far, ``writes`` (POST/PUT/DELETE) and the double's ``cpu`` seconds."""
        return self._ask("stats")

    def seed(self, users: int, per_user: int) -> int:
        """``mem0-org``: PER_USER memories for each of USERS users (``user0000``...), in bulk."""
        return int(self._ask(f"seed {users} {per_user}")["memories"])

    def holds(self, user: str, text: str) -> bool:
        """``mem0-org``: whether USER holds a memory with TEXT (asked of the double directly)."""
        return bool(self._ask(f"holds {json.dumps([user, text])}")["holds"])

    def scan_limit(self, memories: int) -> None:
        """``mem0-org``: how many memories ``GET /entities`` scans (upstream: 10,000)."""
        self._ask(f"scan-limit {memories}")

    def seed_platform(self, users: int, per_user: int) -> int:
        """``mem0-platform``: PER_USER memories for each of USERS users, dated a month ago."""
        return int(self._ask(f"seed-platform {users} {per_user}")["memories"])

    def sliding(self, limit: int, window: float) -> None:
        """``mem0-platform``: a sliding-window limit over every route."""
        self._ask(f"sliding {limit} {window}")

    def limits(self) -> dict[str, dict[str, int]]:
        """``mem0-platform``: requests the limit counted and refused, by who sent them."""
        return self._ask("limits")

    def find(self, user: str, text: str) -> str | None:
        """``mem0-platform``: the id of USER's memory holding TEXT."""
        found = self._ask(f"find {json.dumps([user, text])}")["id"]
        return str(found) if found else None

    def webhooks(self) -> dict[str, int]:
        """``mem0-platform``: events delivered (tried) and dropped so far."""
        return self._ask("webhooks")

    def die_on_write(self) -> None:
        """The process exits at the first write it receives: a server killed mid-cycle."""
        self._ask("die-on-write")

    def wait_dead(self, timeout: float = 120.0) -> int:
        """Wait for the process to exit on its own (``die_on_write``); its exit code."""
        return self._process.wait(timeout=timeout)

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None and not stream.closed:
                stream.close()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# the double's side -----------------------------------------------------------------------


def _double(kind: str) -> Any:
    if kind == "mem0-server":
        from tests.doubles.mem0_server_app import Mem0ServerDouble

        return Mem0ServerDouble(api_key=KEY)
    if kind == "mem0-org":
        from tests.doubles.mem0_server_app import Mem0ServerDouble

        url = os.environ.get(DATABASE_URL)
        return Mem0ServerDouble(api_key=KEY, database_url=url, indexed=url is None)
    if kind == "mem0-platform":
        from tests.doubles.mem0_platform_app import Mem0PlatformDouble

        return Mem0PlatformDouble(api_key=KEY, metadata_mode="merge")
    if kind == "hindsight":
        from tests.doubles.hindsight_app import HindsightDouble

        return HindsightDouble(api_key=KEY)
    raise SystemExit(f"unknown double {kind!r}")


def _seed_platform(double: Any, argument: str) -> dict[str, Any]:
    """PER_USER memories for each of USERS users (``user0000``...), dated a month ago."""
    from datetime import UTC, datetime, timedelta

    users, per_user = (int(n) for n in argument.split())
    old = datetime.now(UTC) - timedelta(days=30)
    for number in range(users):
        user = f"user{number:04d}"
        for i in range(per_user):
            when = old + timedelta(seconds=number * per_user + i)
            double.insert(f"{user} memory {i}: likes tea", created_at=when, user_id=user)
    return {"memories": users * per_user}


def _sliding(double: Any, argument: str) -> dict[str, Any]:
    """A sliding-window limit over every route: LIMIT requests in any WINDOW seconds."""
    from tests.doubles.sliding_limit import SlidingLimit

    limit, window = argument.split()
    double.rate_limit = SlidingLimit(limit=int(limit), window=float(window))
    return {"limit": int(limit), "window": float(window)}


def _limits(double: Any, argument: str) -> dict[str, Any]:
    """Requests the limit counted and refused (429), by who sent them."""
    limit = double.rate_limit
    if limit is None:
        return {"allowed": {}, "refused": {}}
    return {"allowed": dict(limit.allowed), "refused": dict(limit.refused)}


def _find(double: Any, argument: str) -> dict[str, Any]:
    """The id of USER's memory holding TEXT (None: none does)."""
    user, text = json.loads(argument)
    found = [m["id"] for m in double.memories.among([user]) if m["memory"] == text]
    return {"id": found[0] if found else None}


def _delivered(double: Any, argument: str) -> dict[str, Any]:
    return {"delivered": len(double.webhooks.delivered), "dropped": len(double.webhooks.dropped)}


# The Platform double's commands (``Served("mem0-platform")``).
_PLATFORM = {
    "seed-platform": _seed_platform,
    "sliding": _sliding,
    "limits": _limits,
    "find": _find,
    "webhooks": _delivered,
}


def _serve(kind: str, port: int) -> None:
    import uvicorn

    double = _double(kind)
    dying = threading.Event()
    app = double.app

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if dying.is_set() and scope.get("method") in WRITES:
            os._exit(0)  # killed: no answer, the port closes, connections reset
        await app(scope, receive, send)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    server = uvicorn.Server(
        uvicorn.Config(guarded, log_level="error", lifespan="off", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    say = sys.stdout
    say.write(json.dumps({"port": listener.getsockname()[1]}) + "\n")
    say.flush()
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "latency":
            double.faults.latency = float(argument)
            answer: dict[str, Any] = {"latency": double.faults.latency}
        elif command == "stats":
            seen = [s for s in list(double.faults.seen) if HARNESS not in s.headers]
            answer = {
                "requests": len(seen),
                "writes": sum(s.method in WRITES for s in seen),
                "cpu": time.process_time(),
            }
        elif command == "seed":
            users, per_user = (int(n) for n in argument.split())
            for number in range(users):
                user = f"user{number:04d}"
                texts = [
                    f"{user} memory {i}: likes tea, team {number % 97}" for i in range(per_user)
                ]
                double.insert_many(texts, user_id=user)
            answer = {"memories": users * per_user}
        elif command == "holds" and kind == "mem0-platform":
            user, text = json.loads(argument)
            answer = {"holds": any(m["memory"] == text for m in double.memories.among([user]))}
        elif command == "holds":
            user, text = json.loads(argument)
            with double.lock:
                rows = double.memory.vector_store.list(filters={"user_id": user}, top_k=None)
            answer = {"holds": any((r.payload or {}).get("data") == text for r in rows[0])}
        elif command in _PLATFORM:
            answer = _PLATFORM[command](double, argument)
        elif command == "scan-limit":
            double.entity_scan_limit = int(argument)
            answer = {"scan_limit": double.entity_scan_limit}
        elif command == "die-on-write":
            dying.set()
            answer = {"dying": True}
        else:
            answer = {"error": f"unknown command {command!r}"}
        say.write(json.dumps(answer) + "\n")
        say.flush()
    server.should_exit = True
    thread.join(timeout=10)


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
