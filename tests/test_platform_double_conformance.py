"""Mem0's own client, ``mem0.MemoryClient`` (mem0ai 2.2.1), unmodified, against the platform
double: if upstream's client can add, page, read, update, delete and batch through it, the
double speaks the Platform's protocol and memsync's provider tests against it mean something.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import httpx
import pytest

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported

from mem0 import MemoryClient
from mem0.exceptions import MemoryNotFoundError, ValidationError

from tests.doubles.mem0_platform_app import Mem0PlatformDouble

KEY = "m0-conformance-key-0123456789"


@pytest.fixture(params=["replace", "merge"])
def platform(request: pytest.FixtureRequest) -> Mem0PlatformDouble:
    return Mem0PlatformDouble(api_key=KEY, metadata_mode=request.param)


@pytest.fixture
def client(platform: Mem0PlatformDouble) -> MemoryClient:
    http = httpx.Client(transport=platform.transport())
    return MemoryClient(api_key=KEY, host="https://api.mem0.test", client=http)


def add(client: MemoryClient, text: str, **kwargs: Any) -> str:
    answer = client.add([{"role": "user", "content": text}], user_id="alice", infer=False, **kwargs)
    assert isinstance(answer, dict), answer  # an object with results, not a bare list
    (added,) = answer["results"]
    assert added["event"] == "ADD" and added["memory"] == text
    return str(added["id"])


def test_the_client_validates_its_key_against_ping(client: MemoryClient) -> None:
    assert (client.org_id, client.project_id) == ("org_test", "proj_test")


def test_a_wrong_key_is_refused_at_construction(platform: Mem0PlatformDouble) -> None:
    http = httpx.Client(transport=platform.transport())
    with pytest.raises(ValueError, match="401"):
        MemoryClient(api_key="wrong", host="https://api.mem0.test", client=http)


def test_add_then_get_returns_the_memory_with_its_session_id(client: MemoryClient) -> None:
    memory_id = add(client, "likes green tea", metadata={"team": "a"}, run_id="chat-1")
    held = client.get(memory_id)
    assert held["id"] == memory_id and held["memory"] == "likes green tea"
    assert held["metadata"] == {"team": "a"} and held["session_id"] == "chat-1"
    assert "run_id" not in held


def test_get_all_pages_through_v3_with_counts(client: MemoryClient) -> None:
    made = {add(client, f"memory {i}") for i in range(7)}
    seen: list[str] = []
    page = 1
    while True:
        answer = client.get_all(filters={"user_id": "alice"}, page=page, page_size=3)
        assert answer["count"] == 7
        seen.extend(r["id"] for r in answer["results"])
        if not answer["next"]:
            break
        page += 1
    assert page == 3 and sorted(seen) == sorted(made)


def test_update_and_delete_by_id(client: MemoryClient, platform: Mem0PlatformDouble) -> None:
    memory_id = add(client, "works at ACME", metadata={"team": "a"})
    updated = client.update(memory_id, text="works at Globex", metadata={"floor": 3})
    assert updated["memory"] == "works at Globex"
    expected = {"floor": 3} if platform.metadata_mode == "replace" else {"team": "a", "floor": 3}
    assert client.get(memory_id)["metadata"] == expected
    client.delete(memory_id)
    with pytest.raises(MemoryNotFoundError):
        client.get(memory_id)


def test_batch_update_and_batch_delete(client: MemoryClient) -> None:
    ids = [add(client, f"note {i}") for i in range(3)]
    client.batch_update([{"memory_id": i, "text": f"{i} v2"} for i in ids])
    assert [client.get(i)["memory"] for i in ids] == [f"{i} v2" for i in ids]
    client.batch_delete([{"memory_id": i} for i in ids])
    assert client.get_all(filters={"user_id": "alice"})["count"] == 0


def test_a_missing_memory_is_not_found_and_a_malformed_id_is_a_bad_request(
    client: MemoryClient, platform: Mem0PlatformDouble
) -> None:
    with pytest.raises(MemoryNotFoundError):
        client.get(str(uuid.uuid4()))
    with pytest.raises(ValidationError):
        client.get("not-a-uuid")
    assert platform.faults.seen[-1].path == "/v1/memories/not-a-uuid/"


def test_errors_come_as_an_error_object(client: MemoryClient, platform: Mem0PlatformDouble) -> None:
    client.get_all(filters={"user_id": "alice"})
    response = httpx.Client(transport=platform.transport()).get(
        "https://api.mem0.test/v1/memories/not-a-uuid/", headers={"Authorization": f"Token {KEY}"}
    )
    assert response.status_code == 400 and set(response.json()) == {"error"}


def test_the_official_client_sends_no_org_or_project(
    client: MemoryClient, platform: Mem0PlatformDouble
) -> None:
    add(client, "one")
    client.get_all(filters={"user_id": "alice"})
    for seen in platform.faults.seen:
        assert "org_id" not in seen.query and "project_id" not in seen.query, seen.path


def test_dream_reads_as_the_docs_table_says(
    client: MemoryClient, platform: Mem0PlatformDouble
) -> None:
    # dream.mdx, "How reads change with Dream": default = active + superseded; latest_only =
    # active; include_merged = all three. The client passes both flags through unmodified.
    active = add(client, "User's dog Rex is a 3-year-old golden retriever")
    merged = add(client, "User has a dog named Rex")
    old = add(client, "User lives in Lisbon")
    new = add(client, "User moved to Berlin")
    platform.merge(merged, into=active)
    platform.supersede(old, by=new)
    pattern = platform.synthesize(
        "User is settling in Berlin with Rex", [active, new], user_id="alice"
    )

    def ids(**flags: Any) -> set[str]:
        answer = client.get_all(filters={"user_id": "alice"}, page=1, page_size=50, **flags)
        assert answer["count"] == len(answer["results"])
        return {r["id"] for r in answer["results"]}

    assert ids() == {active, old, new, pattern}
    assert ids(latest_only=True) == {active, new, pattern}
    assert ids(include_merged=True) == {active, merged, old, new, pattern}
    held = client.get(merged)  # retained, not deleted: a read by id still finds it
    assert (held["lifecycle_state"], held["replaced_by"]) == ("merged", active)
    superseded = client.get(old)
    assert (superseded["lifecycle_state"], superseded["replaced_by"]) == ("superseded", new)
    assert client.get(pattern)["synthesized"] is True
    assert (
        client.get(new)["lifecycle_state"] == "active" and client.get(new)["synthesized"] is False
    )


def test_an_app_is_an_entity_and_a_filter(client: MemoryClient) -> None:
    in_app = add(client, "prefers dark mode", app_id="web")
    add(client, "no app")
    answer = client.get_all(filters={"AND": [{"user_id": "alice"}, {"app_id": "web"}]})
    assert [r["id"] for r in answer["results"]] == [in_app]
    assert client.get(in_app)["app_id"] == "web"
    assert ("app", "web") in {(e["type"], e["name"]) for e in client.users()["results"]}
