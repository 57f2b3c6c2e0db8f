"""A memory's dates are its own, the same in every store: never the time memsync synced it.

On the real Mem0 library, the real mnem SDK (the active backend) and a PMM backup: the
backup's ``metadata.memsync.updated_at`` is the source's ``updated_at``, and a node an agent
wrote natively in mnem without ``event_time`` gets one ``created_at`` in every target; each of
its versions is as new as the commit that made it.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from memsync.providers.mnem.convert import iso_from_ms
from tests import test_e2e_mnem
from tests.test_e2e_mnem import Agent, backup_items, mem0_items, memsync

mnem = test_e2e_mnem.mnem  # the fixtures, shared
synced_cat = test_e2e_mnem.synced_cat


def test_the_backup_keeps_the_sources_updated_at_not_the_time_of_the_sync(
    synced_cat: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_cat
    in_mem0 = mem0_items(home, "old")["Has a cat called Miso"]
    kept = backup_items(home / "pmm")["Has a cat called Miso"]["metadata"]["memsync"]
    assert kept["updated_at"] == in_mem0["updated_at"]


def test_a_native_mnem_memory_without_event_time_gets_one_created_at_everywhere(
    synced_cat: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_cat
    with Agent(mnem, home / "agent") as agent:
        mnem.agents.remember(agent.store, "plan", "On the Team plan", source="ticket")
        assert agent.store.working_node("plan").event_time is None
        added = agent.store.log(limit=1)[0].time
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0, out
    in_mem0 = mem0_items(home, "old")["On the Team plan"]["created_at"]
    in_backup = backup_items(home / "pmm")["On the Team plan"]["metadata"]["memsync"]
    assert in_mem0 is not None and in_backup["created_at"] == in_mem0
    assert in_backup["updated_at"] == in_backup["created_at"] == iso_from_ms(added)

    # An agent rewrites it: the date stays the one every copy already has.
    with Agent(mnem, home / "agent") as agent:
        mnem.agents.remember(agent.store, "plan", "On the Enterprise plan", source="ticket")
        rewritten_at = agent.store.log(limit=1)[0].time
    code, out = memsync(home, monkeypatch, "sync", "--json")
    assert code == 0 and json.loads(out)["replayed"] == {"update": 2}, out
    assert mem0_items(home, "old")["On the Enterprise plan"]["created_at"] == in_mem0
    rewritten = backup_items(home / "pmm")["On the Enterprise plan"]["metadata"]["memsync"]
    assert rewritten["created_at"] == in_mem0
    assert rewritten["updated_at"] == iso_from_ms(rewritten_at)
