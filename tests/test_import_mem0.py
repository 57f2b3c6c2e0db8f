"""import_mem0 (ADR-0024) and migrate, from the REAL Mem0 library (offline) into mnem.

The source is mem0ai 2.2.1 itself (in-memory Qdrant, SQLite history, the hash embedder); the
target is the mnem test double, and the real SDK whenever ``import mnem`` works.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import memsync
from memsync.base.errors import ProviderError, TransientProviderError
from memsync.base.records import parse_instant
from memsync.orchestration.migrate import MigrationReport, import_mem0, migrate
from memsync.providers.mem0.oss import Mem0OssProvider
from memsync.providers.mnem.handle import StagedChangesPresent
from memsync.providers.mnem.provider import MnemProvider
from tests.contract import list_all
from tests.doubles import mnem_double
from tests.mem0_fixtures import insert_behind_memsync, mem0_payload, open_provider
from tests.mnem_sdk import real_sdk

BIG = 1200
EXPECTED_CAP = 1000  # mem0_paging's first top_k: the big scope must outgrow it


@pytest.fixture(scope="module", params=["double", "real"])
def sdk(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "double":
        return mnem_double
    return real_sdk()


def new_store(sdk: ModuleType, root: Path) -> Any:
    return sdk.init(root)


class Recording:
    """A Mem0 Memory seen through a spy: every get_all's top_k is recorded."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.top_ks: list[int] = []

    def get_all(
        self, *, filters: dict[str, Any], top_k: int = 20, show_expired: bool = False
    ) -> Any:
        self.top_ks.append(top_k)
        return self.memory.get_all(filters=filters, top_k=top_k, show_expired=show_expired)


class ClientShaped:
    """Answers like mem0's MemoryClient.get_all: ``{count, next, previous, results}`` pages."""

    def __init__(self, memories: list[dict[str, Any]], *, drift: int = 0) -> None:
        self.memories = memories
        self.drift = drift  # memories added "while paging": count disagrees with the pages
        self.pages_asked: list[tuple[int, int]] = []

    def get_all(self, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        page, size = kwargs["page"], kwargs["page_size"]
        self.pages_asked.append((page, size))
        assert kwargs["filters"] == {"user_id": "big"}
        chunk = self.memories[(page - 1) * size : page * size]
        more = page * size < len(self.memories)
        return {
            "count": len(self.memories) + self.drift,
            "next": f"https://api.mem0.ai/v3/memories/?page={page + 1}" if more else None,
            "previous": None,
            "results": chunk,
        }


# the source: one real Mem0, built once ------------------------------------------------------


@pytest.fixture(scope="module")
def mem0(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """BIG memories of user 'big' (plus 3 empty, 1 expired), 7 of user 'other'."""
    root = tmp_path_factory.mktemp("mem0src")
    provider = open_provider(None, {"user_id": "big"}, mem0_dir=root)
    memory = provider.memory
    ids = [
        r["id"]
        for i in range(BIG - 1)
        for r in memory.add(f"memory number {i}", user_id="big", metadata={"seq": i}, infer=False)[
            "results"
        ]
    ]
    (bot,) = memory.add(
        [{"role": "assistant", "content": "books aisle seats", "name": "bot-7"}],
        user_id="big",
        metadata={"created_at": "2021-06-01T09:30:00.123456-07:00", "trip": {"legs": 2}},
        infer=False,
    )["results"]
    ids.append(bot["id"])
    empty = [
        insert_behind_memsync(
            memory, {k: v for k, v in mem0_payload("x", user_id="big").items() if k != "data"}
        ),
        insert_behind_memsync(memory, mem0_payload("", user_id="big")),
        insert_behind_memsync(memory, mem0_payload("   ", user_id="big")),
    ]
    expired = insert_behind_memsync(
        memory, mem0_payload("old news", user_id="big", expiration_date="2020-01-01")
    )
    other = [
        r["id"]
        for i in range(7)
        for r in memory.add(f"other user's memory {i}", user_id="other", infer=False)["results"]
    ]
    yield {
        "memory": memory,
        "ids": ids,
        "bot": bot["id"],
        "empty": empty,
        "expired": expired,
        "other": other,
    }
    provider.close()


@pytest.fixture(scope="module")
def imported(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """The big scope imported once into a fresh mnem store (kept open for the module)."""
    store = new_store(sdk, tmp_path_factory.mktemp("mnem"))
    source = Recording(mem0["memory"])
    report = import_mem0(store, source, filters={"user_id": "big"}, sdk=sdk)
    yield {"store": store, "report": report, "top_ks": list(source.top_ks), "sdk": sdk}
    del store
    gc.collect()


# ADR-0024's semantics -------------------------------------------------------------------------


def test_every_memory_past_the_first_cap_is_imported(
    imported: dict[str, Any], mem0: dict[str, Any]
) -> None:
    report: MigrationReport = imported["report"]
    assert imported["top_ks"][0] == EXPECTED_CAP and len(imported["top_ks"]) > 1
    assert report.complete and report.partial_reason is None
    # BIG, and the expired one, which moves with its date (then tombstoned in mnem)
    assert report.imported == BIG + 1 and report.already_present == 0 and report.failed == []
    nodes = imported["store"].working_memory()
    assert set(nodes) == {f"mem0:{memory_id}" for memory_id in mem0["ids"]}


def test_empty_memories_are_skipped_and_an_expired_one_is_kept_in_history(
    imported: dict[str, Any], mem0: dict[str, Any]
) -> None:
    # Expiry is not deletion: the expired memory is imported with its date, then forgotten
    # with a tombstone commit, so agents are not served it and mnem's history keeps it.
    report: MigrationReport = imported["report"]
    reasons = {s.id: s.reason for s in report.skipped}
    assert reasons == {memory_id: "empty content" for memory_id in mem0["empty"]}
    assert report.listed == BIG + 4
    nodes = imported["store"].working_memory()
    assert not {f"mem0:{i}" for i in [*mem0["empty"], mem0["expired"]]} & set(nodes)
    target = MnemProvider.attached(imported["store"], sdk=imported["sdk"])
    (hidden,) = target.hidden_records()
    assert hidden.id == f"mem0:{mem0['expired']}" and hidden.expiration_date == "2020-01-01"


def test_writes_go_in_batched_commits_by_memsync(imported: dict[str, Any]) -> None:
    log = imported["store"].log(first_parent=True)
    messages = sorted(c.message for c in log)
    assert messages == [
        "memsync: 201 added from mem0",
        "memsync: 500 added from mem0",
        "memsync: 500 added from mem0",
        "memsync: forgot 1 expired (their expiration date passed; history keeps them)",
    ]
    assert {c.author for c in log} == {"memsync"}


def test_provenance_maps_as_adr_0024_says(imported: dict[str, Any], mem0: dict[str, Any]) -> None:
    node = imported["store"].working_node(f"mem0:{mem0['bot']}")
    assert node.content == "books aisle seats"
    assert node.provenance.source == "bot-7"  # actor_id, over role
    assert node.event_time == 1622565000123  # 2021-06-01T16:30:00.123Z
    note = json.loads(node.provenance.note)
    assert note["metadata"] == {"trip": {"legs": 2}}
    assert note["created_at"] == "2021-06-01T09:30:00.123456-07:00"
    assert note["provenance"]["user_id"] == "big" and note["provenance"]["role"] == "assistant"
    plain = imported["store"].working_node(f"mem0:{mem0['ids'][0]}")
    assert plain.provenance.source == "user"  # no actor_id: the role


def test_imported_nodes_read_back_through_the_mnem_provider_as_mem0_memories(
    imported: dict[str, Any], mem0: dict[str, Any]
) -> None:
    provider = MnemProvider.attached(imported["store"], sdk=imported["sdk"])
    record = provider.get(f"mem0:{mem0['bot']}")
    assert record is not None and provider.origin_of(record) == f"mem0:{mem0['bot']}"
    assert record.metadata == {"trip": {"legs": 2}}
    assert parse_instant(record.created_at) == parse_instant("2021-06-01T16:30:00.123456Z")


def test_a_second_run_imports_nothing(imported: dict[str, Any], mem0: dict[str, Any]) -> None:
    store = imported["store"]
    head = store.head_commit()
    again = import_mem0(store, mem0["memory"], filters={"user_id": "big"}, sdk=imported["sdk"])
    assert (again.imported, again.planned, again.already_present) == (0, 0, BIG + 1)
    assert len(again.skipped) == 3 and again.complete  # the empty ones
    assert store.head_commit() == head


def test_the_other_users_memories_are_neither_imported_nor_touched(
    imported: dict[str, Any], mem0: dict[str, Any]
) -> None:
    nodes = imported["store"].working_memory()
    assert not {f"mem0:{memory_id}" for memory_id in mem0["other"]} & set(nodes)
    left = mem0["memory"].get_all(filters={"user_id": "other"}, top_k=100)["results"]
    assert sorted(m["id"] for m in left) == sorted(mem0["other"])


def test_an_empty_scope_imports_nothing_and_commits_nothing(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path: Path
) -> None:
    store = new_store(sdk, tmp_path)
    report = import_mem0(store, mem0["memory"], filters={"user_id": "nobody"}, sdk=sdk)
    assert (report.listed, report.imported, report.skipped, report.complete) == (0, 0, [], True)
    assert store.head_commit() is None


def test_a_dry_run_reports_and_writes_nothing(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path: Path
) -> None:
    store = new_store(sdk, tmp_path)
    # no sdk=: import_mem0 finds the SDK module from the Store it is given
    report = import_mem0(store, mem0["memory"], filters={"user_id": "other"}, dry_run=True)
    assert (report.planned, report.imported, report.dry_run) == (7, 0, True)
    assert store.head_commit() is None


def test_a_memory_client_is_paged_to_the_end(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path: Path
) -> None:
    everything = mem0["memory"].get_all(filters={"user_id": "big"}, top_k=5000)["results"]
    client = ClientShaped(everything)
    store = new_store(sdk, tmp_path)
    report = import_mem0(store, client, filters={"user_id": "big"}, sdk=sdk)
    assert client.pages_asked == [(page, 200) for page in range(1, 8)]  # 1203 memories
    assert report.complete and report.imported == BIG
    assert {s.id for s in report.skipped} == set(mem0["empty"])  # hidden expired never listed


def test_a_memory_client_whose_count_drifts_is_reported_partial(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path: Path
) -> None:
    some = mem0["memory"].get_all(filters={"user_id": "big"}, top_k=30)["results"]
    store = new_store(sdk, tmp_path)
    report = import_mem0(store, ClientShaped(some, drift=2), filters={"user_id": "big"}, sdk=sdk)
    assert not report.complete and "changed while paging" in (report.partial_reason or "")
    assert report.imported == len([m for m in some if m["memory"].strip()])


def test_skipped_ids_are_logged(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = new_store(sdk, tmp_path)
    with caplog.at_level(logging.WARNING, logger="memsync.migrate"):
        import_mem0(store, mem0["memory"], filters={"user_id": "big"}, dry_run=True, sdk=sdk)
    for memory_id in mem0["empty"]:
        assert any(memory_id in message for message in caplog.messages)


# changes, errors ----------------------------------------------------------------------------------


@pytest.fixture
def small_mem0(tmp_path: Path) -> Iterator[Any]:
    provider = open_provider(None, {"user_id": "alice"}, mem0_dir=tmp_path)
    yield provider.memory
    provider.close()


def test_a_memory_changed_since_the_import_is_reported_not_overwritten(
    small_mem0: Any, sdk: ModuleType, tmp_path: Path
) -> None:
    (first,) = small_mem0.add("likes tea", user_id="alice", infer=False)["results"]
    store = new_store(sdk, tmp_path / "mnem")
    import_mem0(store, small_mem0, filters={"user_id": "alice"}, sdk=sdk)
    small_mem0.update(first["id"], text="likes coffee now")
    report = import_mem0(store, small_mem0, filters={"user_id": "alice"}, sdk=sdk)
    assert [s.id for s in report.skipped] == [first["id"]]
    assert "not overwritten" in report.skipped[0].reason
    assert store.working_node(f"mem0:{first['id']}").content == "likes tea"


def test_filters_without_a_scope_id_are_refused(
    small_mem0: Any, sdk: ModuleType, tmp_path: Path
) -> None:
    store = new_store(sdk, tmp_path / "mnem")
    with pytest.raises(ProviderError, match="user_id, agent_id, app_id or run_id"):
        import_mem0(store, small_mem0, filters={}, sdk=sdk)


def test_leftover_staged_changes_stop_the_import_before_anything_is_read(
    small_mem0: Any, sdk: ModuleType, tmp_path: Path
) -> None:
    store = new_store(sdk, tmp_path / "mnem")
    store.add("half-done", "an agent's uncommitted work")
    with pytest.raises(StagedChangesPresent):
        import_mem0(store, small_mem0, filters={"user_id": "alice"}, sdk=sdk)
    assert [node_id for node_id, _ in store.staged()] == ["half-done"]


def test_a_platform_outage_is_a_transient_error(sdk: ModuleType, tmp_path: Path) -> None:
    class RateLimitError(Exception):
        pass

    class Throttled:
        def get_all(self, options: Any = None, **kwargs: Any) -> Mapping[str, Any]:
            raise RateLimitError("429 Too Many Requests")

    store = new_store(sdk, tmp_path / "mnem")
    with pytest.raises(TransientProviderError):
        import_mem0(store, Throttled(), filters={"user_id": "alice"}, sdk=sdk)


def test_import_mem0_is_exported_from_the_package() -> None:
    assert memsync.import_mem0 is import_mem0


# migrate(source, target): what `memsync migrate --from mem0 --to mnem` runs ------------------------


def test_migrate_between_providers_reports_and_is_idempotent(
    sdk: ModuleType, tmp_path: Path
) -> None:
    mem0_side = open_provider(tmp_path / "mem0", {"user_id": "alice"}, mem0_dir=tmp_path)
    for text in ("likes tea", "lives in Lisbon", "has a cat"):
        mem0_side.memory.add(text, user_id="alice", infer=False)
    mem0_side.close()
    source = Mem0OssProvider(
        "mem0",
        {"user_id": "alice"},
        mem0_config=_disk_config(tmp_path / "mem0"),
        embedder="hash",
        mem0_dir=tmp_path,
    )
    new_store(sdk, tmp_path / "mnem")
    gc.collect()
    target = MnemProvider("mnem", tmp_path / "mnem", sdk=sdk, busy_timeout=0)

    dry = migrate(source, target, dry_run=True)
    assert (dry.planned, dry.imported) == (3, 0)
    report = migrate(source, target)
    assert (report.imported, report.ok) == (3, True)
    assert json.loads(json.dumps(report.as_dict()))["imported"] == 3
    again = migrate(source, target)
    assert (again.imported, again.already_present) == (0, 3)
    with target:
        records, _ = list_all(target)
    assert sorted(r.content for r in records) == ["has a cat", "likes tea", "lives in Lisbon"]
    assert all(target.origin_of(r).startswith("mem0:") for r in records)


def _disk_config(root: Path) -> dict[str, Any]:
    from tests.mem0_fixtures import offline_mem0_config

    return offline_mem0_config(root)


def test_a_store_already_holding_the_texts_under_its_own_ids_imports_nothing(
    mem0: dict[str, Any], sdk: ModuleType, tmp_path: Path
) -> None:
    # An agent (or another tool) already wrote user 'other''s memories into mnem, natively.
    store = new_store(sdk, tmp_path)
    for i in range(7):
        store.add(f"agent-node-{i}", f"other user's memory {i}")
    store.commit("an agent's own notes", author="agent")
    head = store.head_commit()
    report = import_mem0(store, mem0["memory"], filters={"user_id": "other"}, sdk=sdk)
    assert (report.imported, report.already_present) == (0, 7)
    again = import_mem0(store, mem0["memory"], filters={"user_id": "other"}, sdk=sdk)
    assert (again.imported, again.already_present) == (0, 7)
    assert store.head_commit() == head and len(store.working_memory()) == 7
