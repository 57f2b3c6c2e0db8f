"""Pacing on the rate-limit headers: memsync waits before the limit, never bouncing off it.

The Platform double enforces a fixed-window limit and sends ``X-RateLimit-Limit``,
``-Remaining`` and ``-Reset`` on every answer of the limited route (Mem0's own client reads
them from its 429s). memsync reads them on every answer, and one pause serves the provider's
whole pool of writers and every scope's client.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported

from memsync.base.records import Outgoing
from memsync.base.secrets import Secret
from memsync.providers.base import WriteOp
from memsync.providers.http.client import HttpClient
from memsync.providers.http.pacing import RateLimitPacer, read_headers, route_of
from memsync.providers.mem0.platform import Mem0PlatformProvider
from tests.doubles.mem0_platform_app import Mem0PlatformDouble, RateLimit

KEY = "m0-pacing-key-0123456789"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def answer(limit: int, remaining: int, reset: float) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(reset),
    }


# the headers ----------------------------------------------------------------------------------


def test_reset_is_read_as_seconds_a_unix_time_or_a_date() -> None:
    wall = lambda: 1_800_000_000.0  # noqa: E731
    seen = read_headers(answer(1000, 7, 12.5), wall=wall)
    assert seen is not None and (seen.limit, seen.remaining, seen.reset) == (1000, 7, 12.5)
    assert read_headers(answer(1000, 7, 1_800_000_030), wall=wall).reset == 30.0  # type: ignore[union-attr]
    assert read_headers(answer(1000, 7, 1_800_000_030_000), wall=wall).reset == 30.0  # type: ignore[union-attr]
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=40), usegmt=True)
    dated = read_headers({**answer(1000, 7, 0), "X-RateLimit-Reset": date})
    assert dated is not None and 35 < dated.reset <= 40


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "5"},
        answer(0, 0, 5),
        {**answer(1000, 5, 5), "X-RateLimit-Remaining": "many"},
        {**answer(1000, 5, 5), "X-RateLimit-Reset": "soon"},
    ],
)
def test_missing_or_garbled_headers_pace_nothing(headers: dict[str, str]) -> None:
    assert read_headers(headers) is None


def test_routes_are_told_apart_by_path_without_ids() -> None:
    one = route_of("PUT", "/v1/memories/0b9d2c4e-7f1a-4c3b-9e8d-1a2b3c4d5e6f/")
    assert one == route_of("put", "/v1/memories/9f9d2c4e-7f1a-4c3b-9e8d-1a2b3c4d5e60/")
    assert one == "PUT /v1/memories/*/"
    assert route_of("POST", "/v3/memories/add/") == "POST /v3/memories/add/"


# the pacer, on a clock a test moves -------------------------------------------------------


def test_a_spent_window_makes_each_request_wait_once_for_the_next() -> None:
    clock = Clock()
    pacer = RateLimitPacer(clock=clock)
    first = pacer.reserve("POST", "/v3/memories/add/")
    assert first.wait == 0  # nothing known yet: not paced
    pacer.done(first, answer(5, 4, 10.0))  # the window allows 4 more, for 10 s
    waits = [pacer.reserve("POST", "/v3/memories/add/").wait for _ in range(6)]
    assert waits[:4] == [0, 0, 0, 0]
    assert 10.0 <= waits[4] <= 10.01 and waits[4] == waits[5]  # the next window, both
    clock.now += 10.5  # the window turned: 5 allowed, 2 of them promised already
    fresh = [pacer.reserve("POST", "/v3/memories/add/").wait for _ in range(4)]
    assert fresh[:3] == [0, 0, 0] and fresh[3] == pytest.approx(10.0 - 0.5 + 0.005)


def test_another_client_spending_the_window_lowers_the_count() -> None:
    clock = Clock()
    pacer = RateLimitPacer(clock=clock)
    pacer.done(pacer.reserve("POST", "/add/"), answer(100, 90, 30.0))
    ticket = pacer.reserve("POST", "/add/")
    pacer.done(ticket, answer(100, 1, 29.0))  # someone else used the key meanwhile
    assert pacer.reserve("POST", "/add/").wait == 0
    assert pacer.reserve("POST", "/add/").wait == pytest.approx(29.005)


def test_an_answer_from_a_window_already_over_changes_nothing() -> None:
    clock = Clock()
    pacer = RateLimitPacer(clock=clock)
    pacer.done(pacer.reserve("POST", "/add/"), answer(3, 0, 10.0))
    late = pacer.reserve("POST", "/add/")  # promised the next window
    clock.now += 10.5
    pacer.done(pacer.reserve("POST", "/add/"), answer(3, 1, 9.5))  # the new window speaks
    pacer.done(late, answer(3, 0, 0.2))  # an answer sent before the turn arrives late
    assert pacer.reserve("POST", "/add/").wait == 0  # the new window's last request


def test_routes_without_headers_or_with_their_own_limit_are_paced_apart() -> None:
    clock = Clock()
    pacer = RateLimitPacer(clock=clock)
    pacer.done(pacer.reserve("POST", "/v3/memories/add/"), answer(2, 0, 60.0))
    pacer.done(pacer.reserve("POST", "/v3/memories/search/"), answer(50, 49, 60.0))
    pacer.done(pacer.reserve("POST", "/v3/memories/"), None)
    assert pacer.reserve("POST", "/v3/memories/add/").wait > 59
    assert pacer.reserve("POST", "/v3/memories/search/").wait == 0
    assert all(pacer.reserve("POST", "/v3/memories/").wait == 0 for _ in range(100))


# against the double -------------------------------------------------------------------------


def limited(limit: int = 40, window: float = 1.0) -> Mem0PlatformDouble:
    return Mem0PlatformDouble(api_key=KEY, rate_limit=RateLimit(limit=limit, window=window))


def provider(double: Mem0PlatformDouble, user: str = "alice") -> Mem0PlatformProvider:
    return Mem0PlatformProvider(
        "m0p",
        {"user_id": user},
        secret=Secret(KEY, "$MEM0_API_KEY"),
        base_url="https://api.mem0.test",
        transport=double.transport(),
        concurrency=8,
    )


def creates(n: int, prefix: str = "m") -> list[WriteOp]:
    return [
        WriteOp("create", f"{prefix}{i}", item=Outgoing(origin=f"o:{prefix}{i}", content=f"{i}"))
        for i in range(n)
    ]


def test_the_double_enforces_its_limit_with_the_headers_memoryclient_reads() -> None:
    from mem0 import MemoryClient
    from mem0.exceptions import RateLimitError

    double = limited(limit=2, window=60.0)
    client = MemoryClient(
        api_key=KEY, host="https://api.mem0.test", client=httpx.Client(transport=double.transport())
    )
    for text in ("one", "two"):
        client.add([{"role": "user", "content": text}], user_id="alice", infer=False)
    with pytest.raises(RateLimitError) as refused:
        client.add([{"role": "user", "content": "three"}], user_id="alice", infer=False)
    info = refused.value.debug_info
    assert info["x_ratelimit_limit"] == "2" and info["x_ratelimit_remaining"] == "0"
    assert 0 < int(info["x_ratelimit_reset"]) <= 60 and 0 < info["retry_after"] <= 60
    assert double.throttled == 1 and len(double.memories) == 2


def test_eight_writers_pace_on_one_window_and_never_meet_a_429() -> None:
    double = limited(limit=40, window=1.0)
    platform = provider(double)
    results = list(platform.write_many(creates(130)))
    assert [r.error for r in results if r.error] == []
    assert len(double.memories) == 130
    assert double.throttled == 0  # not one 429...
    assert platform.http.pacer.waits > 0  # ...because memsync waited, not because it was slow


def test_every_scope_of_a_provider_paces_on_the_same_window() -> None:
    double = limited(limit=30, window=1.0)
    base = provider(double, "*")
    scopes = [base.bound_to(f"m0p[user_id={u}]", {"user_id": u}) for u in ("alice", "bob")]
    assert scopes[0].http.pacer is scopes[1].http.pacer is base.http.pacer
    done = [list(s.write_many(creates(45, s.name))) for s in scopes]  # type: ignore[attr-defined]
    assert all(r.error is None for batch in done for r in batch)
    assert double.throttled == 0 and len(double.memories) == 90


def test_without_pacing_the_same_writes_bounce_off_the_limit() -> None:
    # The baseline the pacing is measured against: a client that reads only Retry-After.
    class Deaf(RateLimitPacer):
        def done(self, ticket: object, headers: object) -> None:  # type: ignore[override]
            pass

    double = limited(limit=40, window=1.0)
    client = HttpClient(
        "m0p",
        "https://api.mem0.test",
        secret=Secret(KEY, "$MEM0_API_KEY"),
        auth="token",
        transport=double.transport(),
        concurrency=8,
        pacer=Deaf(),
    )
    body = {"messages": [{"role": "user", "content": "x"}], "user_id": "a", "infer": False}
    threads = [
        threading.Thread(
            target=lambda: [client.json("POST", "/v3/memories/add/", json=body) for _ in range(8)]
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert double.throttled > 0
