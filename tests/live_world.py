"""The world the live tests and benchmarks run in: doubles served on a real loopback socket.

A daemon (or ``Live`` in this process) builds its providers from a config, so it reaches the
doubles as it would a real server: over HTTP, here served by uvicorn in a thread. Another
Mem0 client writes to the server through its routes (``ServedServer.add`` and friends).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import uvicorn

from tests.doubles import ASGIApp


@contextlib.contextmanager
def serve(app: ASGIApp) -> Iterator[str]:
    """Serve APP on 127.0.0.1 (a free port) for the block; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class ServedServer:
    """A Mem0 server double on a socket, and another Mem0 client writing to it."""

    def __init__(self, double: Any, url: str) -> None:
        self.double = double
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)

    def add(self, text: str, *, metadata: dict[str, Any] | None = None, **scope: str) -> str:
        body = {"messages": [{"role": "user", "content": text}], "infer": False, **scope}
        if metadata is not None:
            body["metadata"] = metadata
        answer = self.client.post("/memories", json=body)
        answer.raise_for_status()
        return str(answer.json()["results"][0]["id"])

    def edit(self, memory_id: str, text: str) -> None:
        self.client.put(f"/memories/{memory_id}", json={"text": text}).raise_for_status()

    def expire(self, memory_id: str, date: str) -> None:
        self.client.put(f"/memories/{memory_id}", json={"expiration_date": date}).raise_for_status()

    def delete(self, memory_id: str) -> None:
        self.client.delete(f"/memories/{memory_id}").raise_for_status()

    def held(self, user_id: str) -> dict[str, str]:
        """id -> text of USER_ID's memories, as the server holds them (expired ones too)."""
        with self.double.lock:
            answer = self.double.memory.get_all(
                filters={"user_id": user_id}, top_k=1000, show_expired=True
            )
        return {row["id"]: row["memory"] for row in answer["results"]}

    def texts(self, user_id: str) -> set[str]:
        return set(self.held(user_id).values())

    def requests(
        self, since: int = 0, *, method: str = "GET", path: str = "/memories"
    ) -> list[Any]:
        return [s for s in self.double.faults.seen[since:] if s.method == method and s.path == path]

    def close(self) -> None:
        self.client.close()


@contextlib.contextmanager
def served_mem0_server(**options: Any) -> Iterator[ServedServer]:
    """A Mem0 server double (a real mem0 Memory inside), auth disabled, on a socket."""
    from tests.doubles.mem0_server_app import Mem0ServerDouble

    double = Mem0ServerDouble(**options)
    with serve(double.app) as url:
        served = ServedServer(double, url)
        try:
            yield served
        finally:
            served.close()
