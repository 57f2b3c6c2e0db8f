"""The fault table: what a cycle does when one provider misbehaves.

The Mem0 Platform double ("cloud", two-way) fails in one of the ways real services do; the
local active backend and a push backup are healthy. In every row: that provider is marked
(error, partial, refused or busy), the others go on (a memory written locally still reaches
the backup), nothing is deleted anywhere, and the next cycle, with the fault gone, recovers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memsync.providers.http import RetryPolicy
from memsync.providers.mem0_platform import Mem0PlatformProvider
from memsync.providers.memory import MemoryProvider
from memsync.secrets import Secret
from tests.doubles import Fault
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.engine_helpers import World

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
            timeout=0.2,
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
    "timeouts": (inject(Fault.stall(1.0)), {"error"}),
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
