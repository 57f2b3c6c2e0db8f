"""mem0-server passes the provider contract against a double backed by a real mem0 Memory, never
asks for LLM extraction, refuses servers that cannot promise that, and survives a bad network.

Set MEMSYNC_MEM0_SERVER_URL (and MEMSYNC_MEM0_SERVER_KEY) to also run the contract against a
real server; it writes under throwaway user ids.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Any

import pytest

from memsync.base.errors import (
    AuthError,
    ConfigError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.records import Outgoing
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.providers import build_provider
from memsync.providers.base import Provider, WriteOp
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from tests.contract import ProviderContract, item, list_all
from tests.doubles import Fault
from tests.doubles.mem0_server_app import Mem0ServerDouble

KEY = "m0sk_do-not-leak-0123456789abcdef"
FAST = RetryPolicy(attempts=3, initial_backoff=0.001, max_backoff=0.01, max_elapsed=5.0)


def make(
    server: Mem0ServerDouble,
    scope: str = "alice",
    *,
    key: str = KEY,
    sleeps: list[float] | None = None,
    **kwargs: Any,
) -> Mem0ServerProvider:
    options: dict[str, Any] = dict(
        secret=Secret(key, "$MEM0_SERVER_KEY"),
        transport=server.transport(),
        retry=FAST,
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
        start_top_k=16,  # so the contract's 130 memories need the top_k loop
    )
    options.update(kwargs)
    provider = Mem0ServerProvider("m0", "https://mem0.test", {"user_id": scope}, **options)
    provider.open()
    return provider


@pytest.fixture
def server() -> Mem0ServerDouble:
    return Mem0ServerDouble(api_key=KEY)


class TestMem0ServerContract(ProviderContract):
    @pytest.fixture
    def factory(self, server: Mem0ServerDouble):  # type: ignore[no-untyped-def]
        self.server = server
        return lambda scope: make(server, scope)

    def insert_empty(self, provider: Provider) -> str:
        assert isinstance(provider, Mem0ServerProvider)
        return self.server.insert_without_content(**provider.scope)


@pytest.mark.integration
@pytest.mark.skipif(
    not os.environ.get("MEMSYNC_MEM0_SERVER_URL"), reason="no real mem0 server configured"
)
class TestMem0ServerContractLive(ProviderContract):
    @pytest.fixture
    def factory(self):  # type: ignore[no-untyped-def]
        run = uuid.uuid4().hex[:8]
        key = os.environ.get("MEMSYNC_MEM0_SERVER_KEY")

        def make_live(scope: str) -> Provider:
            provider = Mem0ServerProvider(
                "live",
                os.environ["MEMSYNC_MEM0_SERVER_URL"],
                {"user_id": f"memsync-test-{run}-{scope}"},
                secret=Secret(key, "$MEMSYNC_MEM0_SERVER_KEY") if key else None,
                auth="api-key" if key else "none",
            )
            provider.open()
            return provider

        return make_live


# never extraction --------------------------------------------------------------------------


def test_creates_send_infer_false_and_never_reach_extraction(server: Mem0ServerDouble) -> None:
    provider = make(server)
    provider.create(item("likes green tea", origin="mnem:1"))
    (sent,) = server.faults.requests("POST", "/memories")
    assert sent.body["infer"] is False
    assert sent.body["user_id"] == "alice"
    assert sent.headers["x-api-key"] == KEY
    assert server.extraction_requests == 0


def test_old_server_without_infer_is_refused_before_any_write() -> None:
    server = Mem0ServerDouble(api_key=KEY, supports_infer=False)
    provider = make(server)
    with pytest.raises(ProviderError, match="infer") as caught:
        provider.create(item("likes green tea"))
    assert "upgrade" in str(caught.value)
    assert server.faults.requests("POST", "/memories") == []
    assert server.extraction_requests == 0
    assert list_all(provider)[0] == []
    assert "writes refused" in provider.check()
    assert "writes with infer:false" in make(Mem0ServerDouble(api_key=KEY)).check()


@pytest.mark.parametrize("supports_infer", [True, False])
def test_without_openapi_a_harmless_probe_decides(supports_infer: bool) -> None:
    server = Mem0ServerDouble(api_key=KEY, supports_infer=supports_infer, openapi=False)
    provider = make(server)
    if supports_infer:
        provider.create(item("probed and written"))
        assert [r.content for r in list_all(provider)[0]] == ["probed and written"]
    else:
        with pytest.raises(ProviderError, match="infer"):
            provider.create(item("never written"))
        assert list_all(provider)[0] == []
    assert server.extraction_requests == 0
    assert len(server.memory.get_all(filters={"user_id": "alice"})["results"]) == (
        1 if supports_infer else 0
    )


# listing completeness ------------------------------------------------------------------------


def test_a_scope_larger_than_the_server_cap_is_read_whole_through_search(
    server: Mem0ServerDouble,
) -> None:
    server.insert_many([f"m{i}" for i in range(1001)], user_id="alice")
    records, listing = list_all(make(server, start_top_k=1000))
    assert len(records) == 1001 and listing.complete
    asked = [(s.method, s.path) for s in server.faults.seen if s.path != "/openapi.json"]
    assert asked == [("GET", "/memories"), ("GET", "/entities"), ("POST", "/search")]


def test_the_top_k_loop_asks_again_until_a_call_comes_back_short(
    server: Mem0ServerDouble,
) -> None:
    for i in range(40):
        server.memory.add([{"role": "user", "content": f"m{i}"}], user_id="alice", infer=False)
    records, listing = list_all(make(server, start_top_k=10))
    assert listing.complete and len(records) == 40
    asked = [int(s.query["top_k"][0]) for s in server.faults.requests("GET", "/memories")]
    assert asked == [10, 40, 160]


def test_a_server_without_top_k_never_yields_a_complete_listing() -> None:
    server = Mem0ServerDouble(api_key=KEY)
    server.memory.add([{"role": "user", "content": "one"}], user_id="alice", infer=False)
    provider = make(server)
    provider._session.set_features(provider.features().__class__(infer=True, top_k=False, how="t"))
    records, listing = list_all(provider)
    assert [r.content for r in records] == ["one"]
    assert not listing.complete and "top_k" in (listing.partial_reason or "")


# metadata and scope ----------------------------------------------------------------------------


def test_update_removes_metadata_keys_although_mem0_merges(server: Mem0ServerDouble) -> None:
    provider = make(server)
    created = provider.create(item("works at ACME", origin="mnem:9", team="a", floor=3))
    outgoing = item("works at ACME", origin="mnem:9", team="b")
    provider.update(created.id, outgoing)
    (record,), _ = list_all(provider)
    assert record.metadata == {"team": "b"}
    assert record.fingerprint == outgoing.fingerprint
    provider.update(created.id, item("works at ACME", origin="mnem:9", team="b", floor=4))
    assert provider.get(created.id).metadata == {"team": "b", "floor": 4}  # type: ignore[union-attr]


def test_memories_of_another_scope_are_neither_read_nor_updated(
    server: Mem0ServerDouble,
) -> None:
    alice, bob = make(server, "alice"), make(server, "bob")
    theirs = bob.create(item("bob's secret"))
    assert alice.get(theirs.id) is None
    with pytest.raises(NotFound):
        alice.update(theirs.id, item("overwritten"))
    assert bob.get(theirs.id).content == "bob's secret"  # type: ignore[union-attr]


def test_bearer_auth_is_sent_as_authorization() -> None:
    server = Mem0ServerDouble(api_key=KEY)
    token = server.login_tokens()["access_token"]
    provider = make(server, key=token, auth="bearer")
    provider.create(item("via jwt"))
    assert server.faults.requests("POST", "/memories")[0].headers["authorization"] == (
        f"Bearer {token}"
    )


# failures ----------------------------------------------------------------------------------


def test_rate_limit_waits_as_long_as_the_server_asks(server: Mem0ServerDouble) -> None:
    sleeps: list[float] = []
    provider = make(server, sleeps=sleeps)
    provider.create(item("before the limit"))
    server.faults.inject(Fault.rate_limit("2"), method="GET", path="/memories", times=1)
    records, listing = list_all(provider)
    assert listing.complete and [r.content for r in records] == ["before the limit"]
    assert sleeps == [2.0]


def test_server_errors_are_retried_then_reported_as_transient(server: Mem0ServerDouble) -> None:
    sleeps: list[float] = []
    provider = make(server, sleeps=sleeps)
    provider.create(item("survives"))
    server.faults.inject(Fault.error(500), method="GET", path="/memories", times=2)
    records, listing = list_all(provider)
    assert listing.complete and len(records) == 1 and len(sleeps) == 2
    server.faults.inject(Fault.error(502), method="GET", path="/memories", times=99)
    with pytest.raises(TransientProviderError, match=r"502.*3 attempts"):
        list_all(provider)


def test_a_create_is_never_sent_twice_after_a_server_error(server: Mem0ServerDouble) -> None:
    provider = make(server)
    provider.features()
    server.faults.inject(Fault.error(500), method="POST", path="/memories", times=1)
    with pytest.raises(TransientProviderError):
        provider.create(item("maybe written"))
    assert len(server.faults.requests("POST", "/memories")) == 1
    server.faults.inject(Fault.rate_limit("0"), method="POST", path="/memories", times=1)
    provider.create(item("written after a 429"))  # a 429 means not acted on: safe to resend
    assert [r.content for r in list_all(provider)[0]] == ["written after a 429"]


def test_timeouts_are_retried_then_reported(server: Mem0ServerDouble) -> None:
    provider = make(server, timeout=2.0)  # generous: the real calls must never time out
    provider.create(item("slow server"))
    server.faults.inject(Fault.stall(60), method="GET", path="/memories", times=1)
    assert list_all(provider)[1].complete
    server.faults.inject(Fault.stall(60), method="GET", path="/memories", times=99)
    with pytest.raises(TransientProviderError, match=r"no answer within 2s"):
        list_all(provider)


def test_malformed_json_is_an_invalid_response(server: Mem0ServerDouble) -> None:
    provider = make(server)
    provider.features()
    server.faults.inject(Fault.malformed(), method="GET", path="/memories", times=99)
    with pytest.raises(InvalidResponse, match="not valid JSON"):
        list_all(provider)


def test_a_refused_key_names_its_variable_and_never_the_key(
    server: Mem0ServerDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "m0sk_wrong-key-that-must-not-leak"
    provider = make(server, key=wrong)
    with pytest.raises(AuthError) as caught:
        list_all(provider)
    message = str(caught.value)
    assert "$MEM0_SERVER_KEY" in message
    assert "Invalid API key." in message  # the server's own reason is kept
    assert wrong not in message and wrong not in repr(caught.value)
    assert wrong not in caplog.text and wrong not in repr(provider)
    assert len(server.faults.requests("GET", "/openapi.json")) == 1  # 401 is not retried


def test_an_expired_bearer_token_says_so_in_one_line_without_the_token() -> None:
    server = Mem0ServerDouble(api_key=KEY)
    token = server.login_tokens()["access_token"]
    provider = make(server, key=token, auth="bearer")
    assert list_all(provider)[1].complete
    provider.close()
    server.clock.advance(30 * 60 + 1)  # upstream's access tokens last 30 minutes
    with pytest.raises(AuthError) as caught:
        list_all(provider)
    message = str(caught.value)
    assert "HTTP 401: Invalid or expired token." in message and "\n" not in message
    assert "$MEM0_SERVER_KEY" in message and token not in message
    assert "refresh_token_file" in message and "api-key" in message


# configuration -----------------------------------------------------------------------------


def _config(base_url: str, extra: str = "") -> str:
    return f"""
[sync]
active = "m0"
[providers.m0]
type = "mem0-server"
base_url = "{base_url}"
scope = {{ user_id = "alice" }}
api_key_env = "MEM0_SERVER_KEY"
{extra}
"""


def test_plain_http_to_a_remote_host_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_SERVER_KEY", KEY)
    with pytest.raises(ConfigError, match="allow_insecure_http"):
        build_provider("m0", parse_config(_config("http://mem0.example.com:8000")))
    for allowed in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
        assert isinstance(build_provider("m0", parse_config(_config(allowed))), Provider)
    insecure = _config("http://mem0.lan:8000", "allow_insecure_http = true")
    assert isinstance(build_provider("m0", parse_config(insecure)), Mem0ServerProvider)


def test_a_configured_key_variable_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEM0_SERVER_KEY", raising=False)
    with pytest.raises(ConfigError, match="MEM0_SERVER_KEY"):
        build_provider("m0", parse_config(_config("https://mem0.example.com")))


def test_auth_without_a_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="api_key_env"):
        Mem0ServerProvider("m0", "https://mem0.example.com", {"user_id": "a"}, auth="api-key")


def test_identity_changes_with_endpoint_and_scope(server: Mem0ServerDouble) -> None:
    a, b = make(server, "alice"), make(server, "bob")
    assert a.identity() != b.identity()
    assert "mem0.test" in a.identity() and KEY not in a.identity()
    outgoing = Outgoing(origin="mnem:x", content="x")
    assert a.scope_key() == "alice" and outgoing.scope_key == ""


# round trips and the server's own behaviours ---------------------------------------------------


def test_a_create_is_one_request_and_an_update_with_a_staged_copy_is_one_put(
    server: Mem0ServerDouble,
) -> None:
    provider = make(server)
    provider.features()
    before = len(server.faults.seen)
    created = provider.create(item("works at ACME", origin="mnem:1", team="a", floor=3))
    assert [(s.method, s.path) for s in server.faults.seen[before:]] == [("POST", "/memories")]
    (staged,), _ = list_all(provider)
    before = len(server.faults.seen)
    outgoing = item("works at Globex", origin="mnem:1", team="b")
    (result,) = provider.write_many(
        [WriteOp("update", "u", item=outgoing, provider_id=created.id, previous=staged)]
    )
    assert result.error is None and result.record is not None
    assert result.record.fingerprint == outgoing.fingerprint
    assert [(s.method, s.path) for s in server.faults.seen[before:]] == [
        ("PUT", f"/memories/{created.id}")
    ]
    (record,), _ = list_all(provider)  # Mem0 merged, yet the removed key is gone
    assert (record.content, record.metadata) == ("works at Globex", {"team": "b"})


def test_a_server_that_ignores_top_k_never_yields_a_complete_listing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = Mem0ServerDouble(api_key=KEY, honours_top_k=False)
    provider = make(server)
    for i in range(3):
        provider.create(item(f"memory {i}"))
    records, listing = list_all(provider)
    assert len(records) == 3
    assert not listing.complete and "top_k" in (listing.partial_reason or "")


def test_a_gateway_502_is_retried_and_its_body_never_crashes_the_message(
    server: Mem0ServerDouble,
) -> None:
    provider = make(server)
    server.faults.inject(Fault.bad_gateway(), method="GET", path="/memories", times=99)
    with pytest.raises(TransientProviderError, match="HTTP 502"):
        list_all(provider)
    assert len(server.faults.requests("GET", "/memories")) == FAST.attempts


def test_writes_run_concurrently_against_a_slow_server(server: Mem0ServerDouble) -> None:
    server.faults.latency = 0.2
    in_flight = {"now": 0, "most": 0}
    lock = threading.Lock()
    inner = server.app

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        with lock:
            in_flight["now"] += 1
            in_flight["most"] = max(in_flight["most"], in_flight["now"])
        try:
            await inner(scope, receive, send)
        finally:
            with lock:
                in_flight["now"] -= 1

    server.app = counting
    provider = make(server, concurrency=8)
    ops = [
        WriteOp("create", f"c{i}", item=item(f"memory {i}", origin=f"mnem:{i}")) for i in range(16)
    ]
    results = list(provider.write_many(ops))
    assert sorted(r.op.key for r in results) == sorted(op.key for op in ops)
    assert all(r.error is None for r in results)
    assert in_flight["most"] > 1  # several requests were on the wire at once
    server.faults.latency = 0.0
    records, _ = list_all(provider)
    assert sorted(r.content for r in records) == sorted(f"memory {i}" for i in range(16))
