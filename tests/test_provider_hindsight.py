"""hindsight passes the provider contract on a double of its HTTP API, and stays honest when
the server pages, throttles, fails or answers garbage.

The double (tests/doubles/hindsight_app.py) follows hindsight-api 1.1.0's routes as a server
with ``HINDSIGHT_API_LLM_PROVIDER=none`` runs them; tests/integration/ runs the same contract
against a real server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsync.base.errors import (
    AuthError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.records import ORIGIN_KEY, Outgoing
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.from_config import build_engine
from memsync.engine.report import CycleReport, SyncOptions
from memsync.providers import build_provider
from memsync.providers.base import Provider
from memsync.providers.hindsight.convert import JSON_MARKER, decode_value, encode_value
from memsync.providers.hindsight.provider import HindsightProvider
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore
from tests.contract import ProviderContract, item, list_all
from tests.doubles import Fault
from tests.doubles.hindsight_app import HindsightDouble

BASE = "http://127.0.0.1:8888"
FAST = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0, max_elapsed=5.0)


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def provider_on(
    double: HindsightDouble, bank: str | None = "alice", **options: Any
) -> HindsightProvider:
    options.setdefault("retry", FAST)
    options.setdefault("sleep", Sleeps())
    provider = HindsightProvider(
        "hs",
        BASE,
        bank=bank,
        page_size=options.pop("page_size", 50),
        transport=double.transport(),
        **options,
    )
    provider.open()
    return provider


class TestHindsightContract(ProviderContract):
    @pytest.fixture
    def factory(self) -> Iterator[Any]:
        self.double = HindsightDouble()
        made: list[Provider] = []

        def make(scope: str) -> Provider:
            made.append(provider_on(self.double, scope))
            return made[-1]

        yield make
        for provider in made:
            provider.close()

    def insert_empty(self, provider: Provider) -> str:
        assert isinstance(provider, HindsightProvider) and provider.bank
        return self.double.insert_empty(provider.bank, "written-elsewhere")


@pytest.fixture
def double() -> HindsightDouble:
    return HindsightDouble()


# what memsync writes ----------------------------------------------------------------------


def test_memory_is_written_as_a_document_named_by_its_origin(double: HindsightDouble) -> None:
    provider = provider_on(double)
    record = provider.create(item("likes tea", origin="mem0:42", topic="drinks"))
    (sent,) = [s.body for s in double.faults.requests("POST", "/v1/default/banks/alice/memories")]
    assert sent["async"] is False
    (entry,) = sent["items"]
    assert entry["document_id"] == "mem0:42" and entry["update_mode"] == "replace"
    assert entry["metadata"] == {"topic": "drinks", ORIGIN_KEY: "mem0:42"}
    assert record.id == "mem0:42" and record.origin == "mem0:42"


def test_replaying_a_write_replaces_instead_of_duplicating(double: HindsightDouble) -> None:
    provider = provider_on(double)
    for _ in range(3):
        provider.create(item("same memory", origin="mnem:n1"))
    assert len(double.banks["alice"].documents) == 1
    assert [u.text for u in double.units_of("alice")] == ["same memory"]


def test_metadata_reaches_hindsight_as_strings_and_comes_back_typed(
    double: HindsightDouble,
) -> None:
    provider = provider_on(double)
    metadata = {
        "n": 3,
        "ok": True,
        "none": None,
        "list": [1, "a"],
        "nested": {"k": [1.5]},
        "looks encoded": JSON_MARKER + "[1]",
        "plain": "text",
    }
    provider.create(item("typed metadata", origin="test:m", **metadata))
    (unit,) = double.units_of("alice")
    assert all(isinstance(v, str) for v in unit.metadata.values())
    assert unit.metadata["plain"] == "text"
    (record,), _ = list_all(provider)
    assert record.metadata == metadata


@pytest.mark.parametrize("value", ["", "x", JSON_MARKER, 0, -1.5, False, None, [], {"a": [None]}])
def test_metadata_value_encoding_is_reversible(value: Any) -> None:
    encoded = encode_value(value)
    assert isinstance(encoded, str)
    assert decode_value(encoded) == value


def test_created_at_is_sent_as_a_utc_timestamp(double: HindsightDouble) -> None:
    provider = provider_on(double)
    outgoing = item("met Bob", origin="test:t")
    outgoing.created_at = "2021-06-01T09:30:00-07:00"
    provider.create(outgoing)
    (sent,) = double.faults.requests("POST")
    assert sent.body["items"][0]["timestamp"] == "2021-06-01T16:30:00Z"


def test_text_longer_than_one_chunk_comes_back_whole() -> None:
    double = HindsightDouble(chunk_size=100)
    provider = provider_on(double)
    text = " ".join(f"sentence number {i} of a long memory." for i in range(20))
    provider.create(item(text, origin="test:long"))
    assert len(double.units_of("alice")) > 1
    (record,), _ = list_all(provider)
    assert record.content == text


def test_update_of_an_existing_document_keeps_its_id_and_origin_marker(
    double: HindsightDouble,
) -> None:
    provider = provider_on(double)
    created = provider.create(item("v1", origin="mem0:7"))
    updated = provider.update(created.id, item("v2", origin="mem0:7", k="v"))
    assert (updated.id, updated.content, updated.origin) == ("mem0:7", "v2", "mem0:7")


class Counting(httpx.BaseTransport):
    """Counts the requests a client sends, by method and route."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return self.inner.handle_request(request)


def test_updating_memsyncs_own_document_sends_no_existence_check(
    double: HindsightDouble,
) -> None:
    counting = Counting(double.transport())
    provider = HindsightProvider("hs", BASE, bank="alice", transport=counting, retry=FAST)
    created = provider.create(item("v1", origin="mem0:8"))
    counting.sent.clear()
    provider.update(created.id, item("v2", origin="mem0:8"))
    # the retain and its read-back; no GET of the document before it
    assert counting.sent == [
        "POST /v1/default/banks/alice/memories",
        "GET /v1/default/banks/alice/memories/list",
    ]
    (record,), _ = list_all(provider)
    assert (record.id, record.content) == ("mem0:8", "v2")


def test_a_document_written_elsewhere_and_deleted_is_not_brought_back_by_an_update(
    double: HindsightDouble,
) -> None:
    provider = provider_on(double)
    double.write("alice", "written-elsewhere", "their text")
    double.remove("alice", "written-elsewhere")
    with pytest.raises(NotFound):
        provider.update("written-elsewhere", item("ours", origin="mem0:9"))
    records, _ = list_all(provider)
    assert records == []


# what memsync reads -----------------------------------------------------------------------


def test_observations_are_left_out_and_not_reported_as_skipped(double: HindsightDouble) -> None:
    provider = provider_on(double)
    created = provider.create(item("drinks coffee daily", origin="test:c"))
    double.add_observation(
        "alice", "the user is a coffee person", [created.provenance["memory_ids"][0]]
    )
    records, listing = list_all(provider)
    assert [r.content for r in records] == ["drinks coffee daily"]
    assert listing.skipped == [] and listing.complete
    assert listing.observations == 1


def test_a_bank_that_does_not_exist_lists_nothing_and_is_complete(
    double: HindsightDouble,
) -> None:
    records, listing = list_all(provider_on(double, "nobody"))
    assert records == [] and listing.complete


def test_a_base_url_that_is_not_hindsight_is_an_error_not_an_empty_bank() -> None:
    from starlette.applications import Starlette

    from tests.doubles import ASGIBridge

    provider = HindsightProvider("hs", BASE, bank="alice", transport=ASGIBridge(Starlette()))
    with pytest.raises(ProviderError, match="base_url"):
        list_all(provider)


def test_all_banks_are_listed_with_their_bank_as_scope_key(double: HindsightDouble) -> None:
    everything = provider_on(double, bank=None)
    provider_on(double, "alice").create(item("alice's", origin="test:a"))
    written = everything.create(Outgoing(origin="test:b", content="bob's", scope_key="bob"))
    assert written.id == "bob/test:b" and written.scope_key == "bob"
    records, listing = list_all(everything)
    assert listing.complete
    assert sorted((r.scope_key, r.id, r.content) for r in records) == [
        ("alice", "alice/test:a", "alice's"),
        ("bob", "bob/test:b", "bob's"),
    ]
    everything.delete("bob/test:b")
    assert [r.scope_key for r in list_all(everything)[0]] == ["alice"]


def test_creating_without_a_bank_or_scope_key_is_refused(double: HindsightDouble) -> None:
    with pytest.raises(ProviderError, match="set bank"):
        provider_on(double, bank=None).create(item("nowhere", origin="test:x"))


def test_incremental_listing_rereads_the_lookback_window_only() -> None:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]
    double = HindsightDouble(clock=lambda: now[0])
    provider = provider_on(double, lookback=600.0)
    provider.create(item("old memory", origin="test:old"))
    now[0] += timedelta(hours=1)
    provider.create(item("recent memory", origin="test:recent"))
    _, full = list_all(provider)
    assert full.mode == "full" and full.cursor is not None
    now[0] += timedelta(hours=1)
    provider.create(item("new memory", origin="test:new"))
    listing = provider.listing(full.cursor)
    seen = [r.content for page in listing.pages() for r in page.records]
    assert listing.mode == "incremental" and listing.partial_reason is None
    assert sorted(seen) == ["new memory", "recent memory"]
    # Complete: every change since the cursor was read. It names no deletes (Hindsight's
    # changed-documents list has none): those come from the next full listing.
    assert listing.removed == [] and listing.complete
    assert listing.cursor is not None and listing.cursor > full.cursor


def test_a_memory_written_elsewhere_reaches_hindsight_once_its_listing_is_incremental(
    tmp_path: Path,
) -> None:
    """Hindsight's second listing on is incremental (documents changed since the cursor). A
    memory new in another provider then is still written into Hindsight in the next cycle,
    the provider reads as ok, and its cursor moves on, instead of waiting for the hourly
    full pass."""
    double = HindsightDouble()
    source = MemoryProvider("source", scope="alice")
    hindsight = provider_on(double)
    hindsight.close()
    config = parse_config(
        '[sync]\nactive = "source"\n[providers.source]\ntype = "pmm-dir"\npath = "/unused"\n'
        '[providers.hs]\ntype = "pmm-dir"\npath = "/unused"\n'
    )
    db = tmp_path / "staging.db"

    def cycle() -> tuple[CycleReport, str | None]:
        with StagingStore.open(db) as store:
            engine = build_engine(config, store, {"source": source, "hs": hindsight})
            report = engine.run_cycle(SyncOptions())
            assert report.exit_code == 0
            return report, store.providers.cursor("hs").cursor

    def write(origin: str, text: str) -> None:
        source.open()
        source.create(Outgoing(origin=origin, content=text, scope_key="alice"))
        source.close()

    write("agent:1", "prefers tea")
    cycle()  # Hindsight empty: a full listing that dates nothing, then the write
    report, cursor = cycle()  # a full listing that finds it, and keeps a cursor
    full = report.providers["hs"].mirror
    assert full is not None and full.mode == "full" and cursor is not None

    write("agent:2", "moved to Lisbon")
    report, _ = cycle()
    outcome = report.providers["hs"]
    assert outcome.mirror is not None and outcome.mirror.mode == "incremental"
    assert outcome.state.value == "ok" and outcome.mirror.partial_reason is None
    assert report.planned_total == 1
    hindsight.open()
    held, _ = list_all(hindsight)
    hindsight.close()
    assert sorted(r.content for r in held) == ["moved to Lisbon", "prefers tea"]
    _, later = cycle()  # the write is the newest change Hindsight holds: the cursor follows it
    assert later is not None and later > cursor


class Overlapping(httpx.BaseTransport):
    """Holds the first per-document unit read until a second one is in flight (or PATIENCE
    passes): read one after another, the most ever in flight stays 1."""

    PATIENCE = 30.0

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.lock = threading.Lock()
        self.in_flight = self.most = 0
        self.second = threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        per_document = request.url.path.endswith("/memories/list") and (
            "document_id" in request.url.params
        )
        if not per_document:
            return self.inner.handle_request(request)
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            if self.in_flight >= 2:
                self.second.set()
        try:
            self.second.wait(self.PATIENCE)
            return self.inner.handle_request(request)
        finally:
            with self.lock:
                self.in_flight -= 1


def test_an_incremental_listing_reads_the_changed_documents_concurrently() -> None:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]
    double = HindsightDouble(clock=lambda: now[0])
    writer = provider_on(double)
    for i in range(6):
        writer.create(item(f"memory {i}", origin=f"test:{i}"))
    _, full = list_all(writer)
    overlap = Overlapping(double.transport())
    reader = HindsightProvider("hs", BASE, bank="alice", transport=overlap, concurrency=4)
    listing = reader.listing(full.cursor)
    seen = sorted(r.content for page in listing.pages() for r in page.records)
    assert seen == [f"memory {i}" for i in range(6)] and listing.partial_reason is None
    assert overlap.most >= 2


def test_a_partial_listing_keeps_no_cursor(double: HindsightDouble) -> None:
    provider = provider_on(double, page_size=5)
    for i in range(12):
        provider.create(item(f"memory {i}", origin=f"test:{i}"))
    double.on_list_page = lambda bank, route, offset: double.write(bank, f"x{offset}", "more")
    _, listing = list_all(provider)
    assert not listing.complete and listing.cursor is None


# paging that shifts under the listing -----------------------------------------------------


def test_a_write_between_pages_makes_the_listing_partial(double: HindsightDouble) -> None:
    provider = provider_on(double, page_size=20)
    for i in range(50):
        provider.create(item(f"memory {i}", origin=f"test:{i}"))

    def write_once(bank: str, route: str, offset: int) -> None:
        if offset == 0:  # after the first page: the pages fetched ahead all come later
            double.on_list_page = None
            double.write("alice", "test:mid", "written mid-listing")

    double.on_list_page = write_once
    records, listing = list_all(provider)
    assert not listing.complete
    assert "changed while it was read" in (listing.partial_reason or "")
    assert len({r.id for r in records}) == len(records)  # duplicates from the shift dropped


def test_a_delete_between_pages_makes_the_listing_partial(double: HindsightDouble) -> None:
    provider = provider_on(double, page_size=20)
    for i in range(50):
        provider.create(item(f"memory {i}", origin=f"test:{i}"))

    def delete_once(bank: str, route: str, offset: int) -> None:
        if offset == 0:  # after the first page: the pages fetched ahead all come later
            double.on_list_page = None
            double.remove("alice", "test:0")

    double.on_list_page = delete_once
    _, listing = list_all(provider)
    assert not listing.complete


def test_a_steady_bank_lists_complete_across_pages(double: HindsightDouble) -> None:
    provider = provider_on(double, page_size=7)
    for i in range(30):
        provider.create(item(f"memory {i}", origin=f"test:{i}"))
    records, listing = list_all(provider)
    assert listing.complete and len(records) == 30


# failures ---------------------------------------------------------------------------------


def test_429_waits_for_retry_after_then_succeeds(double: HindsightDouble) -> None:
    sleeps = Sleeps()
    provider = provider_on(double, sleep=sleeps)
    provider.create(item("throttled", origin="test:r"))
    double.faults.inject(Fault.rate_limit("2"), path="/v1/default/banks/alice/memories/list")
    records, listing = list_all(provider)
    assert [r.content for r in records] == ["throttled"] and listing.complete
    assert sleeps == [2.0]


def test_a_write_answered_429_is_sent_again(double: HindsightDouble) -> None:
    provider = provider_on(double)
    double.faults.inject(Fault.rate_limit("0"), method="POST")
    provider.create(item("eventually", origin="test:w"))
    assert len(double.faults.requests("POST")) == 2
    assert [u.text for u in double.units_of("alice")] == ["eventually"]


def test_a_500_is_retried_and_a_persistent_one_is_transient(double: HindsightDouble) -> None:
    provider = provider_on(double)
    provider.create(item("kept", origin="test:k"))
    double.faults.inject(Fault.error(500), path="/v1/default/banks/alice/memories/list")
    assert [r.content for r in list_all(provider)[0]] == ["kept"]
    double.faults.inject(Fault.error(503), path="/v1/default/banks/alice/memories/list", times=9)
    with pytest.raises(TransientProviderError, match="HTTP 503"):
        list_all(provider)


def test_a_retain_that_timed_out_is_retried_because_it_replaces(
    double: HindsightDouble,
) -> None:
    provider = provider_on(double, timeout=2.0)
    double.faults.inject(Fault.stall(60), method="POST")
    provider.create(item("slow server", origin="test:s"))
    assert [u.text for u in double.units_of("alice")] == ["slow server"]


def test_a_listing_that_keeps_timing_out_is_transient(double: HindsightDouble) -> None:
    provider = provider_on(double, timeout=2.0)
    provider.create(item("x", origin="test:x"))
    double.faults.inject(Fault.stall(60), method="GET", times=9)
    with pytest.raises(TransientProviderError, match="no answer"):
        list_all(provider)


def test_malformed_json_is_an_invalid_response(double: HindsightDouble) -> None:
    provider = provider_on(double)
    provider.create(item("x", origin="test:x"))
    double.faults.inject(Fault.malformed(), method="GET", times=9)
    with pytest.raises(InvalidResponse):
        list_all(provider)


def test_a_page_without_a_total_is_an_invalid_response(double: HindsightDouble) -> None:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def no_total(request: Any) -> JSONResponse:
        return JSONResponse({"items": []})

    app = Starlette(routes=[Route("/v1/default/banks/alice/memories/list", no_total)])
    from tests.doubles import ASGIBridge

    provider = HindsightProvider("hs", BASE, bank="alice", transport=ASGIBridge(app))
    with pytest.raises(InvalidResponse, match="total"):
        list_all(provider)


# auth and config --------------------------------------------------------------------------


def test_the_key_goes_as_a_bearer_token_and_never_into_errors() -> None:
    double = HindsightDouble(api_key="s3cret-key")
    good = provider_on(double, secret=Secret("s3cret-key", "$HINDSIGHT_KEY"))
    good.create(item("authorised", origin="test:a"))
    assert double.faults.requests("POST")[0].headers["authorization"] == "Bearer s3cret-key"
    bad = provider_on(double, secret=Secret("wrong-key", "$HINDSIGHT_KEY"))
    with pytest.raises(AuthError) as raised:
        list_all(bad)
    assert "$HINDSIGHT_KEY" in str(raised.value) and "wrong-key" not in str(raised.value)
    assert "HTTP 401: Invalid API key" in str(raised.value)  # the server's own reason


def test_built_from_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HS_KEY", "k")
    config = parse_config(
        """
        [sync]
        active = "hs"
        [providers.hs]
        type = "hindsight"
        base_url = "http://localhost:8888/"
        bank = "team"
        api_key_env = "HS_KEY"
        lookback = "5m"
        """
    )
    provider = build_provider("hs", config)
    assert isinstance(provider, HindsightProvider)
    assert provider.identity() == "hindsight:http://localhost:8888#team"
    assert (provider.scope_key(), provider.lookback) == ("team", 300.0)
    assert "k" not in repr(provider.secret)
