"""``GET /entities`` as the server double answers it, read by ``server_entities``."""

from __future__ import annotations

import httpx
import pytest

from memsync.base.errors import InvalidResponse
from memsync.providers.mem0.server_entities import parse_entities
from tests.doubles.mem0_server_app import Mem0ServerDouble

KEY = {"X-API-Key": "admin"}


def _add(client: httpx.Client, text: str, **scope: str) -> str:
    body = {"messages": [{"role": "user", "content": text}], "infer": False, **scope}
    answer = client.post("/memories", json=body, headers=KEY)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["results"][0]["id"])


def test_entities_count_each_user_and_agent_and_move_on_edit_and_delete() -> None:
    double = Mem0ServerDouble(api_key="admin")
    client = httpx.Client(transport=double.transport(), base_url="http://server")
    first = _add(client, "likes tea", user_id="alice", agent_id="bot")
    _add(client, "likes rain", user_id="alice")
    _add(client, "likes snow", user_id="bob")

    before = {
        (e.type, e.id): e for e in parse_entities("s", client.get("/entities", headers=KEY).json())
    }
    assert {k: e.total_memories for k, e in before.items()} == {
        ("agent", "bot"): 1,
        ("user", "alice"): 2,
        ("user", "bob"): 1,
    }
    assert before[("user", "alice")].scope_key == "user_id"

    client.put(f"/memories/{first}", json={"text": "likes green tea"}, headers=KEY)
    edited = {
        (e.type, e.id): e for e in parse_entities("s", client.get("/entities", headers=KEY).json())
    }
    assert edited[("user", "alice")].updated_at != before[("user", "alice")].updated_at
    assert edited[("user", "bob")] == before[("user", "bob")]

    client.delete(f"/memories/{first}", headers=KEY)
    after = {
        (e.type, e.id): e for e in parse_entities("s", client.get("/entities", headers=KEY).json())
    }
    assert after[("user", "alice")].total_memories == 1
    assert ("agent", "bot") not in after


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"results": []}, "list"),
        ([None], "not an object"),
        ([{"id": None, "type": "user", "total_memories": 1}], "no id"),
        ([{"id": "a", "type": "app", "total_memories": 1}], "type 'app'"),
        ([{"id": "a", "type": "user", "total_memories": None}], "total_memories None"),
    ],
)
def test_an_entities_answer_memsync_cannot_read_is_an_error_naming_the_field(
    body: object, names: str
) -> None:
    with pytest.raises(InvalidResponse, match=names):
        parse_entities("server", body)
