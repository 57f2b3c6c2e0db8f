"""The mnem provider: the contract, deltas from commits, one commit per batch, one handle.

Every test runs on the mnem test double (tests/doubles/mnem_double.py) and again on the real
SDK whenever ``import mnem`` works; tests that count work use the double's instrument and run
on the double only.
"""

from __future__ import annotations

import gc
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memsync.base.errors import NotFound, ProviderBusy, ProviderError, ProviderUnavailable
from memsync.base.records import Outgoing, parse_instant
from memsync.config import parse_config
from memsync.providers import build_provider
from memsync.providers.base import Provider, WriteOp
from memsync.providers.mnem.batch_plan import NodeIdCollision
from memsync.providers.mnem.convert import CONTENT_JSON_KEY
from memsync.providers.mnem.handle import StagedChangesPresent
from memsync.providers.mnem.provider import MnemProvider
from tests.contract import ProviderContract, list_all
from tests.doubles import mnem_double
from tests.mnem_sdk import real_sdk


@pytest.fixture(params=["double", "real"])
def sdk(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "double":
        return mnem_double
    return real_sdk()


@pytest.fixture
def double() -> ModuleType:
    mnem_double.stats.reset()
    return mnem_double


def new_store(sdk: ModuleType, root: Path) -> Path:
    sdk.init(root)  # the returned handle is dropped at once, releasing the lock
    gc.collect()
    return root


@pytest.fixture
def opened(sdk: ModuleType, tmp_path: Path) -> Iterator[MnemProvider]:
    provider = MnemProvider("mnem", new_store(sdk, tmp_path / "agent"), sdk=sdk, busy_timeout=0)
    provider.open()
    yield provider
    provider.close()


def mem0_item(memory_id: str, text: str, **metadata: Any) -> Outgoing:
    return Outgoing(
        origin=f"mem0:{memory_id}",
        content=text,
        metadata=metadata,
        created_at="2024-03-05T10:11:12.345678+02:00",
        provenance={
            "source": "bot-7",
            "user_id": "alice",
            "role": "assistant",
            "actor_id": "bot-7",
        },
    )


class TestMnemContract(ProviderContract):
    @pytest.fixture
    def factory(self, sdk: ModuleType, tmp_path: Path) -> Iterator[Any]:
        # A mnem store is one scope: each scope gets its own store under this test's directory.
        providers: dict[str, MnemProvider] = {}

        def make(scope: str) -> Provider:
            if scope not in providers:
                root = new_store(sdk, tmp_path / scope)
                providers[scope] = MnemProvider(
                    scope, root, scope_key=scope, sdk=sdk, busy_timeout=0
                )
                providers[scope].open()
            return providers[scope]

        yield make
        for provider in providers.values():
            provider.close()

    def insert_empty(self, provider: Provider) -> str:
        assert isinstance(provider, MnemProvider)
        provider.store.add("native-empty", "")
        provider.store.commit("an agent notes nothing", author="agent")
        return "native-empty"


# --- the SDK surface the provider relies on (the double checked against the real SDK) --------


def test_sdk_store_semantics_the_provider_relies_on(sdk: ModuleType, tmp_path: Path) -> None:
    store = sdk.init(tmp_path)
    assert (store.head_commit(), store.log(), store.diff()) == (None, [], [])
    with pytest.raises(sdk.StoreIoError, match=r"Database already open\. Cannot acquire lock\."):
        sdk.open(tmp_path)  # one handle per store, even within one process
    store.add("b", {"z": 1, "a": 2}, event_time=5)
    assert list(store.working_memory()["b"].content) == ["a", "z"]  # dict keys come back sorted
    assert [c.kind for c in store.diff()] == ["added"]  # to=None is working memory
    first = store.commit("one", author="me")
    assert re.fullmatch(r"[0-9a-f]{64}", first) and store.diff() == []  # frm=None is HEAD
    second = store.commit("nothing staged")  # a commit is made all the same
    assert second != first and store.diff(first, second) == []
    with pytest.raises(sdk.InvalidRefError):
        store.rm("missing")
    with pytest.raises(sdk.InvalidRefError):
        store.diff("ab" * 32, first)
    store.add("b", {"a": 2, "z": 1}, event_time=6)  # event_time alone makes it modified
    assert [(c.id, c.kind) for c in store.diff()] == [("b", "modified")]
    del store
    gc.collect()
    reopened = sdk.open(tmp_path)  # the lock went with the handle; the staging stayed on disk
    assert [node_id for node_id, _ in reopened.staged()] == ["b"]
    assert issubclass(sdk.StoreIoError, sdk.MnemError)


def test_sdk_agents_helpers_and_their_quirks(sdk: ModuleType, tmp_path: Path) -> None:
    store = sdk.init(tmp_path)
    sdk.agents.remember(store, "a", "alpha", source="s", step="p")
    sdk.agents.remember_many(store, [{"id": "n", "content": "x", "event_time": 9}])
    node = store.working_node("a")
    assert (node.provenance.source, node.provenance.agent_step) == ("s", "p")
    assert store.working_node("n").event_time is None  # remember_many ignores event_time
    sdk.agents.forget(store, "a")
    assert [c.message for c in store.log(first_parent=True)] == [
        "forget a",
        "remember 1 node",
        "remember a",
    ]
    assert {c.author for c in store.log()} == {"agent"}
    with pytest.raises(sdk.InvalidRefError):
        sdk.agents.forget(store, "a")


# --- commits ---------------------------------------------------------------------------------


def test_a_batch_is_one_commit_by_memsync_that_says_what_moved(opened: MnemProvider) -> None:
    first = [WriteOp("create", f"k{i}", item=mem0_item(f"id-{i}", f"fact {i}")) for i in range(4)]
    assert all(r.error is None for r in opened.write_many(first))
    before = len(opened.store.log(first_parent=True))
    batch = [
        WriteOp("create", "new1", item=mem0_item("id-new1", "new fact one")),
        WriteOp("create", "new2", item=mem0_item("id-new2", "new fact two")),
        WriteOp(
            "update", "u", item=mem0_item("id-0", "fact zero, edited"), provider_id="mem0:id-0"
        ),
        WriteOp("delete", "d", provider_id="mem0:id-1"),
    ]
    results = list(opened.write_many(batch))
    assert [r.error for r in results] == [None] * 4
    log = opened.store.log(first_parent=True)
    assert len(log) == before + 1
    assert log[0].author == "memsync"
    assert log[0].message == "memsync: 2 added, 1 updated, 1 forgotten from mem0"
    assert opened.store.changed_by(log[0].id) == {
        "mem0:id-0": "modified",
        "mem0:id-1": "removed",
        "mem0:id-new1": "added",
        "mem0:id-new2": "added",
    }


def test_a_batch_that_changes_nothing_makes_no_commit(opened: MnemProvider) -> None:
    ops = [WriteOp("create", f"k{i}", item=mem0_item(f"id-{i}", f"fact {i}")) for i in range(3)]
    list(opened.write_many(ops))
    before = len(opened.store.log(first_parent=True))
    again = list(opened.write_many([*ops, WriteOp("delete", "gone", provider_id="never-there")]))
    assert all(r.error is None for r in again)
    assert [r.record.id for r in again[:3] if r.record] == ["mem0:id-0", "mem0:id-1", "mem0:id-2"]
    assert len(opened.store.log(first_parent=True)) == before


def test_single_writes_are_one_commit_each(opened: MnemProvider) -> None:
    created = opened.create(mem0_item("a", "one"))
    opened.update(created.id, mem0_item("a", "two"))
    opened.delete(created.id)
    assert [c.message for c in opened.store.log(first_parent=True)] == [
        "memsync: 1 forgotten from mem0",
        "memsync: 1 updated from mem0",
        "memsync: 1 added from mem0",
    ]


def test_delete_is_a_tombstone_and_history_keeps_the_memory(opened: MnemProvider) -> None:
    created = opened.create(mem0_item("a", "remember me"))
    kept_at = opened.store.head_commit()
    opened.delete(created.id)
    assert opened.get(created.id) is None
    assert opened.store.state_at(kept_at)["mem0:a"].content == "remember me"


# --- ids, collisions and the mapping -------------------------------------------------------


def test_mem0_records_become_namespaced_nodes_and_mnem_origins_come_home(
    opened: MnemProvider,
) -> None:
    opened.create(mem0_item("9f1c", "from mem0"))
    opened.create(Outgoing(origin="mnem:native-7", content="was a mnem node"))
    assert set(opened.store.working_memory()) == {"mem0:9f1c", "native-7"}
    records, _ = list_all(opened)
    assert sorted(opened.origin_of(r) for r in records) == ["mem0:9f1c", "mnem:native-7"]


def test_native_nodes_have_mnem_origins_unless_their_id_names_an_import(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    sdk.agents.remember(opened.store, "customer-4821", "on the Enterprise plan", source="ticket")
    sdk.agents.remember(opened.store, "mem0:abc", "imported by mnem's own import_mem0")
    records, _ = list_all(opened)
    assert {r.id: opened.origin_of(r) for r in records} == {
        "customer-4821": "mnem:customer-4821",
        "mem0:abc": "mem0:abc",
    }
    native = next(r for r in records if r.id == "customer-4821")
    assert native.provenance == {"source": "ticket"} and native.metadata == {}


def test_create_never_overwrites_a_node_memsync_did_not_write(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    sdk.agents.remember(opened.store, "mem0:abc", "the agent's own memory")
    head = opened.store.head_commit()
    with pytest.raises(NodeIdCollision, match="never overwritten"):
        opened.create(mem0_item("abc", "something else entirely"))
    assert opened.store.working_node("mem0:abc").content == "the agent's own memory"
    assert opened.store.head_commit() == head  # nothing committed, nothing left staged
    assert opened.store.staged() == [] and opened.store.staged_deletions() == []
    opened.update("mem0:abc", mem0_item("abc", "something else entirely"))  # the explicit path
    assert opened.store.working_node("mem0:abc").content == "something else entirely"


def test_a_collision_fails_only_its_own_op_in_a_batch(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    sdk.agents.remember(opened.store, "mem0:taken", "the agent's own memory")
    results = list(
        opened.write_many(
            [
                WriteOp("create", "a", item=mem0_item("taken", "other text")),
                WriteOp("create", "b", item=mem0_item("free", "fine")),
            ]
        )
    )
    errors = {r.op.key: type(r.error) for r in results}
    assert errors == {"a": NodeIdCollision, "b": type(None)}
    assert opened.store.working_node("mem0:free").content == "fine"


def test_create_over_the_same_text_adopts_the_native_node(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    sdk.agents.remember(opened.store, "mem0:same", "likes tea", source="agent-3")
    head = opened.store.head_commit()
    record = opened.create(mem0_item("same", "likes tea"))
    assert record.provenance["source"] == "agent-3"
    assert opened.store.head_commit() == head


def test_update_of_a_missing_node_is_not_found(opened: MnemProvider) -> None:
    with pytest.raises(NotFound):
        opened.update("mem0:nope", mem0_item("nope", "x"))


def test_metadata_provenance_and_created_at_survive_in_one_documented_place(
    opened: MnemProvider,
) -> None:
    outgoing = mem0_item("m1", "prefers window seats", seat={"row": 12, "side": "left"}, n=1)
    outgoing.provenance.update({"agent_step": "plan-3", "run_id": "r1", "note": "agent's note"})
    opened.create(outgoing)
    node = opened.store.working_node("mem0:m1")
    assert node.content == "prefers window seats" and node.content_kind == "note"
    assert node.provenance.source == "bot-7" and node.provenance.agent_step == "plan-3"
    assert node.event_time == int(
        parse_instant("2024-03-05T10:11:12.345678+02:00").timestamp() * 1000  # type: ignore[union-attr]
    )
    note = json.loads(node.provenance.note)
    assert note["memsync"] == 1 and note["origin"] == "mem0:m1"
    assert note["metadata"] == {"seat": {"row": 12, "side": "left"}, "n": 1}
    (record,), _ = list_all(opened)
    assert record.metadata == outgoing.metadata
    assert record.provenance == outgoing.provenance
    assert record.created_at == "2024-03-05T10:11:12.345678+02:00"  # verbatim, offset and all


def test_an_agents_rewrite_reads_detached_and_a_note_without_metadata_does_not(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    """What the mirror carries over from: a node that lost memsync's note says so (``detached``,
    a bare version token); a note that lists no metadata is memsync's word: a real removal."""
    opened.create(mem0_item("m1", "has a cat", topic="life"))
    opened.create(mem0_item("m2", "has a dog"))
    by_id = {r.id: r for r in list_all(opened)[0]}
    written, plain = by_id["mem0:m1"], by_id["mem0:m2"]
    assert not written.detached and not opened.version_detached(written.version)
    assert plain.metadata == {} and not plain.detached
    sdk.agents.remember(opened.store, "mem0:m1", "has two cats", source="new-agent")
    rewritten = next(r for r in list_all(opened)[0] if r.id == "mem0:m1")
    assert rewritten.detached and opened.version_detached(rewritten.version)
    assert (rewritten.content, rewritten.metadata) == ("has two cats", {})
    assert rewritten.provenance == {"source": "new-agent"}


def test_json_content_from_a_native_agent_is_carried_as_canonical_json_and_restored(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    opened.store.add("prefs", {"theme": "dark", "font": 12}, content_kind="claim")
    opened.store.commit("agent learns prefs", author="agent")
    (record,), _ = list_all(opened)
    assert record.content == '{"font":12,"theme":"dark"}'
    assert record.provenance == {CONTENT_JSON_KEY: "json", "mnem_content_kind": "claim"}
    edited = Outgoing.from_record(record, "mnem:prefs")
    edited.content = '{"font":14,"theme":"dark"}'
    opened.update("prefs", edited)
    node = opened.store.working_node("prefs")
    assert node.content == {"font": 14, "theme": "dark"} and node.content_kind == "claim"


# --- incremental listing ----------------------------------------------------------------------


def test_no_new_commit_means_an_empty_incremental_listing_that_reads_no_node(
    tmp_path: Path, double: ModuleType
) -> None:
    provider = MnemProvider("mnem", new_store(double, tmp_path), sdk=double, busy_timeout=0)
    provider.open()
    list(
        provider.write_many(
            [WriteOp("create", str(i), item=mem0_item(str(i), f"m {i}")) for i in range(50)]
        )
    )
    _, full = list_all(provider)
    assert full.mode == "full" and full.cursor == provider.store.head_commit()
    double.stats.reset()
    records, listing = _collect(provider.listing(full.cursor))
    assert (records, listing.mode, listing.removed) == ([], "incremental", [])
    assert listing.complete and listing.cursor == full.cursor
    assert double.stats.nodes_read == 0
    provider.close()


def _collect(listing: Any) -> tuple[list[Any], Any]:
    records = [r for page in listing.pages() for r in page.records]
    return records, listing


def test_incremental_listing_carries_changes_and_removals_since_the_cursor(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    for i in range(5):
        sdk.agents.remember(opened.store, f"n{i}", f"note {i}")
    cursor = opened.listing().cursor
    sdk.agents.remember(opened.store, "n1", "note 1, revised")
    sdk.agents.forget(opened.store, "n2")
    sdk.agents.remember_many(opened.store, [{"id": "n9", "content": "brand new"}])
    records, listing = _collect(opened.listing(cursor))
    assert listing.mode == "incremental" and listing.complete
    assert {r.id: r.content for r in records} == {"n1": "note 1, revised", "n9": "brand new"}
    assert listing.removed == ["n2"]
    assert listing.cursor == opened.store.head_commit() != cursor


def test_incremental_listing_reads_only_the_changed_nodes(
    tmp_path: Path, double: ModuleType
) -> None:
    provider = MnemProvider("mnem", new_store(double, tmp_path), sdk=double, busy_timeout=0)
    provider.open()
    double.agents.remember_many(
        provider.store, [{"id": f"n{i}", "content": f"note {i}"} for i in range(1000)]
    )
    cursor = provider.listing().cursor
    double.agents.remember_many(
        provider.store, [{"id": f"n{i}", "content": f"edited {i}"} for i in range(10)]
    )
    double.stats.reset()
    records, _ = _collect(provider.listing(cursor))
    assert len(records) == 10
    assert double.stats.nodes_read == 20  # diff materialises old and new of each modified node
    provider.close()


def test_an_unknown_cursor_means_a_full_listing(opened: MnemProvider, sdk: ModuleType) -> None:
    sdk.agents.remember(opened.store, "a", "alpha")
    records, listing = _collect(opened.listing("ab" * 32))  # a commit this store never had
    assert listing.mode == "full" and listing.complete
    assert [r.id for r in records] == ["a"]
    assert listing.cursor == opened.store.head_commit()


def test_an_empty_store_lists_nothing_with_no_cursor(opened: MnemProvider) -> None:
    records, listing = _collect(opened.listing())
    assert (records, listing.complete, listing.cursor) == ([], True, None)


# --- one handle, busy, leftovers -------------------------------------------------------------


def test_a_held_store_is_busy_then_opens_once_freed(tmp_path: Path, sdk: ModuleType) -> None:
    root = new_store(sdk, tmp_path / "agent")
    provider = MnemProvider("mnem", root, sdk=sdk, busy_timeout=0.3)
    agent = sdk.open(root)
    with pytest.raises(ProviderBusy, match="store busy"):
        provider.open()
    del agent
    provider.open()
    assert provider.check().startswith("reachable, 0 memories")
    provider.close()


def test_open_waits_for_an_agent_that_lets_go_within_the_timeout(
    tmp_path: Path, sdk: ModuleType
) -> None:
    root = new_store(sdk, tmp_path / "agent")
    held = [sdk.open(root)]
    threading.Timer(0.3, held.clear).start()
    provider = MnemProvider("mnem", root, sdk=sdk, busy_timeout=60)  # generous: a busy machine
    started = time.monotonic()
    provider.open()
    assert time.monotonic() - started > 0.25 and not held  # it waited for the agent to let go
    provider.close()


def test_another_process_holding_the_store_makes_it_busy(tmp_path: Path, sdk: ModuleType) -> None:
    root = new_store(sdk, tmp_path / "agent")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; import {sdk.__name__} as m; s = m.open(sys.argv[1]); "
            "print('held', flush=True); sys.stdin.read()",
            str(root),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ProviderBusy):
            MnemProvider("mnem", root, sdk=sdk, busy_timeout=0.2).open()
    finally:
        holder.communicate("", timeout=30)
    provider = MnemProvider("mnem", root, sdk=sdk, busy_timeout=30)
    provider.open()
    provider.close()


def test_close_releases_the_store_even_while_an_error_is_kept(
    opened: MnemProvider, sdk: ModuleType
) -> None:
    sdk.agents.remember(opened.store, "mem0:x", "agent's")
    (kept,) = list(opened.write_many([WriteOp("create", "k", item=mem0_item("x", "other"))]))
    try:
        opened.update("mem0:missing", mem0_item("missing", "x"))
    except NotFound as exc:
        also_kept = exc
    opened.close()
    agent = sdk.open(opened.path)  # would raise StoreIoError if anything still pinned memsync's
    assert isinstance(kept.error, NodeIdCollision) and isinstance(also_kept, NotFound)
    del agent


def test_leftover_staged_changes_are_neither_committed_nor_read(
    tmp_path: Path, sdk: ModuleType
) -> None:
    root = new_store(sdk, tmp_path / "agent")
    agent = sdk.open(root)
    sdk.agents.remember(agent, "kept", "committed by the agent")
    agent.add("half", "staged, then the agent crashed")
    del agent
    gc.collect()
    provider = MnemProvider("mnem", root, sdk=sdk, busy_timeout=0)
    provider.open()
    records, _ = list_all(provider)
    assert [r.id for r in records] == ["kept"]
    assert "1 uncommitted change(s)" in provider.check()
    with pytest.raises(StagedChangesPresent, match="will not commit them"):
        provider.create(mem0_item("new", "would sweep the leftover in"))
    assert [node_id for node_id, _ in provider.store.staged()] == ["half"]
    assert len(provider.store.log(first_parent=True)) == 1
    provider.close()


def test_a_failed_commit_leaves_staging_as_it_found_it(
    opened: MnemProvider, monkeypatch: pytest.MonkeyPatch, double: ModuleType
) -> None:
    if opened.sdk is not double:
        pytest.skip("injecting a storage failure needs the double")

    def broken_commit(self: Any, message: str, **kwargs: Any) -> str:
        raise double.StoreIoError("storage error: disk full")

    opened.create(mem0_item("a", "before"))
    monkeypatch.setattr(double.Store, "commit", broken_commit)
    results = list(
        opened.write_many(
            [
                WriteOp("create", "b", item=mem0_item("b", "new")),
                WriteOp("delete", "a", provider_id="mem0:a"),
            ]
        )
    )
    assert all("disk full" in str(r.error) for r in results)
    assert opened.store.staged() == [] and opened.store.staged_deletions() == []


# --- opening the wrong thing ---------------------------------------------------------------------


def test_a_missing_store_says_how_to_create_one(tmp_path: Path, sdk: ModuleType) -> None:
    with pytest.raises(ProviderError, match=r"mnem\.init"):
        MnemProvider("mnem", tmp_path / "nowhere", sdk=sdk, busy_timeout=0).open()


def test_a_store_in_a_parent_directory_is_not_taken_for_the_configured_one(
    tmp_path: Path, sdk: ModuleType
) -> None:
    new_store(sdk, tmp_path)
    with pytest.raises(ProviderError, match="above it"):
        MnemProvider("mnem", tmp_path / "sub", sdk=sdk, busy_timeout=0).open()
    sdk.open(tmp_path)  # and it was let go


def test_a_store_on_another_branch_is_refused(tmp_path: Path, sdk: ModuleType) -> None:
    root = new_store(sdk, tmp_path)
    with pytest.raises(ProviderError, match="does not move HEAD"):
        MnemProvider("mnem", root, sdk=sdk, branch="sync", busy_timeout=0).open()
    MnemProvider("mnem", root, sdk=sdk, branch="main", busy_timeout=0).open()


# --- build from the config --------------------------------------------------------------------------


CONFIG = """
[sync]
active = "mnem"

[providers.mnem]
type = "mnem"
path = "{path}"
busy_timeout = "2s"
scope_key = "support-bot"
"""


def test_build_without_the_sdk_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mnem", None)  # `import mnem` fails as if not installed
    config = parse_config(CONFIG.format(path=tmp_path))
    with pytest.raises(ProviderUnavailable, match=r"memsync\[mnem\]"):
        build_provider("mnem", config)


def test_build_from_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mnem", mnem_double)
    provider = build_provider("mnem", parse_config(CONFIG.format(path=tmp_path / "store")))
    assert isinstance(provider, MnemProvider)
    assert (provider.busy_timeout, provider.scope_key()) == (2.0, "support-bot")
    assert provider.identity() == f"mnem:{(tmp_path / 'store').resolve()}"


# --- Mem0 -> mnem -> Mem0, through the real Mem0 library -----------------------------------------------


def test_mem0_to_mnem_to_mem0_loses_nothing(tmp_path: Path, sdk: ModuleType) -> None:
    from tests.mem0_fixtures import open_provider

    source = open_provider(None, {"user_id": "alice"}, mem0_dir=tmp_path, name="mem0")
    back = open_provider(None, {"user_id": "alice"}, mem0_dir=tmp_path, name="mem0-copy")
    mnem = MnemProvider("mnem", new_store(sdk, tmp_path / "mnem"), sdk=sdk, busy_timeout=0)
    source.memory.add(
        [{"role": "assistant", "content": "books aisle seats", "name": "bot-7"}],
        user_id="alice",
        metadata={"created_at": "2021-06-01T09:30:00.123456-07:00", "trip": {"legs": 2}},
        infer=False,
    )
    source.memory.add("likes green tea", user_id="alice", metadata={"topic": "tea"}, infer=False)
    originals, _ = list_all(source)
    with mnem:
        for record in originals:
            mnem.create(Outgoing.from_record(record, source.origin_of(record)))
        via_mnem, _ = list_all(mnem)
    for record in via_mnem:
        back.create(Outgoing.from_record(record, mnem.origin_of(record)))
    returned, _ = list_all(back)
    source.close()
    back.close()

    def essentials(records: list[Any], origin_of: Any) -> list[tuple[Any, ...]]:
        return sorted(
            (
                origin_of(r),
                r.content,
                json.dumps(r.metadata, sort_keys=True),
                r.created_at,
                json.dumps({k: v for k, v in r.provenance.items()}, sort_keys=True),
            )
            for r in records
        )

    assert essentials(via_mnem, mnem.origin_of) == essentials(originals, source.origin_of)
    assert essentials(returned, back.origin_of) == essentials(originals, source.origin_of)


# --- writes ask no node of the store (issue 32) -----------------------------------------------


def _seeded(double: ModuleType, root: Path, count: int) -> MnemProvider:
    provider = MnemProvider("mnem", new_store(double, root), sdk=double, busy_timeout=0)
    provider.open()
    provider.known.forget_all()
    list(
        provider.write_many(
            [
                WriteOp("create", str(i), item=mem0_item(f"m{i}", f"memory {i}"))
                for i in range(count)
            ]
        )
    )
    return provider


def test_a_batch_after_a_full_listing_scans_the_store_for_nothing(
    tmp_path: Path, double: ModuleType
) -> None:
    """In mnem 0.0.7 one node read costs a pass over the whole store: a batch of creates,
    updates and deletes made none (it did one per op, quadratic in all)."""
    provider = _seeded(double, tmp_path, 300)
    provider.close()
    provider.open()
    records = {r.id: r for r in list_all(provider)[0]}  # the full listing
    double.stats.reset()
    ops = [WriteOp("create", f"c{i}", item=mem0_item(f"new{i}", f"new {i}")) for i in range(100)]
    ops += [
        WriteOp("update", f"u{i}", item=mem0_item(f"m{i}", f"edited {i}"), provider_id=f"mem0:m{i}")
        for i in range(100)
    ]
    ops += [WriteOp("delete", f"d{i}", provider_id=f"mem0:m{i}") for i in range(200, 210)]
    results = list(provider.write_many(ops))
    assert [r.error for r in results] == [None] * len(ops)
    assert double.stats.store_scans == 10  # the ten rm calls alone (the SDK's own cost)
    assert double.stats.commits_written == 1
    assert len(records) == 300
    assert {r.id for r in list_all(provider)[0]} == (
        {f"mem0:m{i}" for i in range(300)} - {f"mem0:m{i}" for i in range(200, 210)}
    ) | {f"mem0:new{i}" for i in range(100)}
    provider.close()


def test_updates_and_deletes_from_an_incremental_cycle_use_the_staged_record(
    tmp_path: Path, double: ModuleType
) -> None:
    """After an incremental listing nothing is known of unchanged nodes: an update or a delete
    takes the record the engine staged for it (``WriteOp.previous``) instead of a read."""
    provider = _seeded(double, tmp_path, 50)
    staged = {r.id: r for r in list_all(provider)[0]}
    cursor = provider.listing().cursor
    provider.close()
    provider.open()
    list(provider.listing(cursor).pages())  # no new commit: reads nothing, knows nothing
    double.stats.reset()
    ops = [
        WriteOp(
            "update",
            "u",
            item=mem0_item("m1", "edited"),
            provider_id="mem0:m1",
            previous=staged["mem0:m1"],
        ),
        WriteOp("delete", "d", provider_id="mem0:m2", previous=staged["mem0:m2"]),
    ]
    assert [r.error for r in provider.write_many(ops)] == [None, None]
    assert double.stats.store_scans == 1  # the rm
    assert provider.store.working_node("mem0:m1").content == "edited"
    assert provider.store.working_node("mem0:m2") is None
    provider.close()


def test_creates_nobody_knew_cost_one_diff_for_the_whole_batch(
    tmp_path: Path, double: ModuleType
) -> None:
    provider = _seeded(double, tmp_path, 20)
    double.agents.remember(provider.store, "mem0:taken", "the agent's own memory")
    provider.known.forget_all()  # as after an incremental listing
    double.stats.reset()
    ops = [WriteOp("create", str(i), item=mem0_item(f"fresh{i}", f"fresh {i}")) for i in range(50)]
    ops.append(WriteOp("create", "x", item=mem0_item("taken", "other text")))
    ops.append(WriteOp("create", "m1", item=mem0_item("m1", "memory 1")))  # memsync's own, same
    results = {r.op.key: r for r in provider.write_many(ops)}
    assert double.stats.store_scans == 1  # one diff, whatever the batch's size
    assert isinstance(results["x"].error, NodeIdCollision)
    assert results["m1"].error is None and results["0"].error is None
    assert provider.store.working_node("mem0:taken").content == "the agent's own memory"
    assert provider.store.staged() == []
    provider.close()


def test_an_update_from_the_staged_record_is_written_even_when_its_version_matches(
    tmp_path: Path, sdk: ModuleType
) -> None:
    """The mirror keeps an agent's rewrite under the version it replaced until memsync writes
    it back: a staged record's version is not proof of what the node holds, so the write-back
    is made (here an agent rewrote the same text and dropped memsync's note)."""
    provider = MnemProvider("mnem", new_store(sdk, tmp_path / "a"), sdk=sdk, busy_timeout=0)
    provider.open()
    item = mem0_item("m1", "likes tea")
    staged = provider.create(item)
    sdk.agents.remember(provider.store, "mem0:m1", "likes tea")  # the note is gone
    provider.close()
    provider.open()  # knows nothing of mem0:m1
    op = WriteOp("update", "u", item=item, provider_id="mem0:m1", previous=staged)
    assert [r.error for r in provider.write_many([op])] == [None]
    assert provider.store.working_node("mem0:m1").provenance.note is not None
    provider.close()


def test_a_create_nobody_knew_of_a_node_already_there_as_written_commits_nothing(
    tmp_path: Path, double: ModuleType
) -> None:
    provider = _seeded(double, tmp_path, 5)
    head = provider.store.head_commit()
    provider.known.forget_all()  # as after an incremental listing
    (result,) = provider.write_many([WriteOp("create", "k", item=mem0_item("m1", "memory 1"))])
    assert result.error is None and result.record is not None
    assert provider.store.head_commit() == head and provider.store.staged() == []
    provider.close()
