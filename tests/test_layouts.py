"""Layouts: how a memory is a mnem node, both ways, on the real SDK's nodes.

What an agent on either side would notice: a memory-shaped LangGraph value reaches Mem0 as
its text with its keys as metadata, and anything memsync writes back has the shape, ``kind``
and ``_meta`` it had; text that looks like JSON stays text; a value that is not a memory is
carried whole; namespaces are where LangMem looks, and a user id that cannot be a namespace
segment is refused, never written elsewhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memsync.base.errors import ConfigError
from memsync.base.records import Outgoing, Record
from memsync.base.scopes import HostileScope, Scope
from memsync.config import parse_config
from memsync.providers.mnem.convert import memsync_note, node_spec, record_from_node
from memsync.providers.mnem.layouts import MEM0, LangGraphLayout, read_value
from tests.mnem_sdk import real_sdk

ALICE = Scope.of({"user_id": "alice"})
MEMORIES = LangGraphLayout.of(("memories", "{user_id}"), "content").bound(ALICE, provider="agents")
MANAGER = LangGraphLayout.of(("memories", "{user_id}"), "kind").bound(ALICE, provider="agents")
MEM0_ID = "9f1c7a52-6d2b-4f0e-9a31-0c8e4b2d7f11"


def node(node_id: str, content: Any, **provenance: str | None) -> Any:
    sdk = real_sdk()
    return sdk.MemoryNode(
        id=node_id,
        content=content,
        content_kind="note",
        provenance=sdk.Provenance(**provenance),
        event_time=None,
    )


def read(node_id: str, content: Any, layout: Any = MEMORIES, **provenance: str | None) -> Record:
    record = record_from_node(node(node_id, content, **provenance), "alice", layout)
    assert isinstance(record, Record)
    return record


def written(item: Outgoing, layout: Any = MEMORIES, node_id: str | None = None) -> Any:
    """The node memsync writes for ITEM, as the SDK holds it."""
    return node_spec(item, node_id=node_id, layout=layout).as_node(real_sdk())


def outgoing(record: Record, origin: str, **changes: Any) -> Outgoing:
    item = Outgoing.from_record(record, origin)
    for key, value in changes.items():
        setattr(item, key, value)
    return item


# --- reading ---------------------------------------------------------------------------------


def test_a_langmem_tool_value_is_its_text_with_its_keys_as_metadata_and_meta_as_provenance() -> (
    None
):
    record = read(
        "memories:alice:k1",
        {"content": "prefers tea", "topic": "drinks", "_meta": {"source": "agent-x", "step": "3"}},
        source="agent-x",
        agent_step="3",
    )
    assert record.content == "prefers tea"
    assert record.metadata == {"topic": "drinks"}
    assert record.provenance["source"] == "agent-x"
    assert record.provenance["agent_step"] == "3"
    assert record.detached  # an agent's own node: no memsync note


@pytest.mark.parametrize("kind", ["Memory", "Note"])  # LangMem's default schema, and one's own
def test_the_store_managers_value_is_its_text_and_keeps_its_kind(kind: str) -> None:
    value = {"kind": kind, "content": {"content": "works nights"}, "_meta": {"team": "ops"}}
    record = read("memories:alice:p1", value)
    assert record.content == "works nights"
    assert record.metadata == {}
    back = written(outgoing(record, "mnem:memories:alice:p1", content="works days"))
    assert back.content["kind"] == kind
    assert back.content["content"] == {"content": "works days"}
    assert back.content["_meta"]["team"] == "ops"  # _meta's own keys kept


@pytest.mark.parametrize(
    "value",
    [
        {"tier": "enterprise", "seats": 40},  # a LangGraph app's own record
        {"content": 42},  # content that is not text
        {"content": "x", "_meta": "not a dict"},
        {"kind": "UserProfile", "content": {"name": "Al", "age": 60}},  # a custom schema
        [1, 2, 3],
    ],
)
def test_a_value_that_is_not_a_memory_is_carried_whole_and_comes_back_as_it_was(
    value: Any,
) -> None:
    record = read("memories:alice:v", value)
    assert record.content == json.dumps(value, sort_keys=True, separators=(",", ":"))
    assert record.provenance["mnem_content"] == "json"
    assert written(outgoing(record, "mnem:memories:alice:v")).content == value


def test_plain_text_in_a_langgraph_store_stays_plain_text() -> None:
    record = read("memories:alice:t", "prefers tea")  # mnem-mcp's remember, say
    back = written(outgoing(record, "mnem:memories:alice:t", content="prefers coffee"))
    assert back.content == "prefers coffee"


# --- writing -----------------------------------------------------------------------------------


def test_a_mem0_memory_becomes_a_langgraph_item_at_its_id_in_the_users_namespace() -> None:
    item = Outgoing(
        origin=f"mem0:{MEM0_ID}",
        content="prefers tea",
        metadata={"topic": "drinks", "legs": 2},
        created_at="2021-06-01T09:30:00.123456-07:00",
        provenance={"source": "bot-7", "user_id": "alice", "role": "user"},
    )
    made = written(item)
    assert made.id == f"memories:alice:{MEM0_ID}"
    assert made.content["content"] == "prefers tea"
    assert made.content["topic"] == "drinks" and made.content["legs"] == 2
    meta = made.content["_meta"]
    assert meta["source"] == "bot-7"
    assert made.provenance.source == "bot-7"  # what mnem-langgraph's put would lift
    assert made.provenance.note == meta["note"]
    assert json.loads(meta["note"])["origin"] == f"mem0:{MEM0_ID}"
    back = read(made.id, made.content, **_provenance(made))
    assert back.content == "prefers tea"
    assert back.metadata == item.metadata
    assert back.created_at == item.created_at
    assert back.origin == item.origin
    assert not back.detached


def test_metadata_keys_a_value_reserves_for_itself_travel_in_the_note() -> None:
    item = Outgoing(
        origin=f"mem0:{MEM0_ID}",
        content="prefers tea",
        metadata={"content": "a user key", "_meta": {"x": 1}, "kind": "k", "topic": "drinks"},
    )
    for layout in (MEMORIES, MANAGER):
        made = written(item, layout)
        back = read(made.id, made.content, layout, **_provenance(made))
        assert back.content == "prefers tea"
        assert back.metadata == item.metadata


def test_the_configured_shape_is_what_a_new_memory_gets() -> None:
    item = Outgoing(origin=f"mem0:{MEM0_ID}", content="prefers tea")
    assert written(item, MEM0).content == "prefers tea"
    assert written(item, MEMORIES).content["content"] == "prefers tea"
    assert written(item, MANAGER).content["kind"] == "Memory"
    assert written(item, MANAGER).content["content"] == {"content": "prefers tea"}
    assert written(item, MEM0).id == f"mem0:{MEM0_ID}"


@pytest.mark.parametrize("layout", [MEM0, MEMORIES])
def test_text_that_parses_as_json_stays_text(layout: Any) -> None:
    for text in ("42", '{"a": 1}', "null", "[1]"):
        made = written(Outgoing(origin=f"mem0:{MEM0_ID}", content=text), layout)
        assert read_value(made.content).text == text
        assert read(made.id, made.content, layout, **_provenance(made)).content == text


def test_a_carried_value_edited_into_plain_text_becomes_a_memory_of_that_text() -> None:
    record = read("memories:alice:plan", {"tier": "enterprise"})
    edited = outgoing(record, "mnem:memories:alice:plan", content="enterprise, 40 seats")
    assert written(edited).content["content"] == "enterprise, 40 seats"
    assert written(edited, MEM0, node_id="plan").content == "enterprise, 40 seats"


def test_a_note_inside_meta_is_found_when_provenance_lost_it() -> None:
    made = written(Outgoing(origin=f"mem0:{MEM0_ID}", content="prefers tea"))
    bare = node(made.id, made.content)  # Store.add with the value but no provenance
    assert memsync_note(bare) is not None
    assert read(made.id, made.content).origin == f"mem0:{MEM0_ID}"


def _provenance(made: Any) -> dict[str, str | None]:
    fields = ("agent_step", "observation", "tool_call", "source", "note")
    return {name: getattr(made.provenance, name) for name in fields}


# --- places ------------------------------------------------------------------------------------


def test_keys_never_hold_the_namespace_separator_and_stay_stable() -> None:
    assert MEMORIES.node_id(f"mem0:{MEM0_ID}") == f"memories:alice:{MEM0_ID}"
    pmm = MEMORIES.node_id("pmm:erin:1")
    assert pmm.startswith("memories:alice:") and pmm.count(":") == 2
    assert MEMORIES.node_id("pmm:erin:1") == pmm
    assert MEMORIES.node_id("mnem:memories:alice:k1") == "memories:alice:k1"
    assert MEMORIES.node_id("mnem:profile").count(":") == 2  # another store's node: a new key


def test_a_node_is_in_its_scopes_namespace_or_outside_every_one() -> None:
    template = LangGraphLayout.of(("memories", "{user_id}"), "content")
    assert template.place("memories:bob:k1") == {"user_id": "bob"}
    assert template.place("memories:bob:profile:k1") is None  # a sub-namespace
    assert template.place("mem0:abc") is None
    assert template.place("memories:bob:") is None
    assert MEMORIES.holds("memories:alice:k1")
    assert not MEMORIES.holds("memories:bob:k1")
    assert not MEMORIES.holds("memories:alice:profile:k1")


@pytest.mark.parametrize("user", ["a:b", "", "tab\tbed"])
def test_a_user_id_that_cannot_be_a_namespace_segment_is_refused(user: str) -> None:
    template = LangGraphLayout.of(("memories", "{user_id}"), "content")
    with pytest.raises(HostileScope, match=r"refused|no user_id"):
        template.bound(Scope((("user_id", user),)), provider="agents")


# --- configuration -------------------------------------------------------------------------------


def _config(mnem: str, scope: str = '{ user_id = "*" }') -> str:
    return f"""
[sync]
active = "mem0"

[providers.mem0]
type = "mem0-oss"
scope = {scope}

[providers.agents]
type = "mnem"
{mnem}
"""


def test_one_store_holds_every_scope_when_its_namespace_names_the_wildcard_keys() -> None:
    config = parse_config(
        _config(
            'path = "/x"\nlayout = { type = "langgraph", namespace = ["memories", "{user_id}"] }'
        )
    )
    assert config.providers["agents"].layout.namespace == ("memories", "{user_id}")  # type: ignore[union-attr]
    assert parse_config(_config('path = "/x"\nlayout = "langgraph"')).providers["agents"]


@pytest.mark.parametrize(
    ("mnem", "scope", "says"),
    [
        ('path = "/x"\nlayout = "mem0"', '{ user_id = "*" }', "holds one scope"),
        (
            'path = "/x"\nlayout = { type = "langgraph", namespace = ["memories", "{user_id}"] }',
            '{ user_id = "alice" }',
            "no Mem0 provider has a wildcard",
        ),
        (
            'path = "/x/{user_id}"\nlayout = { type = "langgraph", namespace = ["m", "{user_id}"] }',
            '{ user_id = "*" }',
            "not in both",
        ),
        (
            'path = "/x"\nlayout = { type = "langgraph", namespace = ["m", "{agent_id}"] }',
            '{ user_id = "*" }',
            "exactly the wildcard keys",
        ),
        ('path = "/x"\nlayout = "langmem"', '{ user_id = "*" }', "unknown layout"),
        (
            'path = "/x"\nlayout = { type = "langgraph", namespace = ["a:b", "{user_id}"] }',
            '{ user_id = "*" }',
            "contains ':'",
        ),
    ],
)
def test_a_layout_that_cannot_place_memories_is_refused_with_one_line(
    mnem: str, scope: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=says) as raised:
        parse_config(_config(mnem, scope))
    assert "\n" not in str(raised.value)
