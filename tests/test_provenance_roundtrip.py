"""ADR-0024's provenance survives Mem0 -> mnem -> Mem0 -> mnem on every Mem0 type.

``source`` is Mem0's ``actor_id``, else its ``role``; a source with no Mem0 field (an mnem
agent's "agent-y") travels in memsync's own metadata and stands. ``created_at`` keeps its
instant at every hop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mnem  # a missing SDK is an error: build it with ../shared/mnem-sdk/build.sh
import pytest

from memsync.base.records import Record, parse_instant
from memsync.orchestration.migrate import migrate
from memsync.providers.base import Provider
from memsync.providers.mnem.provider import MnemProvider
from tests.test_expiry import SIDES, LibrarySide, Mem0Side, PlatformSide

CREATED = "2021-06-01T09:30:00-07:00"


def write_with_actor(side: Mem0Side, text: str) -> str:
    """A memory an assistant agent "agent-x" wrote into Mem0 in 2021."""
    if isinstance(side, PlatformSide):
        memory_id = side.double.insert(text, user_id="alice", created_at=parse_instant(CREATED))
        side.double.memories[memory_id].update(actor_id="agent-x", role="assistant")
        return memory_id
    message = {"role": "assistant", "content": text, "name": "agent-x"}

    def add(memory: Any) -> Any:
        return memory.add([message], user_id="alice", infer=False, metadata={"created_at": CREATED})

    answer = side._with(add) if isinstance(side, LibrarySide) else add(side.memory)  # type: ignore[attr-defined]
    return str(answer["results"][0]["id"])


def listed(provider: Provider) -> dict[str, Record]:
    with provider:
        return {r.content: r for page in provider.listing().pages() for r in page.records}


def a_mnem(tmp: Path, name: str) -> MnemProvider:
    mnem.init(str(tmp / name))
    return MnemProvider(name, tmp / name)


@pytest.mark.parametrize("kind", list(SIDES))
def test_source_and_created_at_survive_mem0_mnem_mem0_mnem(kind: str, tmp_path: Path) -> None:
    first, second = SIDES[kind](tmp_path / "a"), SIDES[kind](tmp_path / "b")
    first.provider.name, second.provider.name = "mem0-a", "mem0-b"
    write_with_actor(first, "prefers short answers")
    brain, copy = a_mnem(tmp_path, "brain"), a_mnem(tmp_path, "copy")
    # an mnem agent's own memory, whose source Mem0 has no field for
    store = mnem.open(str(brain.path))
    mnem.agents.remember(store, "note-1", "met Bob in Lisbon", source="agent-y")
    del store
    import gc

    gc.collect()

    hops: list[tuple[Provider, Provider]] = [(first, brain), (brain, second), (second, copy)]
    for source, target in hops:
        report = migrate(getattr(source, "provider", source), getattr(target, "provider", target))
        assert not report.failed, report.failed

    for hop in (brain, second.provider, copy):
        records = listed(hop)
        actor = records["prefers short answers"]
        assert actor.provenance["source"] == "agent-x", (hop.name, actor.provenance)
        assert actor.provenance.get("role") == "assistant", (hop.name, actor.provenance)
        assert parse_instant(actor.created_at) == parse_instant(CREATED), hop.name
        agent = records["met Bob in Lisbon"]
        assert agent.provenance["source"] == "agent-y", (hop.name, agent.provenance)
