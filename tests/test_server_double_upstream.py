"""The Mem0 server double answers as upstream's server does (mem0 8d5b786, run offline here:
``docs/mem0-server.md`` lists what was seen). Each test is one observed behaviour, asked of
the double with a bare HTTP client, the way the upstream server was asked.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from tests.doubles.mem0_server_app import Mem0ServerDouble

ADMIN = {"X-API-Key": "admin-key-0123456789abcdef"}


@pytest.fixture
def double() -> Mem0ServerDouble:
    return Mem0ServerDouble(api_key=ADMIN["X-API-Key"], user_keys={"m0sk_member": "member"})


@pytest.fixture
def client(double: Mem0ServerDouble) -> httpx.Client:
    return httpx.Client(transport=double.transport(), base_url="http://server")


def add(client: httpx.Client, *texts: str, **fields: Any) -> list[str]:
    body = {
        "messages": [{"role": "user", "content": t} for t in texts],
        "infer": False,
        **fields,
    }
    answer = client.post("/memories", json=body, headers=ADMIN)
    assert answer.status_code == 200, answer.text
    return [r["id"] for r in answer.json()["results"]]


# GET /memories ------------------------------------------------------------------------------


def test_top_k_defaults_to_20_and_0_still_returns_one_row(client: httpx.Client) -> None:
    add(client, *[f"list memory number {i}" for i in range(25)], user_id="u")
    listed = client.get("/memories", params={"user_id": "u"}, headers=ADMIN).json()["results"]
    assert len(listed) == 20
    one = client.get("/memories", params={"user_id": "u", "top_k": 0}, headers=ADMIN).json()
    assert len(one["results"]) == 1  # mem0 checks the limit after the append
    none = client.get(
        "/memories", params={"user_id": "u", "top_k": 0, "show_expired": "true"}, headers=ADMIN
    ).json()
    assert none == {"results": []}  # pgvector's LIMIT 0


@pytest.mark.parametrize(
    ("params", "error"),
    [
        (
            {"top_k": "1001"},
            {
                "type": "less_than_equal",
                "loc": ["query", "top_k"],
                "msg": "Input should be less than or equal to 1000",
                "input": "1001",
                "ctx": {"le": 1000},
            },
        ),
        (
            {"top_k": "-1"},
            {
                "type": "greater_than_equal",
                "loc": ["query", "top_k"],
                "msg": "Input should be greater than or equal to 0",
                "input": "-1",
                "ctx": {"ge": 0},
            },
        ),
        (
            {"top_k": "abc"},
            {
                "type": "int_parsing",
                "loc": ["query", "top_k"],
                "msg": "Input should be a valid integer, unable to parse string as an integer",
                "input": "abc",
            },
        ),
        (
            {"show_expired": "maybe"},
            {
                "type": "bool_parsing",
                "loc": ["query", "show_expired"],
                "msg": "Input should be a valid boolean, unable to interpret input",
                "input": "maybe",
            },
        ),
    ],
)
def test_query_validation_answers_fastapis_422_body(
    client: httpx.Client, params: dict[str, str], error: dict[str, Any]
) -> None:
    for scope in ({"user_id": "u"}, {}):  # scoped and the admin listing alike
        answer = client.get("/memories", params={**scope, **params}, headers=ADMIN)
        assert answer.status_code == 422
        assert answer.json() == {"detail": [error]}


def test_scoped_rows_keep_metadata_null_and_admin_rows_carry_text_lemmatized(
    client: httpx.Client,
) -> None:
    add(client, "no metadata here", user_id="u")
    add(client, "with metadata", user_id="u", metadata={"k": "v", "n": 1})
    rows = client.get("/memories", params={"user_id": "u"}, headers=ADMIN).json()["results"]
    by_text = {r["memory"]: r for r in rows}
    assert by_text["no metadata here"]["metadata"] is None
    assert by_text["with metadata"]["metadata"] == {"k": "v", "n": 1}
    assert set(by_text["no metadata here"]) == {
        "id",
        "memory",
        "hash",
        "metadata",
        "created_at",
        "updated_at",
        "user_id",
        "role",
    }
    admin = client.get("/memories", headers=ADMIN).json()["results"]
    row = next(r for r in admin if r["memory"] == "no metadata here")
    assert row["metadata"] == {"role": "user", "text_lemmatized": "no metadata here"}
    assert (row["agent_id"], row["run_id"], row["expiration_date"]) == (None, None, None)


def test_the_admin_listing_is_for_admins_and_capped_server_wide(
    double: Mem0ServerDouble, client: httpx.Client
) -> None:
    double.insert_many([f"m{i}" for i in range(600)], user_id="a")
    double.insert_many([f"n{i}" for i in range(600)], user_id="b")
    assert len(client.get("/memories", headers=ADMIN).json()["results"]) == 1000
    refused = client.get("/memories", headers={"X-API-Key": "m0sk_member"})
    assert refused.status_code == 403
    assert refused.json() == {"detail": "Admin role required to list all memories."}
    member = client.get("/memories", params={"user_id": "a"}, headers={"X-API-Key": "m0sk_member"})
    assert member.status_code == 200  # no per-user scoping of memories upstream


def test_a_qdrant_backed_server_answers_null_rows_and_no_entities() -> None:
    double = Mem0ServerDouble(api_key=ADMIN["X-API-Key"], qdrant_list_bug=True)
    double.insert_many(["one", "two", "three"], user_id="u")
    client = httpx.Client(transport=double.transport(), base_url="http://server")
    rows = client.get("/memories", params={"top_k": 1}, headers=ADMIN).json()["results"]
    null = {
        "id": None,
        "memory": None,
        "user_id": None,
        "agent_id": None,
        "run_id": None,
        "hash": None,
        "expiration_date": None,
        "metadata": {},
        "created_at": None,
        "updated_at": None,
    }
    assert rows == [null, null]
    assert client.get("/entities", headers=ADMIN).json() == []
    scoped = client.get("/memories", params={"user_id": "u"}, headers=ADMIN).json()
    assert len(scoped["results"]) == 3  # mem0's own unwrap handles the tuple


# auth ---------------------------------------------------------------------------------------


def test_401_bodies_as_upstream_words_them(client: httpx.Client) -> None:
    wrong = client.get("/memories", params={"user_id": "u"}, headers={"X-API-Key": "wrong"})
    assert (wrong.status_code, wrong.json()) == (401, {"detail": "Invalid API key."})
    assert "www-authenticate" not in wrong.headers
    for headers in ({}, {"X-API-Key": ""}, {"Authorization": "Basic Zm9vOmJhcg=="}):
        missing = client.get("/memories", params={"user_id": "u"}, headers=headers)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert missing.json() == {
            "detail": "Authentication required. Provide a Bearer token or X-API-Key header."
        }
    garbage = client.get(
        "/memories", params={"user_id": "u"}, headers={"Authorization": "Bearer abc.def.ghi"}
    )
    assert garbage.json() == {"detail": "Invalid or expired token."}


def test_bearer_jwts_expire_after_30_minutes_and_refresh_once(
    double: Mem0ServerDouble, client: httpx.Client
) -> None:
    tokens = double.login_tokens()
    claims = json.loads(base64.urlsafe_b64decode(tokens["access_token"].split(".")[1] + "=="))
    assert claims["type"] == "access" and claims["role"] == "admin"
    assert claims["exp"] - double.clock.now() == pytest.approx(1800, abs=2)
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert client.get("/memories", params={"user_id": "u"}, headers=bearer).status_code == 200
    as_access = client.get(
        "/memories",
        params={"user_id": "u"},
        headers={"Authorization": f"Bearer {tokens['refresh_token']}"},
    )
    assert as_access.json() == {"detail": "Invalid token type."}
    double.clock.advance(1801)
    expired = client.get("/memories", params={"user_id": "u"}, headers=bearer)
    assert (expired.status_code, expired.json()) == (401, {"detail": "Invalid or expired token."})
    fresh = client.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert fresh.status_code == 200 and fresh.json()["refresh_token"] != tokens["refresh_token"]
    again = client.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert again.json() == {"detail": "Refresh token is no longer valid."}
    assert client.post("/auth/refresh").json() == {
        "detail": [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
    }


def test_refresh_is_rate_limited_20_a_minute(client: httpx.Client) -> None:
    for _ in range(20):
        assert client.post("/auth/refresh", json={"refresh_token": "x"}).status_code == 401
    limited = client.post("/auth/refresh", json={"refresh_token": "x"})
    assert (limited.status_code, limited.json()) == (
        429,
        {"error": "Rate limit exceeded: 20 per 1 minute"},
    )


# writes -------------------------------------------------------------------------------------


def test_post_drops_a_messages_name_and_skips_system_messages(client: httpx.Client) -> None:
    answer = client.post(
        "/memories",
        json={
            "messages": [
                {"role": "system", "content": "You are helpful"},
                {"role": "user", "content": "my name is Ann", "name": "ann"},
                {"role": "assistant", "content": "hi Ann"},
            ],
            "user_id": "u",
            "infer": False,
        },
        headers=ADMIN,
    )
    assert [(r["memory"], r["actor_id"], r["role"]) for r in answer.json()["results"]] == [
        ("my name is Ann", None, "user"),
        ("hi Ann", None, "assistant"),
    ]


def test_metadata_is_flat_in_the_payload_so_mem0s_own_keys_collide(client: httpx.Client) -> None:
    (memory_id,) = add(
        client,
        "reserved keys test",
        user_id="u",
        metadata={"created_at": "2001-02-03T04:05:06+00:00", "user_id": "other", "k": 1},
    )
    held = client.get(f"/memories/{memory_id}", headers=ADMIN).json()
    assert held["created_at"] == "2001-02-03T04:05:06+00:00"  # back-dated through metadata
    assert held["user_id"] == "u" and held["metadata"] == {"k": 1} and held["score"] is None
    client.put(f"/memories/{memory_id}", json={"metadata": {"role": "r"}}, headers=ADMIN)
    assert client.get(f"/memories/{memory_id}", headers=ADMIN).json()["role"] == "r"


def test_put_and_delete_answer_upstreams_errors(client: httpx.Client) -> None:
    (memory_id,) = add(client, "put base", user_id="u")
    for body in ({}, {"metadata": None}, {"text": None}, {"foo": 1}):
        empty = client.put(f"/memories/{memory_id}", json=body, headers=ADMIN)
        assert (empty.status_code, empty.json()) == (
            400,
            {"detail": "At least one of text, metadata, or expiration_date must be provided."},
        )
    unknown = "00000000-0000-4000-8000-000000000000"
    put = client.put(f"/memories/{unknown}", json={"text": "x"}, headers=ADMIN)
    assert (put.status_code, put.json()["detail"]) == (
        404,
        f"Memory with id {unknown} not found. Please provide a valid 'memory_id'",
    )
    deleted = client.delete(f"/memories/{unknown}", headers=ADMIN)
    assert (deleted.status_code, deleted.json()) == (
        404,
        {"detail": f"Memory with id {unknown} not found"},
    )
    assert client.get(f"/memories/{unknown}", headers=ADMIN).json() is None
    not_uuid = client.delete("/memories/not-a-uuid", headers=ADMIN)
    assert not_uuid.status_code == 502 and not_uuid.json()["code"] == "unknown"


def test_a_write_that_would_run_extraction_is_a_502_from_the_dead_llm(
    double: Mem0ServerDouble, client: httpx.Client
) -> None:
    body = {"messages": [{"role": "user", "content": "I like tea"}], "user_id": "u"}
    answer = client.post("/memories", json=body, headers=ADMIN)
    assert answer.status_code == 502
    assert answer.json()["code"] == "provider_unavailable" and double.extraction_requests == 1


# entities, search, routes ----------------------------------------------------------------


def test_entities_answer_any_valid_key_and_delete_needs_an_admin(client: httpx.Client) -> None:
    add(client, "a", user_id="u", agent_id="bot", run_id="r")
    member = {"X-API-Key": "m0sk_member"}
    entities = client.get("/entities", headers=member).json()
    assert [(e["type"], e["id"], e["total_memories"]) for e in entities] == [
        ("agent", "bot", 1),
        ("run", "r", 1),
        ("user", "u", 1),
    ]
    assert entities[0]["created_at"].endswith("Z")
    refused = client.delete("/entities/user/u", headers=member)
    assert (refused.status_code, refused.json()) == (403, {"detail": "Admin role required."})
    bogus = client.delete("/entities/bogus/x", headers=ADMIN)
    assert bogus.status_code == 422 and bogus.json()["detail"][0]["type"] == "literal_error"
    gone = client.delete("/entities/user/u", headers=ADMIN)
    assert gone.json() == {"message": "Entity deleted"}
    assert client.get("/entities", headers=ADMIN).json() == []  # its agent and run went too


def test_search_lists_a_scope_past_1000_and_refuses_an_empty_query(
    double: Mem0ServerDouble, client: httpx.Client
) -> None:
    double.insert_many([f"bulk memory {i}" for i in range(1_500)], user_id="bulk")
    found = client.post(
        "/search",
        json={"query": "*", "filters": {"user_id": "bulk"}, "top_k": 5_000, "threshold": 0},
        headers=ADMIN,
    ).json()["results"]
    assert len({r["id"] for r in found}) == 1_500 and "score" in found[0]
    empty = client.post(
        "/search", json={"query": " ", "filters": {"user_id": "bulk"}}, headers=ADMIN
    )
    assert (empty.status_code, empty.json()) == (
        400,
        {"detail": "Invalid query: cannot be empty or whitespace-only."},
    )
    no_filters = client.post("/search", json={"query": "tea"}, headers=ADMIN)
    assert no_filters.status_code == 400 and "filters must contain" in no_filters.json()["detail"]


def test_no_trailing_slash_redirects(client: httpx.Client) -> None:
    for method, path in (("GET", "/memories/"), ("POST", "/search/"), ("GET", "/entities/")):
        answer = client.request(method, path, headers=ADMIN)
        assert (answer.status_code, answer.json()) == (404, {"detail": "Not Found"})
    wrong_method = client.get("/search", headers=ADMIN)
    assert (wrong_method.status_code, wrong_method.json()) == (
        405,
        {"detail": "Method Not Allowed"},
    )


def test_an_older_server_has_no_entities_and_lists_nothing_without_ids() -> None:
    double = Mem0ServerDouble(
        api_key=ADMIN["X-API-Key"], has_entities=False, lists_without_ids=False
    )
    client = httpx.Client(transport=double.transport(), base_url="http://server")
    assert client.get("/entities", headers=ADMIN).status_code == 404
    old = client.get("/memories", headers=ADMIN)
    assert (old.status_code, old.json()) == (
        400,
        {"detail": "At least one identifier is required."},
    )
    assert "/entities" not in client.get("/openapi.json").json()["paths"]
