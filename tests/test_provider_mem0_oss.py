"""mem0-oss against the real mem0ai library, offline: the contract, and what Mem0 makes hard.

Every test here runs mem0ai itself (local Qdrant on disk or in memory, SQLite history, the
hash embedder); nothing is mocked. Processes that hold the store are real processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.base.errors import ConfigError, NotFound, ProviderBusy, ProviderError
from memsync.base.records import Outgoing, parse_instant
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.providers.base import Provider, WriteOp
from memsync.providers.mem0 import oss_memory
from memsync.providers.mem0.oss import Mem0Listing, Mem0OssProvider, build
from memsync.providers.mem0.oss_config import (
    load_mem0_config,
    offline_config,
    prepare_mem0_environment,
)
from memsync.providers.mem0.paging import fetch_all, start_for
from tests.contract import ProviderContract, item, list_all
from tests.mem0_fixtures import (
    DIMS,
    insert_behind_memsync,
    mem0_payload,
    offline_mem0_config,
    open_provider,
)

BIG = 1200  # more than get_all's default cap (20) and than the paging loop's first top_k


# the contract ---------------------------------------------------------------------------


class TestMem0OssContract(ProviderContract):
    @pytest.fixture
    def factory(self, tmp_path: Path) -> Iterator[Any]:
        """The first scope opens the store from config; later scopes share its Memory."""
        opened: list[Mem0OssProvider] = []

        def make(scope: str) -> Provider:
            if not opened:
                opened.append(open_provider(tmp_path, {"user_id": scope}, mem0_dir=tmp_path))
                return opened[0]
            return Mem0OssProvider.from_memory("mem0", opened[0].memory, {"user_id": scope})

        yield make
        for provider in opened:
            provider.close()

    def insert_empty(self, provider: Provider) -> str:
        assert isinstance(provider, Mem0OssProvider)
        payload = mem0_payload("x", user_id=provider.scope["user_id"])
        del payload["data"]
        return insert_behind_memsync(provider.memory, payload)


# a store larger than any default cap, built once ------------------------------------------


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """BIG memories of user 'big' (5 of them also carry an agent id), 30 of user 'other'."""
    root = tmp_path_factory.mktemp("mem0big")
    provider = open_provider(None, {"user_id": "big"}, mem0_dir=root)
    memory = provider.memory
    ids = {
        r["id"]
        for i in range(BIG)
        for r in memory.add(f"memory {i}", user_id="big", infer=False)["results"]
    }
    agent_ids = {
        r["id"]
        for i in range(5)
        for r in memory.add(f"agent note {i}", user_id="big", agent_id="a1", infer=False)["results"]
    }
    other_ids = {
        r["id"]
        for i in range(30)
        for r in memory.add(f"other {i}", user_id="other", infer=False)["results"]
    }
    yield {
        "provider": provider,
        "memory": memory,
        "ids": ids | agent_ids,
        "agent_ids": agent_ids,
        "other_ids": other_ids,
        "root": root,
    }
    provider.close()


def test_get_all_really_caps_silently_so_the_store_tests_something(
    big_store: dict[str, Any],
) -> None:
    assert len(big_store["memory"].get_all(filters={"user_id": "big"})["results"]) == 20


def test_more_memories_than_any_default_cap_are_all_listed_and_complete(
    big_store: dict[str, Any],
) -> None:
    records, listing = list_all(big_store["provider"])
    assert listing.complete
    assert {r.id for r in records} == big_store["ids"]
    assert len(records) == BIG + 5
    assert max(len(p.records) for p in big_store["provider"].listing().pages()) <= 500


def test_without_a_count_hint_top_k_grows_until_a_call_comes_back_short(
    big_store: dict[str, Any],
) -> None:
    provider = Mem0OssProvider.from_memory(
        "mem0", big_store["memory"], {"user_id": "big"}, count_hint=False, first_top_k=4
    )
    records, listing = list_all(provider)
    assert listing.complete
    assert {r.id for r in records} == big_store["ids"]
    assert listing.fetch is not None
    assert (listing.fetch.calls, listing.fetch.top_k) == (4, 4 * 16**3)  # 4, 64, 1024, 16384


def test_the_count_hint_proves_completeness_in_one_call(big_store: dict[str, Any]) -> None:
    _, listing = list_all(big_store["provider"])
    assert listing.fetch is not None
    assert (listing.fetch.calls, listing.fetch.fetched) == (1, BIG + 5)


def test_paging_the_real_get_all_equals_one_call_larger_than_the_store(
    big_store: dict[str, Any],
) -> None:
    memory = big_store["memory"]

    def get_all(top_k: int) -> list[dict[str, Any]]:
        return list(
            memory.get_all(filters={"user_id": "big"}, top_k=top_k, show_expired=True)["results"]
        )

    paged = fetch_all(get_all, start=7, factor=3)
    whole = get_all(100_000)
    assert paged.complete
    assert [m["id"] for m in paged.items] == [m["id"] for m in whole]
    assert len(whole) == BIG + 5


def test_a_listing_that_hits_its_limit_is_partial_and_says_why(
    big_store: dict[str, Any],
) -> None:
    memory = big_store["memory"]
    listing = Mem0Listing(
        lambda: fetch_all(
            lambda k: memory.get_all(filters={"user_id": "big"}, top_k=k, show_expired=True)[
                "results"
            ],
            start=100,
            limit=500,
        ),
        "big",
        "mem0",
    )
    records = [r for page in listing.pages() for r in page.records]
    assert len(records) == 500
    assert not listing.complete
    assert listing.partial_reason and "maximum of 500" in listing.partial_reason


def test_another_users_memories_are_never_listed(big_store: dict[str, Any]) -> None:
    big, _ = list_all(big_store["provider"])
    assert not {r.id for r in big} & big_store["other_ids"]
    other = Mem0OssProvider.from_memory("mem0", big_store["memory"], {"user_id": "other"})
    records, listing = list_all(other)
    assert listing.complete and {r.id for r in records} == big_store["other_ids"]


def test_a_narrower_scope_lists_only_the_memories_carrying_every_id(
    big_store: dict[str, Any],
) -> None:
    narrow = Mem0OssProvider.from_memory(
        "mem0", big_store["memory"], {"user_id": "big", "agent_id": "a1"}
    )
    records, listing = list_all(narrow)
    assert listing.complete and {r.id for r in records} == big_store["agent_ids"]
    assert {r.provenance["agent_id"] for r in records} == {"a1"}


def test_get_update_and_delete_never_reach_into_another_scope(
    big_store: dict[str, Any],
) -> None:
    foreign_id = next(iter(big_store["other_ids"]))
    provider = big_store["provider"]
    assert provider.get(foreign_id) is None
    with pytest.raises(NotFound):
        provider.update(foreign_id, item("hijacked", origin="test:x"))
    provider.delete(foreign_id)
    assert big_store["memory"].get(foreign_id)["memory"].startswith("other ")


# Mem0 specifics on a fresh store --------------------------------------------------------


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[Mem0OssProvider]:
    opened = open_provider(tmp_path, {"user_id": "alice"}, mem0_dir=tmp_path / "mem0dir")
    yield opened
    opened.close()


def test_two_memories_with_the_same_text_are_both_kept_and_listed(
    provider: Mem0OssProvider,
) -> None:
    first = provider.create(item("likes green tea", origin="test:1"))
    second = provider.create(item("likes green tea", origin="test:2"))
    records, listing = list_all(provider)
    assert listing.complete
    assert first.id != second.id
    assert sorted(r.id for r in records) == sorted([first.id, second.id])


def test_a_point_without_data_is_skipped_by_id_and_the_rest_still_listed(
    provider: Mem0OssProvider,
) -> None:
    for i in range(3):
        provider.create(item(f"fine {i}", origin=f"test:{i}"))
    payload = mem0_payload("gone", user_id="alice")
    del payload["data"]
    empty_id = insert_behind_memsync(provider.memory, payload)
    records, listing = list_all(provider)
    assert listing.complete
    assert sorted(r.content for r in records) == ["fine 0", "fine 1", "fine 2"]
    assert [s.id for s in listing.skipped] == [empty_id]
    assert provider.get(empty_id) is None


def test_a_point_with_non_text_data_fails_the_listing_and_is_named(
    provider: Mem0OssProvider,
) -> None:
    # Mem0's own get_all cannot list a scope holding one: never report a partial as complete.
    provider.create(item("fine", origin="test:fine"))
    bad_id = insert_behind_memsync(provider.memory, mem0_payload("x", user_id="alice", data=123))
    listing = provider.listing()
    with pytest.raises(ProviderError, match=bad_id):
        list(listing.pages())
    assert not listing.complete


def test_created_at_keeps_its_offset_in_mem0_and_survives_an_update(
    provider: Mem0OssProvider,
) -> None:
    outgoing = item("met Bob in 2021", origin="test:ts")
    outgoing.created_at = "2021-06-01T09:30:00-07:00"
    created = provider.create(outgoing)
    assert provider.memory.get(created.id)["created_at"] == "2021-06-01T09:30:00-07:00"
    updated = provider.update(created.id, item("met Bob in June 2021", origin="test:ts"))
    assert parse_instant(updated.created_at) == parse_instant("2021-06-01T16:30:00Z")
    assert "created_at" not in updated.metadata


def test_update_replaces_metadata_keeps_the_id_and_mem0s_own_history(
    provider: Mem0OssProvider,
) -> None:
    created = provider.create(item("works at ACME", origin="test:up", team="a", floor=3))
    updated = provider.update(created.id, item("works at Globex", origin="test:up", team="b"))
    assert (updated.id, updated.content, updated.metadata) == (
        created.id,
        "works at Globex",
        {"team": "b"},
    )
    assert updated.origin == "test:up"
    assert updated.version != created.version
    events = [row["event"] for row in provider.memory.history(created.id)]
    assert events == ["ADD", "UPDATE"]


def test_metadata_keys_mem0_reserves_round_trip_and_do_not_hide_the_memory(
    provider: Mem0OssProvider,
) -> None:
    reserved = {"role": "chef", "expiration_date": "2000-01-01", "user_id": "mallory", "id": 7}
    outgoing = item("cooks on Sundays", origin="test:res", **reserved)
    created = provider.create(outgoing)
    assert created.metadata == reserved
    assert created.fingerprint == outgoing.fingerprint
    visible = provider.memory.get_all(filters={"user_id": "alice"})["results"]
    assert [m["id"] for m in visible] == [created.id]  # not expired, still alice's
    assert not provider.memory.get_all(filters={"user_id": "mallory"})["results"]


def test_expired_memories_are_listed_with_their_expiration_date(
    provider: Mem0OssProvider,
) -> None:
    # Mem0's get_all hides them by default, over-fetching to make up: a short answer would
    # then prove nothing. memsync lists what the store holds and says when it expired.
    for i in range(3):
        provider.memory.add(f"old {i}", user_id="alice", expiration_date="2000-01-01", infer=False)
    provider.create(item("current", origin="test:now"))
    records, listing = list_all(provider)
    assert listing.complete
    assert sorted(r.content for r in records) == ["current", "old 0", "old 1", "old 2"]
    assert {r.expiration_date for r in records} == {None, "2000-01-01"}
    assert all("expiration_date" not in r.provenance for r in records)  # a field of its own


def test_role_and_actor_from_provenance_become_mem0s_own_fields(
    provider: Mem0OssProvider,
) -> None:
    outgoing = item("prefers short answers", origin="mem0:elsewhere")
    outgoing.provenance = {"role": "assistant", "actor_id": "planner-bot"}
    created = provider.create(outgoing)
    raw = provider.memory.get(created.id)
    assert (raw["role"], raw["actor_id"]) == ("assistant", "planner-bot")
    assert created.provenance["source"] == "planner-bot"


def test_from_memory_close_leaves_the_callers_memory_open(provider: Mem0OssProvider) -> None:
    borrowed = Mem0OssProvider.from_memory("import", provider.memory, {"user_id": "alice"})
    borrowed.create(item("still here", origin="test:b"))
    borrowed.close()
    assert [r.content for r in list_all(provider)[0]] == ["still here"]
    assert borrowed.memory is provider.memory  # still attached: no reopen onto defaults


# no phone home, no keys ----------------------------------------------------------------


_CLEAN_RUN = textwrap.dedent(
    """
    import json, os, socket, sys, time
    from pathlib import Path
    attempts = []
    real_connect = socket.socket.connect
    def spy(self, address):
        attempts.append(list(address) if isinstance(address, tuple) else str(address))
        return real_connect(self, address)
    socket.socket.connect = spy
    from memsync.config import load_config
    from memsync.base.errors import ProviderError
    from memsync.providers import build_provider
    provider = build_provider("app", load_config(Path(sys.argv[1])))
    provider.open()
    listed = sum(len(p.records) for p in provider.listing().pages())
    started = time.monotonic()
    try:
        provider.create(__import__("memsync.base.records").base.records.Outgoing("t:1", "hello"))
        error = None
    except ProviderError as exc:
        error = str(exc)
    failed_after = time.monotonic() - started
    import mem0.memory.telemetry as telemetry
    provider.close()
    print(json.dumps({
        "env_telemetry": os.environ.get("MEM0_TELEMETRY"),
        "module_telemetry": telemetry.MEM0_TELEMETRY,
        "mem0_dir": os.environ.get("MEM0_DIR"),
        "listed": listed, "error": error, "failed_after": failed_after,
        "connects": attempts,
    }))
    """
)


def test_a_fresh_process_has_telemetry_off_and_needs_no_api_key(tmp_path: Path) -> None:
    home, memsync_home = tmp_path / "home", tmp_path / "memsync"
    home.mkdir()
    config = tmp_path / "config.toml"
    store = offline_mem0_config(tmp_path / "store")
    config.write_text(
        textwrap.dedent(
            """
            [sync]
            active = "app"
            [providers.app]
            type = "mem0-oss"
            scope = { user_id = "alice" }
            mem0_config_file = "mem0.json"
            """
        )
    )
    (tmp_path / "mem0.json").write_text(json.dumps(store))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEM0_", "OPENAI_", "MEMSYNC_")) and k != "HOME"
    }
    env.update(HOME=str(home), MEMSYNC_HOME=str(memsync_home))
    run = subprocess.run(
        [sys.executable, "-c", _CLEAN_RUN, str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["env_telemetry"] == "False" and seen["module_telemetry"] is False
    assert Path(seen["mem0_dir"]).is_relative_to(memsync_home)
    assert not (home / ".mem0").exists()
    assert seen["listed"] == 0  # constructed and listed with no key anywhere
    assert seen["error"] and "api_key_env" in seen["error"]  # writes say what to set
    assert seen["failed_after"] < 10
    # the failed write tried the dead placeholder endpoint, and nothing else was contacted
    assert seen["connects"] and all(a == ["127.0.0.1", 9] for a in seen["connects"])
    assert "memsync-placeholder" not in run.stdout + run.stderr


def test_telemetry_is_switched_off_even_when_mem0_was_imported_with_it_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mem0.memory.main
    import mem0.memory.telemetry

    monkeypatch.setattr(mem0.memory.telemetry, "MEM0_TELEMETRY", True)
    monkeypatch.setattr(mem0.memory.main, "MEM0_TELEMETRY", True)
    monkeypatch.setenv("MEM0_TELEMETRY", "True")
    prepare_mem0_environment(telemetry=False, mem0_dir=None)
    assert os.environ["MEM0_TELEMETRY"] == "False"
    assert mem0.memory.telemetry.MEM0_TELEMETRY is False
    assert mem0.memory.main.MEM0_TELEMETRY is False


def test_the_llm_is_always_a_dead_placeholder_and_a_given_key_reaches_the_embedder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = {
        "llm": {"provider": "ollama", "config": {"model": "llama3"}},
        "embedder": {"provider": "openai", "config": {"model": "text-embedding-3-small"}},
    }
    keyed, placeholder = offline_config(
        app, embedder="config", api_key=Secret("sk-real", "$K"), application_mem0_dir="/app"
    )
    assert keyed["llm"]["config"]["openai_base_url"] == "http://127.0.0.1:9/v1"
    assert keyed["embedder"]["config"] == {"model": "text-embedding-3-small", "api_key": "sk-real"}
    assert keyed["history_db_path"] == "/app/history.db" and not placeholder
    keyless, placeholder = offline_config(
        app, embedder="config", api_key=None, application_mem0_dir="/app"
    )
    assert placeholder and keyless["embedder"]["config"]["openai_base_url"].endswith(":9/v1")
    assert app["llm"]["provider"] == "ollama"  # the caller's dict is untouched


def test_keys_never_appear_in_errors_or_reprs(tmp_path: Path) -> None:
    key = "sk-live-THIS-IS-SECRET-42"
    config = offline_mem0_config(tmp_path)
    config["embedder"] = {
        "provider": "openai",
        "config": {"openai_base_url": "http://127.0.0.1:9/v1"},
    }
    provider = Mem0OssProvider(
        "mem0",
        {"user_id": "alice"},
        mem0_config=config,
        api_key=Secret(key, "$K"),
        mem0_dir=tmp_path / "mem0dir",
    )
    provider.open()
    try:
        with pytest.raises(ProviderError) as raised:
            provider.create(item("hello", origin="test:k"))
        assert key not in str(raised.value) and key not in repr(provider)
    finally:
        provider.close()
    broken = offline_mem0_config(tmp_path / "b")
    broken["vector_store"]["config"]["api_key"] = key
    broken["vector_store"]["config"]["no_such_field"] = 1
    with pytest.raises(ConfigError) as invalid:
        Mem0OssProvider(
            "mem0", {"user_id": "a"}, mem0_config=broken, mem0_dir=tmp_path / "mem0dir"
        ).open()
    assert key not in str(invalid.value)


# one process at a time -----------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from qdrant_client import QdrantClient
    client = QdrantClient(path=sys.argv[1])
    print("held", flush=True)
    if sys.argv[2] == "stdin":
        sys.stdin.readline()
    else:
        time.sleep(float(sys.argv[2]))
    client.close()
    """
)


def _hold(path: Path, until: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), until],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_store_held_by_another_process_is_busy_until_the_holder_exits(
    tmp_path: Path,
) -> None:
    first = open_provider(tmp_path, {"user_id": "alice"}, mem0_dir=tmp_path / "m")
    first.create(item("written before", origin="test:1"))
    first.close()
    holder = _hold(tmp_path / "qdrant", "stdin")
    try:
        waiting = Mem0OssProvider(
            "mem0",
            {"user_id": "alice"},
            mem0_config=offline_mem0_config(tmp_path),
            embedder="hash",
            mem0_dir=tmp_path / "m",
            busy_timeout=1.0,
        )
        started = time.monotonic()
        with pytest.raises(ProviderBusy, match="store busy") as busy:
            waiting.open()
        assert time.monotonic() - started >= 1.0  # it waited its budget before giving up
        assert busy.value.retry_after
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    waiting.open()
    try:
        assert [r.content for r in list_all(waiting)[0]] == ["written before"]
    finally:
        waiting.close()


def test_open_waits_for_a_holder_that_lets_go_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_provider(tmp_path, {"user_id": "alice"}, mem0_dir=tmp_path / "m")
    first.create(item("written before", origin="test:1"))
    first.close()
    refused = threading.Event()
    real_busy = oss_memory._store_busy

    def observed(exc: BaseException) -> bool:
        busy = real_busy(exc)
        if busy:
            refused.set()  # an open attempt met the held store
        return busy

    monkeypatch.setattr(oss_memory, "_store_busy", observed)
    holder = _hold(tmp_path / "qdrant", "stdin")
    opened: list[Mem0OssProvider] = []
    waiter = threading.Thread(
        target=lambda: opened.append(
            open_provider(tmp_path, {"user_id": "alice"}, mem0_dir=tmp_path / "m", busy_timeout=120)
        )
    )
    try:
        waiter.start()
        assert refused.wait(60), "open never found the store held"
        assert not opened  # still waiting while the holder holds it
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    waiter.join(timeout=120)
    (provider,) = opened  # it got the store once the holder let go, without an error
    try:
        assert [r.content for r in list_all(provider)[0]] == ["written before"]
    finally:
        provider.close()


def test_close_releases_the_store_for_another_process(tmp_path: Path) -> None:
    provider = open_provider(tmp_path, {"user_id": "alice"}, mem0_dir=tmp_path / "m")
    provider.create(item("hello", origin="test:1"))
    memory = provider.memory
    provider.close()
    assert memory.db is None  # the history database is closed too
    holder = _hold(tmp_path / "qdrant", "0")
    assert holder.wait(timeout=30) == 0


# config ---------------------------------------------------------------------------------


def test_build_reads_a_yaml_config_file_with_paths_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "memsync"))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "mem0.yaml").write_text(
        textwrap.dedent(
            f"""
            vector_store:
              provider: qdrant
              config: {{collection_name: app, embedding_model_dims: {DIMS}, path: store}}
            history_db_path: history.db
            """
        )
    )
    config = parse_config(
        textwrap.dedent(
            """
            [sync]
            active = "app"
            [providers.app]
            type = "mem0-oss"
            scope = { user_id = " alice " }
            mem0_config_file = "app/mem0.yaml"
            embedder = "hash"
            busy_timeout = "2s"
            """
        ),
        base_dir=tmp_path,
    )
    provider = build("app", config.providers["app"], config)  # type: ignore[arg-type]
    assert provider.scope == {"user_id": "alice"} and provider.busy_timeout == 2.0
    assert provider.mem0_dir is not None and provider.mem0_dir.is_relative_to(tmp_path / "memsync")
    provider.open()
    try:
        provider.create(item("from yaml", origin="test:y"))
    finally:
        provider.close()
    assert (tmp_path / "app" / "store").is_dir() and (tmp_path / "app" / "history.db").is_file()
    assert provider.identity().endswith(f"{tmp_path / 'app' / 'store'}/app#user_id=alice")


def test_a_broken_config_file_is_a_config_error_that_quotes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mem0.yaml"
    path.write_text("embedder:\n  config: {api_key: sk-SECRET-in-a-broken-line\n")
    entry = parse_config(
        f'[sync]\nactive = "m"\n[providers.m]\ntype = "mem0-oss"\n'
        f'scope = {{ user_id = "a" }}\nmem0_config_file = "{path}"\n'
    ).providers["m"]
    with pytest.raises(ConfigError, match=r"not valid YAML or JSON \(line \d+\)") as raised:
        load_mem0_config("m", entry)  # type: ignore[arg-type]
    assert "SECRET" not in str(raised.value)


def test_a_scope_id_with_spaces_is_refused_before_mem0_is_touched() -> None:
    with pytest.raises(ConfigError, match="whitespace"):
        Mem0OssProvider("m", {"user_id": "alice smith"})


# the paging loop, as a pure function ----------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(min_value=0, max_value=20_000),
    start=st.integers(min_value=1, max_value=3000),
    factor=st.integers(min_value=2, max_value=10),
)
def test_fetch_all_returns_everything_and_proves_it(size: int, start: int, factor: int) -> None:
    store = list(range(size))
    asked: list[int] = []

    def get_all(top_k: int) -> list[int]:
        asked.append(top_k)
        return store[:top_k]

    result = fetch_all(get_all, start=start, factor=factor)
    assert result.complete and result.items == store
    assert asked == sorted(asked) and asked[-1] > size
    assert result.calls == len(asked) and result.fetched == sum(min(k, size) for k in asked)
    # no cursor means repeated work, but bounded: the last call plus a geometric series
    assert result.fetched <= size + (size * factor) // (factor - 1) + start


@given(
    size=st.integers(min_value=0, max_value=5000), limit=st.integers(min_value=1, max_value=3000)
)
def test_fetch_all_never_calls_a_capped_answer_complete(size: int, limit: int) -> None:
    result = fetch_all(lambda k: list(range(min(k, size))), start=10, limit=limit)
    assert result.complete == (size < limit)
    assert len(result.items) == min(size, limit)


def test_a_count_hint_starts_past_the_expected_size() -> None:
    assert start_for(None) == 1000 and start_for(10) == 1000
    assert start_for(10_000) > 10_000


# writes in bulk -------------------------------------------------------------------------


def test_write_many_reports_each_failure_and_carries_on(provider: Mem0OssProvider) -> None:
    ops = [
        WriteOp("create", "a", item=item("first", origin="test:a")),
        WriteOp("create", "b", item=Outgoing("test:b", "   ")),
        WriteOp("update", "c", item=item("ghost", origin="test:c"), provider_id="nope"),
        WriteOp("create", "d", item=item("last", origin="test:d")),
    ]
    results = list(provider.write_many(ops))
    assert [type(r.error).__name__ if r.error else None for r in results] == [
        None,
        "ProviderError",
        "NotFound",
        None,
    ]
    assert sorted(r.content for r in list_all(provider)[0]) == ["first", "last"]
