"""``memsync.langgraph.MnemosyneStore`` passes what ``mnem_langgraph.MnemosyneStore`` passes: one
test body (put, get, search with filters and queries, delete, list_namespaces, why, history,
branch and switch, the async forms, the errors) runs on mnem-langgraph 0.0.1 and on memsync's
store, alone and through the daemon, over copies of the same store, with the same answers.

Commit ids and times differ between runs (a commit hashes its time), so they are named by first
appearance; a LangGraph timestamp of a node without an event time is "now" in both, so it is
compared as "now" (its type and zone, and that it is not older than the run); a node's event time
(the seeded ``prefs``, 17 ms after the epoch) is compared by value.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import Item, SearchItem

from tests.conftest import write_config
from tests.mnem_sdk import real_sdk
from tests.test_daemon import DaemonProcess
from tests.test_live_watch import DEADLINE, wait_until
from tests.test_serve_mcp import CONFIG, Names, seed


def stamp(value: datetime, since: datetime) -> str:
    """A LangGraph timestamp as compared: "now" when it is no older than the run (SINCE), else
    its value; with its type and zone either way."""
    when = "<now>" if value >= since else value.isoformat()
    return f"{type(value).__name__} {value.tzinfo} {when}"


def item(names: Names, since: datetime, found: Item | None) -> Any:
    if found is None:
        return None
    stamps = [stamp(found.created_at, since), stamp(found.updated_at, since)]
    shape = [list(found.namespace), found.key, found.value, stamps]
    if isinstance(found, SearchItem):
        shape.append(found.score)
    return names.normal(shape)


def sdk_object(names: Names, value: Any) -> Any:
    """A mnem dataclass (Blame, Commit) as its class and its fields."""
    kind = type(value)
    return [f"{kind.__module__}.{kind.__qualname__}", names.normal(value.to_dict())]


def chain(commits: list[Any]) -> list[Any]:
    """A linear history newest first, by its parent links: mnem's ``log`` orders by time, and
    commits made within one millisecond come in either order."""
    parents = {parent for commit in commits for parent in commit.parents}
    by_id = {commit.id: commit for commit in commits}
    (head,) = [commit for commit in commits if commit.id not in parents]
    ordered = [head]
    while ordered[-1].parents and ordered[-1].parents[0] in by_id:
        ordered.append(by_id[ordered[-1].parents[0]])
    assert len(ordered) == len(commits)
    return ordered


def outcome(names: Names, action: Any) -> Any:
    """What an action answered, or the error it raised (class and text)."""
    try:
        return ["ok", action()]
    except Exception as exc:
        return ["raised", type(exc).__name__, names.name(str(exc))]


def body(store: Any) -> list[Any]:
    """The operations a LangGraph application runs on a store, with what each answered."""
    names = Names()
    since = datetime.now(UTC)  # a timestamp from here on is "now"
    seen: list[Any] = []
    alice, bob = ("memories", "alice"), ("memories", "bob")
    store.put(alice, "k1", {"content": "prefers tea", "topic": "drinks", "_meta": {"source": "c1"}})
    store.put(alice, "k2", {"content": "walks to work", "topic": "travel", "n": 2})
    store.put(bob, "k1", {"content": "likes jazz", "topic": "music", "_meta": {"step": "s4"}})
    store.put(("prefs",), "theme", {"v": "dark", "unicode": "é☕"})
    seen.append(item(names, since, store.get(alice, "k1")))
    seen.append(item(names, since, store.get(alice, "missing")))
    seen.append(item(names, since, store.get(("seed",), "x")))
    searches: list[dict[str, Any]] = [
        {"namespace_prefix": ("memories",)},
        {"namespace_prefix": alice, "filter": {"topic": "drinks"}},
        {"namespace_prefix": ("memories",), "query": "JAZZ"},
        {"namespace_prefix": ("memories",), "limit": 1, "offset": 1},
        {"namespace_prefix": ()},
        {"namespace_prefix": (), "filter": {"value": "bob walks"}},
        {"namespace_prefix": ("memories",), "filter": {"n": 2, "topic": "travel"}},
    ]
    for search in searches:
        prefix = search.pop("namespace_prefix")
        seen.append([item(names, since, found) for found in store.search(prefix, **search)])
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("memories",)))
    seen.append(store.list_namespaces(suffix=("alice",)))
    seen.append(store.list_namespaces(max_depth=1))
    seen.append(store.list_namespaces(limit=1, offset=1))
    store.delete(alice, "k2")
    seen.append(item(names, since, store.get(alice, "k2")))
    seen.append(sdk_object(names, store.why(alice, "k1")))
    seen.append(sdk_object(names, store.why(bob, "k1")))
    seen.append(outcome(names, lambda: store.why(alice, "k2")))
    seen.append([sdk_object(names, commit) for commit in chain(store.history(limit=10))])
    seen.append(store.branch("try"))
    seen.append(store.switch("try"))
    store.put(alice, "guess", {"content": "may move"})
    store.switch("main")
    seen.append(item(names, since, store.get(alice, "guess")))
    seen.append(outcome(names, lambda: store.switch("nosuch")))
    seen.append(outcome(names, lambda: store.put(alice, "when", {"at": datetime.now(UTC)})))

    async def later() -> list[Any]:
        await store.aput(bob, "k2", {"content": "async write"})
        return [
            item(names, since, await store.aget(bob, "k2")),
            [
                item(names, since, f)
                for f in await store.asearch(("memories", "bob"), query="async")
            ],
            await store.alist_namespaces(prefix=("memories",)),
        ]

    seen.append(asyncio.run(later()))
    seen.append([sdk_object(names, commit) for commit in chain(store.history(limit=2))])
    return seen


@pytest.fixture
def copies(tmp_path: Path) -> dict[str, Path]:
    real_sdk()
    original = seed(tmp_path / "seed" / "memory")
    mnem = real_sdk()
    handle = mnem.open(str(original))
    handle.add("seed:x", {"content": "seeded", "k": 1})
    handle.commit("seed 3", author="memsync", time_ms=1_700_000_200_000)
    del handle
    gc.collect()
    made = {}
    for side in ("mnem-langgraph", "memsync", "memsync-daemon"):
        made[side] = tmp_path / side / "memory"
        shutil.copytree(original, made[side])
    return made


def test_memsync_store_answers_as_mnem_langgraph_alone_and_through_the_daemon(
    home: Path, copies: dict[str, Path]
) -> None:
    import mnem_langgraph  # installed by `make mnem-sdk` on top of the SDK (copies: real_sdk())

    from memsync.langgraph import MnemosyneStore

    theirs_store = mnem_langgraph.MnemosyneStore(str(copies["mnem-langgraph"]), author="agent-x")
    theirs = body(theirs_store)
    del theirs_store

    alone = MnemosyneStore(str(copies["memsync"]), author="agent-x")
    assert not alone._client.via_daemon
    ours_alone = body(alone)
    alone.close()

    write_config(home, CONFIG.format(store=copies["memsync-daemon"], home=home))
    daemon = DaemonProcess(home)
    try:
        daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
        served = MnemosyneStore(str(copies["memsync-daemon"]), author="agent-x")
        assert served._client.via_daemon
        ours_served = body(served)
        served.close()
        wait_until(lambda: any("wrote" in line for line in daemon.lines), "the daemon syncing")
        code, _ = daemon.stop()
    finally:
        daemon.kill()
    assert code == 0

    dated = "datetime UTC 1970-01-01T00:00:00.017000+00:00"  # the seeded node's event_time
    assert dated in str(theirs), "no answer compared a node's event time"
    assert dated in str(ours_alone), "memsync's store lost the seeded node's event time"
    assert dated in str(ours_served), "the served store lost the seeded node's event time"
    assert ours_alone == theirs
    assert ours_served == theirs
    raised = [entry[1] for entry in theirs if isinstance(entry, list) and entry[:1] == ["raised"]]
    assert raised == ["InvalidRefError", "InvalidRefError", "TypeError"]  # the errors compared
