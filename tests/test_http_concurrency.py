"""Concurrent writes to HTTP providers: bounded, ordered per memory, slowed together by a 429,
and never left running behind the engine's back."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx

from memsync.base.errors import AuthError, ProviderUnreachable
from memsync.base.records import Outgoing
from memsync.providers.base import WriteOp, WriteResult
from memsync.providers.concurrent import PagesAhead, lanes, write_concurrently
from memsync.providers.http.client import HttpClient
from memsync.providers.http.retry import RetryPolicy

PATIENCE = 30.0  # seconds a test waits for another thread; never reached when things work


def op(key: str, origin: str, kind: str = "create") -> WriteOp:
    return WriteOp(kind, key, item=Outgoing(origin=origin, content=f"text {key}"))  # type: ignore[arg-type]


def test_a_429_on_one_worker_makes_the_others_wait_as_long() -> None:
    calls = {"n": 0}

    def answer(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return httpx.Response(429, headers={"Retry-After": "30"})
        return httpx.Response(200, json={})

    limited = threading.Event()
    release = threading.Event()
    waits: dict[str, list[float]] = {"first": [], "second": []}

    def sleep(seconds: float) -> None:
        if threading.current_thread().name == "first":
            waits["first"].append(seconds)
            limited.set()
            assert release.wait(PATIENCE)
        else:
            waits["second"].append(seconds)

    client = HttpClient(
        "p",
        "https://api.example.test",
        transport=httpx.MockTransport(answer),
        retry=RetryPolicy(attempts=3, max_elapsed=120.0),
        sleep=sleep,
        concurrency=2,
    )
    first = threading.Thread(target=client.get, args=("/a",), name="first")
    first.start()
    assert limited.wait(PATIENCE)  # the first worker was told to wait 30 s, and is waiting
    client.get("/b")  # another worker's request
    release.set()
    first.join(PATIENCE)
    assert waits["first"] == [30.0]
    assert len(waits["second"]) == 1 and 25.0 < waits["second"][0] <= 30.0


def test_one_memorys_writes_keep_their_order_while_others_overlap() -> None:
    events: list[str] = []
    lock = threading.Lock()
    other_started = threading.Event()

    def write_lane(lane: list[WriteOp]) -> Iterator[WriteResult]:
        for one in lane:
            with lock:
                events.append(f"start {one.key}")
            if one.key == "a1":
                assert other_started.wait(PATIENCE)  # b runs while a1 is in flight
            if one.key == "b":
                other_started.set()
            with lock:
                events.append(f"end {one.key}")
            yield WriteResult(one)

    ops = [op("a1", "mnem:a"), op("a2", "mnem:a", "update"), op("b", "mnem:b")]
    results = list(write_concurrently(ops, write_lane, 4))
    assert sorted(r.op.key for r in results) == ["a1", "a2", "b"]
    assert events.index("end a1") < events.index("start a2")
    assert events.index("start b") < events.index("end a1")


def test_stopping_early_starts_no_more_writes_and_leaves_none_running() -> None:
    started: list[str] = []
    lock = threading.Lock()

    def write_lane(lane: list[WriteOp]) -> Iterator[WriteResult]:
        for one in lane:
            with lock:
                started.append(one.key)
            yield WriteResult(one)

    ops = [op(f"k{i}", f"mnem:{i}") for i in range(200)]
    results = write_concurrently(ops, write_lane, 2)
    next(results)
    results.close()  # the engine stopped (SIGTERM) after the first outcome
    count = len(started)
    assert count < len(ops)
    assert not [t for t in threading.enumerate() if t.name.startswith("memsync-write")]
    assert len(started) == count  # nothing ran after close returned


def test_a_refused_key_fails_the_writes_not_yet_sent_without_sending_them() -> None:
    sent: list[str] = []
    lock = threading.Lock()

    def write_lane(lane: list[WriteOp]) -> Iterator[WriteResult]:
        for one in lane:
            with lock:
                sent.append(one.key)
            yield WriteResult(one, error=AuthError("refused"))

    ops = [op(f"k{i}", "mnem:same") for i in range(5)] + [op("x", "mnem:x")]
    results = list(write_concurrently(ops, write_lane, 2))
    assert len(results) == len(ops) and all(isinstance(r.error, AuthError) for r in results)
    assert len(sent) <= 2  # one per lane at most: the rest failed without a request


def test_an_unreachable_provider_fails_the_writes_not_yet_sent_without_sending_them() -> None:
    sent: list[str] = []
    lock = threading.Lock()

    def write_lane(lane: list[WriteOp]) -> Iterator[WriteResult]:
        for one in lane:
            with lock:
                sent.append(one.key)
            yield WriteResult(one, error=ProviderUnreachable("p unreachable (refused)"))

    ops = [op(f"k{i}", f"mnem:{i}") for i in range(100)]
    results = list(write_concurrently(ops, write_lane, 4))
    assert len(results) == len(ops)
    assert all(isinstance(r.error, ProviderUnreachable) for r in results)
    assert len(sent) <= 4  # one per worker at most: the rest failed without a request


def test_pages_ahead_hands_pages_out_in_order_with_their_errors() -> None:
    fetched: list[int] = []
    lock = threading.Lock()

    def fetch(number: int) -> int:
        with lock:
            fetched.append(number)
        if number == 4:
            raise ValueError("page 4 failed")
        return number * 10

    ahead = PagesAhead(fetch, 3)
    assert ahead.get(1) == 10
    ahead.last = 5
    assert [ahead.get(2), ahead.get(3)] == [20, 30]
    try:
        ahead.get(4)
        raise AssertionError("page 4's error was not raised")
    except ValueError as exc:
        assert "page 4" in str(exc)
    ahead.close()
    assert {1, 2, 3, 4} <= set(fetched) and len(fetched) == len(set(fetched))  # none twice


def test_a_delete_shares_the_lane_of_an_update_to_the_same_memory() -> None:
    update = WriteOp("update", "u", item=Outgoing(origin="mnem:a", content="v2"), provider_id="p1")
    delete = WriteOp("delete", "d", provider_id="p1")
    other = op("o", "mnem:b")
    assert lanes([update, other, delete]) == [[update, delete], [other]]
