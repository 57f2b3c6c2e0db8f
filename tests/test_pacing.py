"""Pacing on the rate-limit headers: memsync waits before the limit, never bouncing off it.

The Platform double enforces a fixed-window limit and sends ``X-RateLimit-Limit``,
``-Remaining`` and ``-Reset`` on every answer of the limited route (Mem0's own client reads
them from its 429s). memsync reads them on every answer, and one pause serves the provider's
whole pool of writers and every scope's client.
"""

from __future__ import annotations

import concurrent.futures
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
from memsync.providers.http import pacing
from memsync.providers.http.client import HttpClient
from memsync.providers.http.pacing import RateLimiter, read_headers, route_of
from memsync.providers.mem0.platform import Mem0PlatformProvider
from tests.doubles.mem0_platform_app import Mem0PlatformDouble, RateLimit
from tests.doubles.sliding_limit import SlidingLimit

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


# the limiter, on a clock a test moves --------------------------------------------------------


def spent(
    limiter: RateLimiter, clock: Clock, times: list[float], limit: int, window: float
) -> None:
    """memsync's requests at TIMES (each answered at once, the window's last one spending it)."""
    for at in times:
        clock.now = at
        ticket = limiter.reserve("POST", "/v3/memories/")
        assert ticket.wait == 0
        left = limit - times.index(at) - 1
        limiter.done(ticket, answer(limit, left, window - (at - times[0])))


def test_waiting_requests_resume_one_per_slot_aging_out_not_as_a_crowd() -> None:
    """Issue 39 §4: a sliding window frees one slot as each request leaves it; the fixed-window
    pacer granted a whole fresh window at one instant, and the crowd met 429s."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    spent(limiter, clock, [0.0, 2.0, 4.0, 6.0, 8.0], limit=5, window=10.0)
    starts = [8.0 + limiter.reserve("POST", "/v3/memories/").wait for _ in range(5)]
    assert starts == pytest.approx([10.05, 12.05, 14.05, 16.05, 18.05])
    assert limiter.waits == 5


def test_the_documented_limit_paces_before_any_answer_names_it() -> None:
    clock = Clock()
    limiter = RateLimiter(limit=3, window=60.0, clock=clock)
    for _ in range(3):
        ticket = limiter.reserve("GET", "/v1/ping/")
        assert ticket.wait == 0
        limiter.done(ticket, None)  # no answer at all: its slot held as of now
    assert limiter.reserve("GET", "/v1/ping/").wait == pytest.approx(60.05)


def test_a_process_that_just_started_sends_one_request_until_an_answer_says_who_holds_what() -> (
    None
):
    """A `verify` beside the daemon, in a process of its own, knows nothing of the minute:
    the issue's 429s came from the requests it sent together before any answer."""
    clock = Clock()
    limiter = RateLimiter(limit=1000, window=60.0, clock=clock)
    first = limiter.reserve("POST", "/v3/memories/")
    second: list[float] = []
    waiting = threading.Thread(
        target=lambda: second.append(limiter.reserve("POST", "/v3/memories/").wait)
    )
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and second == []  # held back until the first is answered
    limiter.done(first, answer(1000, 0, 12.0))  # the daemon holds the rest of the window
    waiting.join(30)
    assert second == [pytest.approx(12.05)]  # waits for the server's oldest slot, alone


def test_the_key_s_other_clients_shrink_the_budget_and_headroom_leaves_them_room() -> None:
    clock = Clock()
    limiter = RateLimiter(limit=100, window=60.0, headroom=0.1, clock=clock)
    ticket = limiter.reserve("POST", "/add/")
    limiter.done(ticket, answer(100, 59, 60.0))  # 41 counted: 40 are another client's
    waits = [limiter.reserve("POST", "/add/").wait for _ in range(50)]
    # 100 less 10 left to others, less the 40 they hold, less memsync's 1: 49 go at once.
    assert waits[:49] == [0] * 49 and waits[49] > 59


def test_when_others_hold_the_whole_window_one_request_waits_for_reset_alone() -> None:
    clock = Clock()
    limiter = RateLimiter(limit=10, window=60.0, clock=clock)
    limiter.done(limiter.reserve("GET", "/x/"), answer(10, 9, 60.0))
    clock.now += 61.0  # memsync's slot aged out; another client spent the window meanwhile
    limiter.done(limiter.reserve("GET", "/x/"), answer(10, 0, 7.0))
    scout = limiter.reserve("GET", "/x/")
    assert scout.wait == pytest.approx(7.05)  # the server's oldest leaves before memsync's
    clock.now += 7.1
    limiter.done(scout, answer(10, 1, 3.0))  # a slot is free: the others hold 7 now
    assert limiter.reserve("GET", "/x/").wait == 0
    # The window is spent again: the next one waits for memsync's own oldest (at 161).
    assert limiter.reserve("GET", "/x/").wait == pytest.approx(161.0 + 60.05 - clock.now)


def test_routes_without_headers_or_with_their_own_limit_are_paced_apart() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.done(limiter.reserve("POST", "/v3/memories/add/"), answer(2, 1, 60.0))
    limiter.done(limiter.reserve("POST", "/v3/memories/search/"), answer(50, 49, 60.0))
    limiter.done(limiter.reserve("POST", "/v3/memories/"), {"Content-Type": "application/json"})
    assert limiter.reserve("POST", "/v3/memories/add/").wait == 0  # the add window's last
    assert limiter.reserve("POST", "/v3/memories/add/").wait > 59
    assert limiter.reserve("POST", "/v3/memories/search/").wait == 0
    assert all(limiter.reserve("POST", "/v3/memories/").wait == 0 for _ in range(100))


def test_one_limiter_per_server_and_key_in_the_process_the_key_never_kept() -> None:
    transport = Mem0PlatformDouble(api_key=KEY).transport()  # one server, as in a daemon

    def built(key: str) -> Mem0PlatformProvider:
        return Mem0PlatformProvider(
            "m0p",
            {"user_id": "*"},
            secret=Secret(key, "$MEM0_API_KEY"),
            base_url="https://api.mem0.test",
            transport=transport,
        )

    cycle, probe = built(KEY), built(KEY)  # a cycle's provider and the probe's
    assert cycle.http.pacer is probe.http.pacer
    assert built("another-key-0123456789").http.pacer is not cycle.http.pacer
    held = repr(vars(cycle.http.pacer)) + repr(pacing._LIMITERS) + repr(pacing._BY_TRANSPORT)
    assert KEY not in held


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


def test_five_thousand_requests_over_every_route_at_the_sliding_limit_meet_no_429() -> None:
    """Issue 40 §5 and 39 §4: a cycle writing 8 at a time and a verify reading 4 at a time,
    built as separate providers (as the daemon builds them), on one key against a sliding
    window over every route. The documented 1,000 a minute, scaled to 1,000 a second on both
    sides so that 5,000 requests take seconds; the limiter's logic is the same."""
    limit = SlidingLimit(limit=1000, window=1.0)
    double = Mem0PlatformDouble(api_key=KEY, rate_limit=limit)
    transport = double.transport()

    def built(scope: str, concurrency: int) -> Mem0PlatformProvider:
        return Mem0PlatformProvider(
            "m0p",
            {"user_id": scope},
            secret=Secret(KEY, "$MEM0_API_KEY"),
            base_url="https://api.mem0.test",
            transport=transport,
            concurrency=concurrency,
            rate_limit=(1000, 1.0),
        )

    seeded = [double.insert(f"old {i}", user_id="bob") for i in range(200)]
    cycle, verify = built("alice", 8), built("bob", 4)
    read: list[object] = []

    def verifying() -> None:
        def one(memory_id: str) -> None:
            read.append(verify.get(memory_id))

        with concurrent.futures.ThreadPoolExecutor(4) as lanes:
            for _ in range(9):
                list(lanes.map(one, seeded))

    reader = threading.Thread(target=verifying)
    reader.start()
    results = list(cycle.write_many(creates(3200)))
    reader.join(300)
    assert [r.error for r in results if r.error] == []
    assert len(read) == 1800 and all(r is not None for r in read)
    assert sum(limit.allowed.values()) >= 5000
    assert limit.refused == {}  # not one 429...
    assert cycle.http.pacer.waits > 0  # ...because memsync waited for slots


def test_without_pacing_the_same_requests_bounce_off_the_limit() -> None:
    # The baseline the pacing is measured against: a client that reads only Retry-After.
    class Deaf(RateLimiter):
        def done(self, ticket: object, headers: object) -> None:  # type: ignore[override]
            pass

    limit = SlidingLimit(limit=40, window=1.0)
    double = Mem0PlatformDouble(api_key=KEY, rate_limit=limit)
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
    assert limit.refused["memsync"] > 0
