"""A scope past the 1,000 cap of ``GET /memories``: read whole through ``POST /search`` and
proven against ``GET /entities``, or partial (no delete inferred) wherever it cannot be shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memsync.base.secrets import Secret
from memsync.engine.report import CycleReport, SyncOptions
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore
from tests.contract import list_all
from tests.doubles import Fault
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.engine_helpers import config_for

KEY = "admin-key-0123456789abcdef"
FAST = RetryPolicy(attempts=2, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)
SCOPE = 2_500


def make(double: Mem0ServerDouble, scope: dict[str, str] | None = None) -> Mem0ServerProvider:
    return Mem0ServerProvider(
        "server",
        "https://mem0.test",
        scope or {"user_id": "alice"},
        secret=Secret(KEY, "$KEY"),
        transport=double.transport(),
        retry=FAST,
        sleep=lambda s: None,
    )


def big(**options: Any) -> tuple[Mem0ServerDouble, list[str]]:
    double = Mem0ServerDouble(api_key=KEY, **options)
    ids = double.insert_many([f"memory {i} of alice" for i in range(SCOPE)], user_id="alice")
    double.insert_many(["bob's own"], user_id="bob")
    return double, ids


def cycle(double: Mem0ServerDouble, tmp_path: Path, copy: MemoryProvider) -> CycleReport:
    config = config_for({"server": "pull", "copy": "both"}, "copy")
    with StagingStore.open(tmp_path / "staging.db") as store:
        providers = {"server": make(double), "copy": copy}
        return config.engine(store, providers).run_cycle(SyncOptions())  # type: ignore[arg-type]


def test_a_scope_of_2500_memories_is_listed_whole_and_a_delete_is_seen(tmp_path: Path) -> None:
    double, ids = big()
    records, listing = list_all(make(double))
    assert listing.complete and len(records) == SCOPE
    assert {r.content for r in records} == {f"memory {i} of alice" for i in range(SCOPE)}
    reads = [(s.method, s.path) for s in double.faults.seen if s.path != "/openapi.json"]
    assert reads == [("GET", "/memories"), ("GET", "/entities"), ("POST", "/search")]
    (search,) = double.faults.requests("POST", "/search")
    assert search.body["filters"] == {"user_id": "alice"}
    assert search.body["threshold"] == 0 and search.body["show_expired"] is True

    copy = MemoryProvider("copy", scope="alice")
    first = cycle(double, tmp_path, copy)
    assert first.exit_code == 0, first.as_dict()
    assert first.providers["server"].mirror.complete  # type: ignore[union-attr]
    assert len(copy.store.records) == SCOPE
    with double.lock:
        double.memory.delete(ids[1234])  # an application deletes one past the first thousand
    second = cycle(double, tmp_path, copy)
    assert second.exit_code == 0, second.as_dict()
    assert second.providers["server"].mirror.removed == 1  # type: ignore[union-attr]
    assert len(copy.store.records) == SCOPE - 1
    assert "memory 1234 of alice" not in {r.content for r in copy.store.records.values()}


def test_a_search_that_misses_memories_leaves_the_listing_partial(tmp_path: Path) -> None:
    """On a store whose scores go below 0 (Qdrant's cosine), even threshold 0 leaves some out:
    the count from /entities shows it, and no delete is inferred."""
    double, _ = big(search_finds_all=False)
    records, listing = list_all(make(double))
    assert not listing.complete and 1000 <= len(records) < SCOPE
    assert f"GET /entities counts {SCOPE}" in (listing.partial_reason or "")

    copy = MemoryProvider("copy", scope="alice")
    for text in ("kept 1", "kept 2"):
        copy.app_add(text)
    report = cycle(double, tmp_path, copy)
    assert report.providers["server"].state == "partial"
    assert {"kept 1", "kept 2"} <= {r.content for r in copy.store.records.values()}


def test_a_write_between_the_count_and_the_search_leaves_the_listing_partial() -> None:
    double, _ = big()

    def add_one(method: str, path: str) -> bool:
        double.insert_many(["written meanwhile"], user_id="alice")
        return False  # no fault: the search goes ahead, after the write

    double.faults.inject(
        Fault.error(500),
        method="POST",
        path="/search",
        match=add_one,
    )
    _, listing = list_all(make(double))
    assert not listing.complete
    assert f"returned {SCOPE + 1} memories where GET /entities counts {SCOPE}" in (
        listing.partial_reason or ""
    )


@pytest.mark.parametrize(
    ("options", "scope", "why"),
    [
        ({"has_entities": False}, None, "no GET /entities"),
        ({"qdrant_list_bug": True}, None, "does not list this scope"),
        ({}, {"user_id": "alice", "agent_id": "bot"}, "counts each id alone"),
    ],
    ids=["no-entities", "qdrant", "two-ids"],
)
def test_past_the_cap_without_a_count_every_memory_is_read_but_none_taken_as_deleted(
    options: dict[str, Any], scope: dict[str, str] | None, why: str
) -> None:
    double = Mem0ServerDouble(api_key=KEY, **options)
    double.insert_many([f"m{i}" for i in range(1_500)], **(scope or {"user_id": "alice"}))
    records, listing = list_all(make(double, scope))
    assert len(records) == 1_500  # the search found the ones past the cap: they are copied
    assert not listing.complete  # but nothing proves it is all: no delete is inferred
    reason = listing.partial_reason or ""
    assert "1000 or more" in reason and why in reason
    (search,) = double.faults.requests("POST", "/search")
    assert search.body["top_k"] == 4_000


def test_a_server_without_search_is_partial_past_the_cap() -> None:
    double = Mem0ServerDouble(api_key=KEY)
    double.insert_many([f"m{i}" for i in range(1_001)], user_id="alice")
    provider = make(double)
    provider._session.set_features(
        provider.features().__class__(
            infer=True, top_k=True, how="t", show_expired=True, search=False
        )
    )
    records, listing = list_all(provider)
    assert len(records) == 1000 and "no POST /search" in (listing.partial_reason or "")


def test_freshness_sees_versions_past_the_cap() -> None:
    from datetime import UTC, datetime

    double, ids = big()
    versions = make(double).versions_changed_since(datetime.now(UTC))
    assert len(versions) == SCOPE and ids[-1] in versions


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"results": [{"id": None, "memory": "x"}]}, "GET /memories row 0 has no id"),
        ({"results": [None]}, "GET /memories row 0 is NoneType, not a memory"),
    ],
)
def test_rows_memsync_cannot_read_make_the_listing_partial(body: Any, why: str) -> None:
    double = Mem0ServerDouble(api_key=KEY)
    provider = make(double)
    provider.features()
    double.faults.inject(Fault.error(200, body=body), method="GET", path="/memories")
    records, listing = list_all(provider)
    assert records == [] and not listing.complete and listing.partial_reason == why


@pytest.mark.parametrize(
    ("body", "why"),
    [({"memories": []}, "without 'results'"), ({"results": "none"}, "where a list was expected")],
)
def test_a_body_of_the_wrong_shape_is_an_error_naming_it(body: Any, why: str) -> None:
    from memsync.base.errors import InvalidResponse

    double = Mem0ServerDouble(api_key=KEY)
    provider = make(double)
    provider.features()
    double.faults.inject(Fault.error(200, body=body), method="GET", path="/memories", times=9)
    with pytest.raises(InvalidResponse, match=why):
        list_all(provider)
