"""A server that is down is noticed once (issue 22 §4): after a few connection failures in a
row, a provider gets no more requests this cycle, its writes stay pending with their attempts
unspent, the report says so in one sentence, and the other providers are written.

The client-level tests make real connections to a closed loopback port (refused by the
kernel) through a transport that counts them. The end-to-end test runs the real `memsync
sync` against a Mem0 server double served over TCP that exits, unanswering, at the first
write it receives: a server killed mid-cycle.
"""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memsync.base.errors import ProviderUnreachable, TransientProviderError
from memsync.base.pmm import Header, write_pmm_file
from memsync.base.records import Record
from memsync.providers.http.breaker import THRESHOLD
from memsync.providers.http.client import HttpClient
from memsync.providers.http.retry import RetryPolicy
from tests.conftest import run_memsync, write_config
from tests.doubles.served import KEY, Served


def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Counting(httpx.BaseTransport):
    """A real TCP transport that counts the requests it tries to send."""

    def __init__(self, answers: list[httpx.Response | None] | None = None) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent = 0
        self.answers = answers  # None in the list: send for real (to the closed port)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.answers:
            answer = self.answers.pop(0)
            if answer is not None:
                return answer
        return self.inner.handle_request(request)


def client(transport: httpx.BaseTransport, port: int) -> HttpClient:
    return HttpClient(
        "remote",
        f"http://127.0.0.1:{port}",
        transport=transport,
        retry=RetryPolicy(attempts=4, initial_backoff=0.01),
        sleep=lambda seconds: None,
    )


def test_a_refusing_server_is_not_tried_again_after_a_few_failures_in_a_row() -> None:
    transport = Counting()
    http = client(transport, closed_port())
    with pytest.raises(ProviderUnreachable, match=r"^remote unreachable \(.*refused"):
        http.get("/memories")
    assert transport.sent == THRESHOLD  # the retries stopped when the breaker opened
    for _ in range(20):
        with pytest.raises(ProviderUnreachable):
            http.json("POST", "/memories", json={"text": "never sent"})
    assert transport.sent == THRESHOLD  # nothing more was sent
    assert http.breaker.reason is not None and "refused" in http.breaker.reason.lower()


def test_an_answer_between_failures_keeps_the_provider_reachable() -> None:
    ok = httpx.Response(200, json={"ok": True})
    # refused, refused, answered: never THRESHOLD refusals in a row
    transport = Counting([None, None, ok] * 5)
    http = client(transport, closed_port())
    for _ in range(5):
        assert http.get("/x") == {"ok": True}
    assert transport.sent == 15 and http.breaker.reason is None


def test_a_server_that_answers_errors_is_reachable() -> None:
    transport = Counting([httpx.Response(503, json={"detail": "down for maintenance"})] * 40)
    http = client(transport, closed_port())
    for _ in range(10):
        with pytest.raises(TransientProviderError) as raised:
            http.get("/x")
        assert not isinstance(raised.value, ProviderUnreachable)
    assert transport.sent == 40 and http.breaker.reason is None


# --- a server killed mid-cycle, end to end ----------------------------------------------------

N = 300


@pytest.fixture
def served() -> Iterator[Served]:
    double = Served("mem0-server")
    yield double
    double.close()


def configure(home: Path, port: int) -> None:
    source = home / "source"
    source.mkdir(exist_ok=True)
    write_pmm_file(
        source / "alice.pmm.jsonl",
        Header("test", {"user_id": "alice"}),
        (
            Record(id=f"m{i:04d}", content=f"memory {i}: likes tea", scope_key="alice")
            for i in range(N)
        ),
    )
    write_config(
        home,
        f"""
[sync]
active = "source"
[providers.source]
type = "pmm-dir"
path = "{source}"
scope_key = "alice"
[providers.remote]
type = "mem0-server"
base_url = "http://127.0.0.1:{port}"
scope = {{ user_id = "alice" }}
api_key_env = "MEMSYNC_TEST_KEY"
[providers.backup]
type = "pmm-dir"
path = "{home / "backup"}"
direction = "push"
""",
    )


def outbox_states(home: Path, provider: str) -> list[tuple[str, int]]:
    """(state, attempts) of each of the last run's writes into ``provider``."""
    with sqlite3.connect(home / "state" / "staging.db") as conn:
        return [
            (row[0], row[1])
            for row in conn.execute(
                "SELECT state, attempts FROM outbox WHERE provider = ? "
                "AND run_id = (SELECT MAX(id) FROM runs)",
                (provider,),
            )
        ]


def held_by_the_double(port: int) -> list[str]:
    answer = httpx.get(
        f"http://127.0.0.1:{port}/memories",
        params={"user_id": "alice", "top_k": 1000},
        headers={"X-API-Key": KEY},
        timeout=60,
    )
    answer.raise_for_status()
    return sorted(item["memory"] for item in answer.json()["results"])


def test_a_server_killed_mid_cycle_is_reported_once_and_its_writes_wait(
    home: Path, served: Served
) -> None:
    configure(home, served.port)
    served.die_on_write()

    killed = run_memsync(home, "sync", env_extra={"MEMSYNC_TEST_KEY": KEY})

    assert served.wait_dead() == 0  # the first write killed it
    output = (killed.stdout + killed.stderr).splitlines()
    said = [line for line in output if "unreachable" in line]
    assert len(said) == 1, output
    assert said[0].endswith(f"; {N} writes kept for the next cycle"), said
    assert "remote unreachable (" in said[0]
    assert len(output) < 10, output  # not a line per write, nor per retry
    assert killed.returncode != 0
    # kept: pending, no attempt spent, nothing failed or parked as dead
    assert outbox_states(home, "remote") == [("pending", 0)] * N
    # the other providers were written all the same
    backup = (home / "backup" / "alice.pmm.jsonl").read_text().splitlines()[1:]
    assert len(backup) == N

    again = Served("mem0-server", port=served.port)  # the server is back, empty
    try:
        healed = run_memsync(home, "sync", "--json", env_extra={"MEMSYNC_TEST_KEY": KEY})
        assert healed.returncode == 0, healed.stdout + healed.stderr
        assert json.loads(healed.stdout)["providers"]["remote"]["written"] == N
        assert held_by_the_double(again.port) == sorted(f"memory {i}: likes tea" for i in range(N))
    finally:
        again.close()


def test_the_scopes_of_one_provider_share_its_breaker_and_a_new_cycle_starts_afresh() -> None:
    from memsync.providers.mem0.server import Mem0ServerProvider

    transport = Counting()
    base = Mem0ServerProvider(
        "remote",
        f"http://127.0.0.1:{closed_port()}",
        {"user_id": "*"},
        auth="none",
        transport=transport,
        retry=RetryPolicy(attempts=4, initial_backoff=0.01),
        sleep=lambda seconds: None,
    )
    alice = base.bound_to("remote[user_id=alice]", {"user_id": "alice"})
    bob = base.bound_to("remote[user_id=bob]", {"user_id": "bob"})
    with pytest.raises(ProviderUnreachable, match=r"^remote unreachable \("):
        alice.http.get("/memories")
    assert transport.sent == THRESHOLD
    with pytest.raises(ProviderUnreachable, match=r"^remote unreachable \("):
        bob.http.get("/memories")  # found unreachable once, for every scope
    assert transport.sent == THRESHOLD
    for provider in (alice, bob, base):
        provider.close()  # the end of the cycle
    with pytest.raises(ProviderUnreachable):
        base.http.get("/memories")  # tried again, from a closed breaker
    assert transport.sent == 2 * THRESHOLD
