"""The fault table: what a cycle does when one provider misbehaves.

The Mem0 Platform double ("cloud", two-way) fails in one of the ways real services do; the
local active backend and a push backup are healthy. In every row: that provider is marked
(error, partial, refused or busy), the others go on (a memory written locally still reaches
the backup), nothing is deleted anywhere, and the next cycle, with the fault gone, recovers.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memsync.base.secrets import Secret
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.oss import Mem0OssProvider
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore
from tests.contract import list_all
from tests.doubles import Fault
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.engine_helpers import World
from tests.mem0_fixtures import offline_mem0_config

KEY = "m0-fault-table-key-0123456789"
SEEDED = 60
LIST = "/v3/memories/"


class Cloud:
    def __init__(self) -> None:
        self.double = Mem0PlatformDouble(api_key=KEY)
        self.sleeps: list[float] = []

    def provider(self) -> Mem0PlatformProvider:
        return Mem0PlatformProvider(
            "cloud",
            {"user_id": "alice"},
            secret=Secret(KEY, "$MEM0_API_KEY"),
            base_url="https://api.mem0.test",
            transport=self.double.transport(),
            retry=RetryPolicy(attempts=3, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0),
            sleep=self.sleeps.append,
            timeout=2.0,  # generous: only the injected stalls may time out
            page_size=25,
        )


def inject(fault: Fault, times: int = 1000) -> Callable[[Cloud, World], None]:
    return lambda cloud, world: cloud.double.faults.inject(
        fault, method="POST", path=LIST, times=times
    )


def empty_listing(cloud: Cloud, world: World) -> None:
    cloud.saved = dict(cloud.double.memories)  # type: ignore[attr-defined]
    cloud.double.memories.clear()


def skewed_count(cloud: Cloud, world: World) -> None:
    cloud.double.count_skew = 3
    victim = next(iter(cloud.double.memories))
    cloud.saved = {victim: cloud.double.memories.pop(victim)}  # type: ignore[attr-defined]


def busy(cloud: Cloud, world: World) -> None:
    world.providers["local"].faults.busy = True


ROWS = {
    "500 on every listing call": (inject(Fault.error(500)), {"error"}),
    "503 once, then fine": (inject(Fault.error(503), times=1), {"ok"}),
    "429 with Retry-After, once": (inject(Fault.rate_limit("2"), times=1), {"ok"}),
    "429 without Retry-After, always": (inject(Fault.rate_limit(None)), {"error"}),
    "timeouts": (inject(Fault.stall(60)), {"error"}),
    "connection resets": (inject(Fault.reset()), {"error"}),
    "truncated body": (inject(Fault.truncated()), {"error"}),
    "non-JSON body": (inject(Fault.malformed()), {"error"}),
    "listing suddenly empty": (empty_listing, {"refused"}),
    "count disagrees with pages": (skewed_count, {"partial"}),
}


@pytest.fixture
def world(tmp_path: Path) -> tuple[World, Cloud]:
    cloud = Cloud()
    for i in range(SEEDED):
        cloud.double.insert(f"cloud memory {i}", user_id="alice")
    world = World(
        tmp_path,
        {"local": "both", "cloud": "both", "backup": "push"},
        "local",
        client_ids={"backup": True},
    )
    world.providers["cloud"] = cloud.provider()  # type: ignore[assignment]
    first = world.sync(full=True)
    assert first.exit_code == 0, first.as_dict()
    return world, cloud


@pytest.mark.parametrize("row", list(ROWS), ids=list(ROWS))
def test_a_failing_provider_degrades_alone_and_recovers(
    world: tuple[World, Cloud], row: str
) -> None:
    world_, cloud = world
    local: MemoryProvider = world_.providers["local"]  # type: ignore[assignment]
    before = len(local.contents())
    make_fault, states = ROWS[row]
    make_fault(cloud, world_)
    local.app_add("written locally during the fault")
    report = world_.sync(full=True)
    assert report.providers["cloud"].state in states, report.providers["cloud"].as_dict()
    assert len(local.contents()) == before + 1  # nothing deleted from the healthy side
    assert "written locally during the fault" in world_.contents("backup")  # others went on
    # A partial listing syncs what it saw and infers no deletes: a warning, not a failure.
    assert (report.exit_code == 0) == bool(states & {"ok", "partial"})

    cloud.double.faults.clear()
    cloud.double.count_skew = 0
    cloud.double.memories.update(getattr(cloud, "saved", {}))
    recovered = world_.sync(full=True)
    assert recovered.exit_code == 0, recovered.as_dict()
    cloud_texts = sorted(m["memory"] for m in cloud.double.memories.values())
    assert cloud_texts == local.contents() == world_.contents("backup")
    assert len(cloud_texts) == SEEDED + 1


def test_retry_after_is_honoured(world: tuple[World, Cloud]) -> None:
    world_, cloud = world
    inject(Fault.rate_limit("2"), times=1)(cloud, world_)
    world_.sync(full=True)
    assert 2.0 in cloud.sleeps


def test_a_locked_store_is_busy_and_the_rest_goes_on(world: tuple[World, Cloud]) -> None:
    world_, cloud = world
    busy(cloud, world_)
    cloud.double.insert("new in the cloud while local is locked", user_id="alice")
    report = world_.sync(full=True)
    assert report.providers["local"].state == "busy" and report.exit_code == 1
    world_.providers["local"].faults.busy = False  # type: ignore[attr-defined]
    assert world_.sync(full=True).exit_code == 0
    assert "new in the cloud while local is locked" in world_.contents("local")


# --- faults on writes ---------------------------------------------------------------------------
#
# Every HTTP provider type (on its protocol double) and mem0-oss (the real library) as the
# two-way "remote" beside a healthy active "local" and a push "backup". After a clean first
# sync, local adds, edits and deletes memories, so the next cycle writes creates, updates
# and deletes into remote while one of these faults hits remote's writes:
#   - the answer lost after the server acted: a connection reset, or a timeout;
#   - a 5xx after the write;
#   - a 429 in the middle of the batch (the server did nothing);
#   - a stall past the client's timeout (the server did nothing).
# In every case: nothing memsync was not asked to delete goes missing anywhere during the
# faulted cycle, and once the fault is gone every provider ends with exactly the user's
# memories (no duplicate, no loss) and the next cycle is quiet.

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
TIMEOUT = 2.0  # the client's timeout in the timeout and stall rows (the double answers at once)


class Remote:
    """One provider type under write faults: how to build it, inject a fault, read it."""

    name = ""

    def provider(self) -> Any:
        raise NotImplementedError

    def inject(self, fault: Fault, nth: tuple[int, ...]) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def texts(self) -> list[str]:
        return super_texts(self.provider())

    def fired(self) -> bool:
        """Whether a planned fault hit a write (the writes of a cycle: 4 creates, 2 updates,
        2 deletes, in that order; the Mem0 Platform batches its updates and its deletes)."""
        raise NotImplementedError


def super_texts(provider: Any) -> list[str]:
    records, _ = list_all(provider)
    return sorted(r.content for r in records)


class HttpRemote(Remote):
    def __init__(self, double: Any, make: Callable[..., Any], reads: tuple[str, ...] = ()) -> None:
        self.double, self.make, self.reads = double, make, reads

    def provider(self) -> Any:
        return self.make(self.double)

    def inject(self, fault: Fault, nth: tuple[int, ...]) -> None:
        """Fault the nth write requests (1-based) the double receives from now on."""
        count = itertools.count(1)

        def is_targeted_write(method: str, path: str) -> bool:
            if method not in WRITE_METHODS or path in self.reads:
                return False
            return next(count) in nth

        self.planned = len(nth)
        self.double.faults.inject(fault, times=len(nth), match=is_targeted_write)

    def clear(self) -> None:
        self.double.faults.clear()

    def fired(self) -> bool:
        return all(plan.remaining < self.planned for plan in self.double.faults.plans)


class Mem0OssRemote(Remote):
    """The Mem0 library itself misbehaves: its add/update/delete fail before or after acting."""

    name = "mem0-oss"

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from mem0.memory.main import Memory

        self.tmp, self.monkeypatch, self.memory_class = tmp, monkeypatch, Memory
        self.plan: tuple[Fault, tuple[int, ...]] | None = None
        self.count = itertools.count(1)
        for method in ("add", "update", "delete"):
            self._wrap(method, getattr(Memory, method))

    def _wrap(self, method: str, real: Callable[..., Any]) -> None:
        remote = self

        def faulty(memory: Any, *args: Any, **kwargs: Any) -> Any:
            fault = remote._take()
            if fault is None:
                return real(memory, *args, **kwargs)
            if fault.after_acting:
                real(memory, *args, **kwargs)  # done; the caller never hears of it
                raise OSError("connection to the vector store reset after the write")
            raise sqlite3.OperationalError("database is locked")  # nothing done

        self.monkeypatch.setattr(self.memory_class, method, faulty)

    def _take(self) -> Fault | None:
        if self.plan is None:
            return None
        fault, nth = self.plan
        return fault if next(self.count) in nth else None

    def provider(self) -> Any:
        return Mem0OssProvider(
            "remote",
            {"user_id": "alice"},
            mem0_config=offline_mem0_config(self.tmp / "store"),
            embedder="hash",
            mem0_dir=self.tmp / "mem0",
        )

    def texts(self) -> list[str]:
        provider = self.provider()
        provider.open()
        try:
            return super_texts(provider)
        finally:
            provider.close()

    def fired(self) -> bool:
        return self.plan is not None and next(self.count) > min(self.plan[1])

    def inject(self, fault: Fault, nth: tuple[int, ...]) -> None:
        self.plan, self.count = (fault, nth), itertools.count(1)

    def clear(self) -> None:
        self.plan = None


def _mem0_server(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Remote:
    from memsync.providers.mem0.server import Mem0ServerProvider
    from tests.doubles.mem0_server_app import Mem0ServerDouble

    def make(double: Any) -> Any:
        return Mem0ServerProvider(
            "remote",
            "https://mem0.test",
            {"user_id": "alice"},
            secret=Secret(KEY, "$MEM0_SERVER_KEY"),
            transport=double.transport(),
            retry=WRITE_RETRY,
            sleep=lambda s: None,
            timeout=TIMEOUT,
        )

    remote = HttpRemote(Mem0ServerDouble(api_key=KEY), make)
    remote.name = "mem0-server"
    return remote


def _mem0_platform(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Remote:
    def make(double: Any) -> Any:
        return Mem0PlatformProvider(
            "remote",
            {"user_id": "alice"},
            secret=Secret(KEY, "$MEM0_API_KEY"),
            base_url="https://api.mem0.test",
            transport=double.transport(),
            retry=WRITE_RETRY,
            sleep=lambda s: None,
            timeout=TIMEOUT,
            page_size=25,
        )

    remote = HttpRemote(Mem0PlatformDouble(api_key=KEY), make, reads=(LIST,))
    remote.name = "mem0-platform"
    return remote


def _hindsight(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Remote:
    from memsync.providers.hindsight.provider import HindsightProvider
    from tests.doubles.hindsight_app import HindsightDouble

    def make(double: Any) -> Any:
        return HindsightProvider(
            "remote",
            "http://127.0.0.1:8888",
            bank="alice",
            transport=double.transport(),
            retry=WRITE_RETRY,
            sleep=lambda s: None,
            timeout=TIMEOUT,
        )

    remote = HttpRemote(HindsightDouble(), make)
    remote.name = "hindsight"
    return remote


def _cognee(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Remote:
    from memsync.providers.cognee.provider import CogneeProvider
    from tests.doubles.cognee_app import CogneeDouble

    def make(double: Any) -> Any:
        return CogneeProvider(
            "remote",
            "http://127.0.0.1:8000",
            dataset="alice",
            transport=double.transport(),
            retry=WRITE_RETRY,
            sleep=lambda s: None,
            timeout=TIMEOUT,
        )

    remote = HttpRemote(CogneeDouble(), make)
    remote.name = "cognee"
    return remote


WRITE_RETRY = RetryPolicy(attempts=3, initial_backoff=0.001, max_backoff=0.01, max_elapsed=30.0)
REMOTES = {
    "mem0-server": _mem0_server,
    "mem0-platform": _mem0_platform,
    "hindsight": _hindsight,
    "cognee": _cognee,
    "mem0-oss": lambda tmp, monkeypatch: Mem0OssRemote(tmp, monkeypatch),
}
# fault, and which write requests of the cycle it hits (1-based)
WRITE_FAULTS = {
    "reset after the write": (Fault.reset(after_acting=True), (1, 5, 7)),
    "timeout after the write": (Fault.stall(3 * TIMEOUT, after_acting=True), (3, 5, 7)),
    "5xx after the write": (Fault.error(502, after_acting=True), (2, 6, 8)),
    "429 mid-batch": (Fault.rate_limit("1"), (4,)),
    "stall": (Fault.stall(3 * TIMEOUT), (2,)),
}
LIBRARY_FAULTS = ("reset after the write", "429 mid-batch")  # mem0-oss: fails after / before


def _write_fault_cases() -> list[Any]:
    cases = []
    for remote in REMOTES:
        for row in WRITE_FAULTS:
            if remote == "mem0-oss" and row not in LIBRARY_FAULTS:
                continue
            cases.append(pytest.param(remote, row, id=f"{remote}: {row}"))
    return cases


@pytest.mark.parametrize(("remote_type", "row"), _write_fault_cases())
def test_a_write_fault_neither_duplicates_nor_loses_nor_deletes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, remote_type: str, row: str
) -> None:
    remote = REMOTES[remote_type](tmp_path, monkeypatch)
    world = World(
        tmp_path,
        {"local": "both", "remote": "both", "backup": "push"},
        "local",
        client_ids={"backup": True},
    )
    world.providers["remote"] = remote.provider()  # type: ignore[assignment]
    local: MemoryProvider = world.providers["local"]  # type: ignore[assignment]
    ids = {f"memory {i}": local.app_add(f"memory {i}") for i in range(10)}
    first = world.sync(full=True)
    assert first.exit_code == 0, first.as_dict()
    assert remote.texts() == local.contents() == world.contents("backup")

    for i in range(10, 14):
        local.app_add(f"memory {i}")
    local.app_edit(ids["memory 1"], "memory 1, edited")
    local.app_edit(ids["memory 2"], "memory 2, edited")
    local.delete(ids["memory 3"])
    local.delete(ids["memory 4"])
    expected = local.contents()
    untouched = [t for t in expected if "edited" not in t and int(t.split()[1]) < 10]

    fault, nth = WRITE_FAULTS[row]
    remote.inject(fault, nth)
    faulted = world.sync(full=True)
    assert remote.fired(), f"the fault never hit a write: {faulted.as_dict()}"
    remote.clear()
    for name, texts in (("local", local.contents()), ("backup", world.contents("backup"))):
        assert texts == expected, (name, faulted.as_dict())  # the healthy ones went on
    during = remote.texts()
    assert set(untouched) <= set(during), during  # no memory was lost or deleted by the fault
    assert len(during) == len(set(during)), during  # and none was written twice

    world.sync(full=True)  # the fault gone: retried writes, lost answers recognised
    for _ in range(3):  # failed writes back off; let their retry time come
        with StagingStore.open(world.db_path) as store:
            store.conn.execute("UPDATE outbox SET next_attempt_at = NULL")
        if world.sync(full=True, retry_dead=True).planned_total == 0:
            break
    assert remote.texts() == expected == local.contents() == world.contents("backup")
    quiet = world.sync(full=True)
    assert quiet.planned_total == 0 and quiet.exit_code == 0, quiet.as_dict()
