"""The shared HTTP layer: typed errors, retries that are bounded and safe, and no key leaks."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from memsync.base.errors import (
    AuthError,
    ConfigError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.secrets import Secret
from memsync.providers.http.client import HttpClient
from memsync.providers.http.retry import RetryPolicy, parse_retry_after

KEY = "sk-live-do-not-leak-0123456789"
POLICY = RetryPolicy(attempts=4, initial_backoff=0.1, max_backoff=0.4, max_elapsed=60.0)

Handler = Callable[[httpx.Request], httpx.Response]


def client(
    handler: Handler,
    *,
    sleeps: list[float] | None = None,
    auth: str = "api-key",
    secret: Secret | None = None,
    retry: RetryPolicy = POLICY,
) -> HttpClient:
    return HttpClient(
        "svc",
        "https://svc.test",
        secret=secret or Secret(KEY, "$SVC_API_KEY"),
        auth=auth,  # type: ignore[arg-type]
        transport=httpx.MockTransport(handler),
        retry=retry,
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
    )


def scripted(*responses: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    """A handler answering each request with the next response (the last one repeats)."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = responses[min(len(seen), len(responses)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handle, seen


def ok(body: object = None) -> httpx.Response:
    return httpx.Response(200, json=body if body is not None else {"ok": True})


# Retry-After ----------------------------------------------------------------------------------


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0  # already past
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_429_waits_exactly_as_long_as_asked() -> None:
    sleeps: list[float] = []
    date = (datetime.now(UTC) + timedelta(seconds=20)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    handler, seen = scripted(
        httpx.Response(429, headers={"Retry-After": "3"}),
        httpx.Response(429, headers={"Retry-After": date}),
        ok(),
    )
    assert client(handler, sleeps=sleeps).get("/x") == {"ok": True}
    assert len(seen) == 3
    assert sleeps[0] == 3.0 and 15 <= sleeps[1] <= 20


def test_a_retry_after_beyond_the_budget_is_handed_to_the_caller() -> None:
    sleeps: list[float] = []
    handler, seen = scripted(httpx.Response(503, headers={"Retry-After": "900"}))
    with pytest.raises(TransientProviderError) as caught:
        client(handler, sleeps=sleeps).get("/x")
    assert caught.value.retry_after == 900.0
    assert sleeps == [] and len(seen) == 1


# 5xx, timeouts, resets ---------------------------------------------------------------------------


def test_server_errors_back_off_exponentially_with_jitter_then_give_up() -> None:
    sleeps: list[float] = []
    handler, seen = scripted(httpx.Response(500, json={"detail": "boom"}))
    with pytest.raises(TransientProviderError, match=r"HTTP 500\): boom; gave up after 4"):
        client(handler, sleeps=sleeps).get("/x")
    assert len(seen) == 4 and len(sleeps) == 3
    for n, slept in enumerate(sleeps):
        base = min(0.4, 0.1 * 2**n)
        assert base <= slept <= base + 0.1


def test_the_time_budget_bounds_the_retries() -> None:
    sleeps: list[float] = []
    tight = RetryPolicy(attempts=50, initial_backoff=1.0, max_backoff=1.0, max_elapsed=2.5)
    handler, seen = scripted(httpx.Response(502))
    with pytest.raises(TransientProviderError):
        client(handler, sleeps=sleeps, retry=tight).get("/x")
    assert len(seen) < 50 and sum(sleeps) <= 2.5 + 1.0


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ReadTimeout("slow"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ReadError("connection reset by peer"),
    ],
)
def test_timeouts_and_resets_are_retried_for_reads(failure: Exception) -> None:
    handler, seen = scripted(failure, ok())
    assert client(handler).get("/x") == {"ok": True}
    assert len(seen) == 2


def test_a_create_is_not_resent_when_the_server_may_have_acted() -> None:
    for failure in (httpx.Response(500), httpx.ReadTimeout("slow")):
        handler, seen = scripted(failure, ok())
        with pytest.raises(TransientProviderError):
            client(handler).json("POST", "/memories", json={"text": "once"})
        assert len(seen) == 1


def test_a_create_is_resent_when_the_server_surely_did_not_act() -> None:
    for failure in (httpx.Response(429), httpx.ConnectError("refused")):
        handler, seen = scripted(failure, ok())
        assert client(handler).json("POST", "/memories", json={"text": "once"}) == {"ok": True}
        assert len(seen) == 2


def test_a_post_that_only_reads_may_be_declared_idempotent() -> None:
    handler, seen = scripted(httpx.Response(500), ok())
    assert client(handler).json("POST", "/search", json={}, idempotent=True) == {"ok": True}
    assert len(seen) == 2


# status mapping ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_fails_at_once_naming_its_source(status: int) -> None:
    handler, seen = scripted(httpx.Response(status, json={"detail": f"bad key {KEY}"}))
    with pytest.raises(AuthError) as caught:
        client(handler).get("/x")
    assert len(seen) == 1
    assert "$SVC_API_KEY" in str(caught.value) and KEY not in str(caught.value)


def test_a_server_without_a_configured_key_says_how_to_give_one() -> None:
    handler, seen = scripted(httpx.Response(401))
    http = HttpClient(
        "svc", "https://svc.test", auth="none", transport=httpx.MockTransport(handler)
    )
    with pytest.raises(AuthError, match="api_key_env"):
        http.get("/x")
    assert "authorization" not in seen[0].headers and "x-api-key" not in seen[0].headers


def test_404_is_not_found_and_other_refusals_are_provider_errors() -> None:
    handler, _ = scripted(httpx.Response(404))
    with pytest.raises(NotFound):
        client(handler).get("/gone")
    handler, seen = scripted(httpx.Response(422, json={"detail": f"key {KEY} is malformed"}))
    with pytest.raises(ProviderError) as caught:
        client(handler).get("/x")
    assert not isinstance(caught.value, TransientProviderError) and len(seen) == 1
    assert "HTTP 422" in str(caught.value) and "***" in str(caught.value)
    assert KEY not in str(caught.value)


def test_accepted_statuses_come_back_as_responses() -> None:
    handler, _ = scripted(httpx.Response(422, json={"detail": []}))
    assert client(handler).request("POST", "/probe", accept=(422,)).status_code == 422


def test_redirects_are_not_followed() -> None:
    handler, seen = scripted(httpx.Response(307, headers={"Location": "https://evil.test/x"}))
    with pytest.raises(ProviderError, match=r"evil\.test"):
        client(handler).get("/x")
    assert [r.url.host for r in seen] == ["svc.test"]


@pytest.mark.parametrize("body", [b'{"results": [', b"<html>502 Bad Gateway</html>", b"\xff\xfe"])
def test_a_body_that_is_not_json_is_an_invalid_response(body: bytes) -> None:
    handler, seen = scripted(
        httpx.Response(200, content=body, headers={"Content-Type": "application/json"})
    )
    with pytest.raises(InvalidResponse, match="not valid JSON"):
        client(handler).get("/x")
    assert len(seen) == 4  # a garbled answer to a read is retried like a 5xx


# auth headers and secrecy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "header", "value"),
    [
        ("api-key", "x-api-key", KEY),
        ("bearer", "authorization", f"Bearer {KEY}"),
        ("token", "authorization", f"Token {KEY}"),
    ],
)
def test_each_auth_scheme_sends_its_header(scheme: str, header: str, value: str) -> None:
    handler, seen = scripted(ok())
    client(handler, auth=scheme).get("/x")
    assert seen[0].headers[header] == value


def test_the_key_appears_in_no_log_repr_or_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    handler, _ = scripted(
        httpx.Response(500, text=f"upstream said: Authorization: Bearer {KEY}"),
        httpx.ReadTimeout("slow"),
        httpx.Response(403, text=KEY),
    )
    http = client(handler, auth="bearer")
    with pytest.raises(AuthError) as caught:
        http.get("/x")
    texts = [caplog.text, repr(http), str(http._client.headers), repr(http._client.auth)]
    texts += [str(caught.value), repr(caught.value)]
    assert all(KEY not in text for text in texts)
    assert "retrying" in caplog.text  # the retries were logged, redacted


# URLs and TLS -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["http://mem0.example.com", "http://10.0.0.5:8000", "http://mem0.lan/"]
)
def test_plain_http_beyond_the_loopback_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="allow_insecure_http"):
        HttpClient("svc", url)
    HttpClient("svc", url, allow_insecure_http=True).close()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"]
)
def test_plain_http_to_the_loopback_is_allowed(url: str) -> None:
    HttpClient("svc", url).close()


def test_credentials_in_the_url_are_refused() -> None:
    with pytest.raises(ConfigError, match="api_key_env"):
        HttpClient("svc", f"https://user:{KEY}@svc.test")


def test_tls_certificates_are_always_verified() -> None:
    http = HttpClient("svc", "https://svc.test")
    context = http._client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


# a real socket ----------------------------------------------------------------------------------


def test_the_client_works_over_a_real_loopback_socket() -> None:
    """The same calls through uvicorn on 127.0.0.1: real sockets, real timeouts, real resets."""
    import socket
    import threading
    import time

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def echo(request: Request) -> Response:
        return JSONResponse({"key_seen": request.headers.get("x-api-key") == KEY})

    async def slow(request: Request) -> Response:
        import anyio

        await anyio.sleep(30)
        return JSONResponse({})

    app = Starlette(routes=[Route("/echo", echo), Route("/slow", slow)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        http = HttpClient(
            "svc",
            f"http://127.0.0.1:{port}",
            secret=Secret(KEY, "$SVC_API_KEY"),
            auth="api-key",
            timeout=2.0,
            retry=RetryPolicy(attempts=2, initial_backoff=0.01),
        )
        assert http.get("/echo") == {"key_seen": True}
        with pytest.raises(TransientProviderError, match=r"no answer within 2s"):
            http.get("/slow")
        http.close()
    finally:
        server.should_exit = True
        thread.join(timeout=5)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"detail": "Invalid or expired token."}, "Invalid or expired token."),  # FastAPI
        ({"error": "Invalid API key"}, "Invalid API key"),  # the Platform
        ({"error": "Bad add", "details": {"message": "messages is empty"}}, "(messages is empty)"),
        ({"message": "quota reached"}, "quota reached"),
    ],
)
def test_every_refusal_keeps_the_servers_reason_in_one_line(body: object, reason: str) -> None:
    for status, error in ((401, AuthError), (400, ProviderError), (429, TransientProviderError)):
        handler, _ = scripted(httpx.Response(status, json=body))
        with pytest.raises(error) as caught:
            client(handler, retry=RetryPolicy(attempts=1)).get("/x")
        assert reason in str(caught.value) and "\n" not in str(caught.value)
        assert KEY not in str(caught.value)
