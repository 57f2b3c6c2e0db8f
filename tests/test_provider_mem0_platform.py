"""mem0-platform passes the provider contract against a double of the hosted API, and never
calls a listing complete when offset paging or counts could have hidden a memory.

Set MEMSYNC_MEM0_PLATFORM_KEY (and optionally MEMSYNC_MEM0_PLATFORM_URL) to also run the
contract against the real Platform; it writes under throwaway user ids.
"""

from __future__ import annotations

import logging
import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memsync.base.errors import (
    AuthError,
    ConfigError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.records import parse_instant
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.providers import build_provider
from memsync.providers.base import Provider, WriteOp
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.platform import Mem0PlatformProvider
from tests.contract import ProviderContract, item, list_all
from tests.doubles import Fault
from tests.doubles.mem0_platform_app import Mem0PlatformDouble

KEY = "m0-platform-key-do-not-leak-abcdef0123"
FAST = RetryPolicy(attempts=3, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)


def make(
    platform: Mem0PlatformDouble,
    scope: str = "alice",
    *,
    key: str = KEY,
    sleeps: list[float] | None = None,
    **kwargs: Any,
) -> Mem0PlatformProvider:
    options: dict[str, Any] = dict(
        secret=Secret(key, "$MEM0_API_KEY"),
        base_url="https://api.mem0.test",
        transport=platform.transport(),
        retry=FAST,
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
        page_size=25,  # so the contract's 130 memories span six pages
    )
    options.update(kwargs)
    provider = Mem0PlatformProvider("m0p", {"user_id": scope}, **options)
    provider.open()
    return provider


@pytest.fixture(params=["replace", "merge"])
def platform(request: pytest.FixtureRequest) -> Mem0PlatformDouble:
    """Whether a PUT replaces or merges metadata is undocumented: every test runs under both."""
    return Mem0PlatformDouble(api_key=KEY, metadata_mode=request.param)


class TestMem0PlatformContract(ProviderContract):
    @pytest.fixture
    def factory(self, platform: Mem0PlatformDouble):  # type: ignore[no-untyped-def]
        self.platform = platform
        return lambda scope: make(platform, scope)

    def insert_empty(self, provider: Provider) -> str:
        assert isinstance(provider, Mem0PlatformProvider)
        return self.platform.insert("", **provider.scope)


@pytest.mark.integration
@pytest.mark.skipif(
    not os.environ.get("MEMSYNC_MEM0_PLATFORM_KEY"), reason="no Mem0 Platform key configured"
)
class TestMem0PlatformContractLive(ProviderContract):
    many = 30  # the real Platform bills per memory

    @pytest.fixture
    def factory(self):  # type: ignore[no-untyped-def]
        run = uuid.uuid4().hex[:8]

        def make_live(scope: str) -> Provider:
            provider = Mem0PlatformProvider(
                "live",
                {"user_id": f"memsync-test-{run}-{scope}"},
                secret=Secret(
                    os.environ["MEMSYNC_MEM0_PLATFORM_KEY"], "$MEMSYNC_MEM0_PLATFORM_KEY"
                ),
                base_url=os.environ.get("MEMSYNC_MEM0_PLATFORM_URL", "https://api.mem0.ai"),
                page_size=10,
            )
            provider.open()
            return provider

        return make_live


# request shapes ----------------------------------------------------------------------------


def test_requests_have_the_shapes_memoryclient_sends(platform: Mem0PlatformDouble) -> None:
    provider = make(platform, org_id="org_1", project_id="proj_1")
    created = item("met Bob in 2021", origin="mnem:7")
    created.created_at = "2021-06-01T09:30:00-07:00"
    provider.create(created)
    list_all(provider)
    (add,) = platform.faults.requests("POST", "/v3/memories/add/")
    assert add.headers["authorization"] == f"Token {KEY}"
    assert add.body["infer"] is False
    assert add.body["user_id"] == "alice"
    assert add.body["messages"] == [{"role": "user", "content": "met Bob in 2021"}]
    assert add.body["timestamp"] == int(datetime(2021, 6, 1, 16, 30, tzinfo=UTC).timestamp())
    assert add.query == {"org_id": ["org_1"], "project_id": ["proj_1"]}
    listed = [s for s in platform.faults.requests("POST") if s.path == "/v3/memories/"]
    assert listed[0].query["page"] == ["1"] and listed[0].query["page_size"] == ["25"]
    assert listed[0].body == {
        "filters": {"user_id": "alice"},
        "show_expired": True,  # expiry is not deletion
        "include_merged": True,  # nor is Dream's merge
    }
    assert platform.extraction_requests == 0


def test_org_and_project_go_only_when_configured_as_memoryclient_does(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    made = provider.create(item("one", origin="mnem:1"))
    (staged,), _ = list_all(provider)
    provider.get(made.id)
    provider.update(made.id, item("one v2", origin="mnem:1"))
    list(provider.write_many([WriteOp("delete", "d", provider_id=made.id)]))
    provider.check()
    assert len(platform.faults.seen) >= 6
    for seen in platform.faults.seen:
        assert "org_id" not in seen.query and "project_id" not in seen.query, seen.path
    configured = make(platform, org_id="org_1", project_id="proj_1")
    configured.get(staged.id)
    assert platform.faults.seen[-1].query == {"org_id": ["org_1"], "project_id": ["proj_1"]}


def test_the_run_id_listed_as_session_id_scopes_and_maps_back(
    platform: Mem0PlatformDouble,
) -> None:
    provider = Mem0PlatformProvider(
        "m0p",
        {"run_id": "run-1"},
        secret=Secret(KEY, "$MEM0_API_KEY"),
        base_url="https://api.mem0.test",
        transport=platform.transport(),
        retry=FAST,
    )
    created = provider.create(item("in a session"))
    platform.insert("another session", run_id="run-2")
    (record,), listing = list_all(provider)
    assert listing.complete and record.id == created.id
    assert record.provenance["run_id"] == "run-1"
    assert provider.get(created.id) is not None
    assert provider.check() == "reachable (proj_test), 1 memories in scope"


def test_a_queued_add_is_reported_not_trusted(platform: Mem0PlatformDouble) -> None:
    platform.queues_every_add = True  # a Platform that ignores infer: false
    with pytest.raises(ProviderError, match="queued"):
        make(platform).create(item("must not be rewritten"))


# paging and completeness -----------------------------------------------------------------------


def test_items_inserted_between_pages_make_the_listing_partial(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    for i in range(60):
        platform.insert(f"memory {i}", user_id="alice")
    platform.between_pages = lambda page: (
        platform.insert(f"written during page {page}", user_id="alice") if page == 1 else None
    )
    records, listing = list_all(provider)
    assert not listing.complete
    assert "count changed" in (listing.partial_reason or "")
    assert len({r.id for r in records}) == len(records)  # the shifted memory is not listed twice
    platform.between_pages = None
    records, listing = list_all(provider)
    assert listing.complete and len(records) == 61


def test_a_count_that_disagrees_with_the_pages_makes_the_listing_partial(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    for i in range(30):
        platform.insert(f"memory {i}", user_id="alice")
    platform.count_skew = 1
    records, listing = list_all(provider)
    assert len(records) == 30
    assert not listing.complete
    assert "counted 31" in (listing.partial_reason or "")
    assert listing.cursor is None


def test_incremental_listing_reads_only_recent_changes_and_names_no_deletes(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform, lookback=60)
    old = datetime.now(UTC) - timedelta(days=2)
    platform.insert("old and unchanged", user_id="alice", created_at=old)
    platform._last = old  # the double's clock: next writes are stamped after `old`
    first = provider.get(provider.create(item("written before the cursor")).id)
    assert first is not None
    _, full = list_all(provider)
    assert full.complete and full.mode == "full"
    cursor = full.cursor
    assert parse_instant(cursor) == parse_instant(first.updated_at)
    later = provider.get(provider.create(item("written after the cursor")).id)
    assert later is not None
    records, incremental = _collect(provider, cursor)
    # The look-back re-reads the boundary; the old memory is not read at all.
    assert {r.content for r in records} == {"written before the cursor", "written after the cursor"}
    assert incremental.mode == "incremental" and incremental.complete
    assert incremental.removed == []  # deletes need a full pass
    assert parse_instant(incremental.cursor) == parse_instant(later.updated_at)
    sent = platform.faults.requests("POST", "/v3/memories/")[-1].body["filters"]
    assert sent["AND"][0] == {"user_id": "alice"} and "gte" in sent["AND"][1]["updated_at"]


def _collect(provider: Mem0PlatformProvider, cursor: str | None) -> tuple[list[Any], Any]:
    listing = provider.listing(cursor)
    records = [r for page in listing.pages() for r in page.records]
    return records, listing


def test_an_incremental_pass_that_failed_its_count_carries_no_cursor(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    provider.create(item("one"))
    cursor = list_all(provider)[1].cursor
    platform.count_skew = 5
    _, listing = _collect(provider, cursor)
    assert not listing.complete and listing.cursor is None and listing.partial_reason


# batch writes ------------------------------------------------------------------------------


def test_write_many_batches_updates_and_deletes(platform: Mem0PlatformDouble) -> None:
    provider = make(platform, batch_size=3)
    made = [provider.create(item(f"note {i}", origin=f"mnem:{i}")) for i in range(5)]
    ops = [
        *(
            WriteOp(
                "update",
                f"u{i}",
                item=item(f"note {i} v2", origin=f"mnem:{i}", v=2),
                provider_id=made[i].id,
                previous=made[i],  # what the staging store holds, as the engine passes it
            )
            for i in range(4)
        ),
        WriteOp("delete", "d4", provider_id=made[4].id),
    ]
    results = list(provider.write_many(ops))
    assert [r.op.key for r in results] == ["u0", "u1", "u2", "u3", "d4"]
    assert all(r.error is None for r in results)
    assert results[0].record is not None and results[0].record.content == "note 0 v2"
    batches = [
        (s.method, len(s.body["memories"])) for s in platform.faults.requests(path="/v1/batch/")
    ]
    assert batches == [("PUT", 3), ("PUT", 1), ("DELETE", 1)]
    records, _ = list_all(provider)
    assert sorted(r.content for r in records) == [f"note {i} v2" for i in range(4)]
    assert all(r.metadata == {"v": 2} for r in records)


def test_one_missing_memory_never_fails_the_rest_of_a_batch(platform: Mem0PlatformDouble) -> None:
    provider = make(platform)
    kept = provider.create(item("kept"))
    ghost = "00000000-0000-4000-8000-000000000000"
    ops = [
        WriteOp("update", "ghost", item=item("ghost"), provider_id=ghost),
        WriteOp("update", "kept", item=item("kept v2"), provider_id=kept.id),
        WriteOp("delete", "ghost-del", provider_id=ghost),
    ]
    results = {r.op.key: r for r in provider.write_many(ops)}
    assert isinstance(results["ghost"].error, NotFound)
    assert results["kept"].error is None
    assert results["ghost-del"].error is None  # already gone is not an error
    assert [r.content for r in list_all(provider)[0]] == ["kept v2"]


def test_a_batch_during_an_outage_fails_each_op_for_a_later_retry(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    kept = provider.create(item("kept"))
    platform.faults.inject(Fault.error(503), method="PUT", path="/v1/batch/", times=99)
    (result,) = provider.write_many(
        [WriteOp("update", "k", item=item("kept v2"), provider_id=kept.id, previous=kept)]
    )
    assert isinstance(result.error, TransientProviderError)
    assert len(platform.faults.requests("PUT")) == 3  # retried, never replayed one by one


# failures ----------------------------------------------------------------------------------


def test_rate_limit_honours_retry_after_as_an_http_date(platform: Mem0PlatformDouble) -> None:
    sleeps: list[float] = []
    patient = RetryPolicy(attempts=3, initial_backoff=0.001, max_elapsed=120.0)
    provider = make(platform, sleeps=sleeps, retry=patient)
    provider.create(item("limited"))
    when = datetime.now(UTC) + timedelta(seconds=30)
    platform.faults.inject(
        Fault.rate_limit(when.strftime("%a, %d %b %Y %H:%M:%S GMT")), path="/v3/memories/"
    )
    assert list_all(provider)[1].complete
    assert len(sleeps) == 1 and 25 <= sleeps[0] <= 30


def test_a_retry_after_longer_than_the_budget_is_passed_to_the_engine(
    platform: Mem0PlatformDouble,
) -> None:
    sleeps: list[float] = []
    provider = make(platform, sleeps=sleeps)
    platform.faults.inject(Fault.rate_limit("3600"), path="/v3/memories/")
    with pytest.raises(TransientProviderError) as caught:
        list_all(provider)
    assert caught.value.retry_after == 3600.0 and sleeps == []


def test_errors_resets_and_garbage_are_retried_then_typed(platform: Mem0PlatformDouble) -> None:
    provider = make(platform, timeout=2.0)
    provider.create(item("resilient"))
    for fault in (Fault.error(500), Fault.reset(), Fault.stall(60), Fault.truncated()):
        platform.faults.inject(fault, path="/v3/memories/", times=2)
        records, listing = list_all(provider)
        assert listing.complete and [r.content for r in records] == ["resilient"], fault
    platform.faults.inject(Fault.error(500), path="/v3/memories/", times=99)
    with pytest.raises(TransientProviderError, match="HTTP 500"):
        list_all(provider)
    platform.faults.clear()
    platform.faults.inject(Fault.malformed(), path="/v1/memories/", times=99)
    with pytest.raises(InvalidResponse):
        provider.get(records[0].id)


def test_a_refused_key_names_its_variable_and_never_the_key(
    platform: Mem0PlatformDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "m0-wrong-key-that-must-not-leak"
    provider = make(platform, key=wrong)
    for attempt in (lambda: list_all(provider), lambda: provider.create(item("x"))):
        with pytest.raises(AuthError) as caught:
            attempt()
        assert "$MEM0_API_KEY" in str(caught.value) and wrong not in str(caught.value)
        assert "Invalid API key" in str(caught.value)  # the Platform's own reason is kept
    assert wrong not in caplog.text and wrong not in repr(provider)
    assert len(platform.faults.requests()) == 2  # refused keys are not retried


# configuration -----------------------------------------------------------------------------


def test_the_platform_needs_a_key_and_https(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_API_KEY", KEY)
    base = """
[sync]
active = "m0p"
[providers.m0p]
type = "mem0-platform"
scope = { user_id = "alice" }
"""
    with pytest.raises(ConfigError, match="api_key_env"):
        build_provider("m0p", parse_config(base))
    keyed = base + 'api_key_env = "MEM0_API_KEY"\nlookback = "2m"\n'
    provider = build_provider("m0p", parse_config(keyed))
    assert isinstance(provider, Mem0PlatformProvider)
    assert provider.lookback == timedelta(minutes=2)
    assert "api.mem0.ai" in provider.identity()
    with pytest.raises(ConfigError, match="allow_insecure_http"):
        build_provider("m0p", parse_config(keyed + 'base_url = "http://mem0.example.com"\n'))


# metadata under either PUT mode ----------------------------------------------------------------


def test_an_update_removes_a_metadata_key_whether_put_merges_or_replaces(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    created = provider.create(item("works at ACME", origin="mnem:9", team="a", floor=3))
    outgoing = item("works at ACME", origin="mnem:9", team="b")
    provider.update(created.id, outgoing)
    (record,), _ = list_all(provider)
    assert record.metadata == {"team": "b"}
    assert record.fingerprint == outgoing.fingerprint
    provider.update(created.id, item("works at ACME", origin="mnem:9", team="b", floor=4))
    assert provider.get(created.id).metadata == {"team": "b", "floor": 4}  # type: ignore[union-attr]


def test_a_batch_update_removes_keys_from_what_the_staging_store_held(
    platform: Mem0PlatformDouble,
) -> None:
    provider = make(platform)
    made = [
        provider.create(item(f"note {i}", origin=f"mnem:{i}", team="a", floor=i)) for i in range(3)
    ]
    staged, _ = list_all(provider)
    by_id = {r.id: r for r in staged}
    before = len(platform.faults.seen)
    ops = [
        WriteOp(
            "update",
            f"u{i}",
            item=item(f"note {i}", origin=f"mnem:{i}", team="b"),
            provider_id=made[i].id,
            previous=by_id[made[i].id],
        )
        for i in range(3)
    ]
    assert all(r.error is None for r in provider.write_many(ops))
    assert [(s.method, s.path) for s in platform.faults.seen[before:]] == [("PUT", "/v1/batch/")]
    records, _ = list_all(provider)
    assert [r.metadata for r in records] == [{"team": "b"}] * 3
