"""The Mem0 Platform's history comes along into a new mnem store: ``GET /v1/memories/{id}/history/``
for each memory, through the provider's own request path (its retries, its shared pause on a
429 and its pacer), against the Platform double, which Mem0's own ``MemoryClient.history`` reads.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import httpx

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported

from mem0 import MemoryClient

from memsync.base.secrets import Secret
from memsync.orchestration.migrate import migrate
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mnem.on_demand import OnDemandMnemProvider
from tests.doubles import Fault
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.mnem_sdk import real_sdk

KEY = "m0-history-key-0123456789"
FAST = RetryPolicy(attempts=4, initial_backoff=0.001, max_backoff=0.01, max_elapsed=30.0)


def client(platform: Mem0PlatformDouble) -> MemoryClient:
    http = httpx.Client(transport=platform.transport())
    return MemoryClient(api_key=KEY, host="https://api.mem0.test", client=http)


def add(mem0: MemoryClient, text: str) -> str:
    answer = mem0.add([{"role": "user", "content": text}], user_id="alice", infer=False)
    return str(answer["results"][0]["id"])


def provider(platform: Mem0PlatformDouble, sleeps: list[float]) -> Mem0PlatformProvider:
    return Mem0PlatformProvider(
        "m0p",
        {"user_id": "alice"},
        secret=Secret(KEY, "$MEM0_API_KEY"),
        base_url="https://api.mem0.test",
        transport=platform.transport(),
        retry=FAST,
        sleep=sleeps.append,
    )


def test_mem0s_own_client_reads_a_memorys_history_from_the_double() -> None:
    platform = Mem0PlatformDouble(api_key=KEY)
    mem0 = client(platform)
    memory_id = add(mem0, "likes green tea")
    mem0.update(memory_id, text="likes matcha")
    mem0.delete(memory_id)
    entries = mem0.history(memory_id)  # still answered once the memory is deleted
    assert [e["event"] for e in entries] == ["ADD", "UPDATE", "DELETE"]
    assert [(e["old_memory"], e["new_memory"]) for e in entries] == [
        (None, "likes green tea"),
        ("likes green tea", "likes matcha"),
        ("likes matcha", None),
    ]
    assert {e["user_id"] for e in entries} == {"alice"}


def test_migrate_from_the_platform_brings_the_past_through_the_providers_request_path(
    tmp_path: Path,
) -> None:
    platform = Mem0PlatformDouble(api_key=KEY)
    mem0 = client(platform)
    tea = add(mem0, "likes green tea")
    gone = add(mem0, "works at Initech")
    add(mem0, "lives in Lisbon")
    sleeps: list[float] = []
    with provider(platform, sleeps) as source:
        seen = [r for p in source.listing().pages() for r in p.records if r.id == gone]
    mem0.update(tea, text="likes matcha")
    mem0.delete(gone)
    platform.faults.inject(Fault.error(429, retry_after="2"), path="/v1/memories/", times=1)
    target = OnDemandMnemProvider(
        "agent", tmp_path / "agent", create=True, config_name="agent", sdk=real_sdk()
    )
    report = migrate(provider(platform, sleeps), target, history=True, gone=seen)
    history = report.history
    assert history is not None and history.written and history.reasons == {}
    assert history.requests == 3 and history.memories == 3 and history.versions == 5
    assert 2.0 in sleeps  # the 429's Retry-After was honoured by the provider's own retries
    asked = [s for s in platform.faults.seen if s.path.endswith("/history/")]
    assert len(asked) == 4  # three memories, one asked again after its 429
    gc.collect()
    store = real_sdk().open(str(tmp_path / "agent"))
    try:
        chain = list(reversed(store.log(first_parent=True)))
        states = [{n.content for n in store.state_at(c.id).values()} for c in chain]
    finally:
        del store
        gc.collect()
    assert any({"likes green tea", "works at Initech"} <= s for s in states)
    assert states[-1] == {"likes matcha", "lives in Lisbon"}


def test_a_memory_the_platform_cannot_tell_the_history_of_keeps_its_current_version(
    tmp_path: Path,
) -> None:
    platform = Mem0PlatformDouble(api_key=KEY)
    mem0 = client(platform)
    ids = [add(mem0, f"fact {n}") for n in range(3)]
    mem0.update(ids[0], text="fact 0, revised")
    platform.faults.inject(Fault.error(500), path=f"/v1/memories/{ids[0]}/history/", times=10)
    target = OnDemandMnemProvider(
        "agent", tmp_path / "agent", create=True, config_name="agent", sdk=real_sdk()
    )
    sleeps: list[Any] = []
    report = migrate(provider(platform, sleeps), target, history=True)
    history = report.history
    assert history is not None and history.written
    assert history.reasons == {"history unreadable": 1} and history.versions == 3
    assert report.imported == 3 and report.ok
