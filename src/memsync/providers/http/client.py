"""The HTTP layer every remote provider speaks through: typed errors, bounded retries, no leaks.

One ``HttpClient`` per provider and cycle. It refuses plain ``http://`` to anything but the
loopback (unless the user says the network is trusted), always verifies TLS, retries what may
pass (429 after its ``Retry-After``, 5xx, timeouts, resets) with exponential backoff and jitter
inside a time budget, and turns everything else into one of ``memsync.errors``' typed errors.

A request that is not idempotent (a POST that creates) is retried only when the server cannot
have acted on it (429, or the connection never opened): retrying a create after a 500 or a
read timeout could write the memory twice.

The key goes on the wire through an ``httpx.Auth`` hook at send time, never into the client's
default headers, URLs, log lines or exception messages; whatever a server echoes back is
redacted before it reaches a message.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception

from memsync.errors import (
    AuthError,
    ConfigError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.providers.base import Provider, WriteOp, WriteResult
from memsync.providers.concurrent import write_concurrently
from memsync.secrets import Secret, redact

log = logging.getLogger("memsync.http")

AuthScheme = Literal["api-key", "bearer", "token", "none"]
T = TypeVar("T")

_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_EXCERPT = 200  # characters of a server's error body worth showing


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one call tries before giving up with a TransientProviderError.

    ``max_retry_after`` is the longest ``Retry-After`` waited in-process; a server asking for
    longer gets the error at once, carrying ``retry_after`` so the engine schedules the retry.
    """

    attempts: int = 4
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    max_elapsed: float = 60.0
    max_retry_after: float = 60.0


class _RateLimited(TransientProviderError):
    """429: the server refused before acting, so even a create may be sent again."""


class _NotSent(TransientProviderError):
    """The connection never opened: the request cannot have been acted on."""


class SharedBackoff:
    """One pause every worker of a provider honours: a 429 slows the provider, not one thread.

    A rate limit answers for the whole key, so when one request is told to wait, requests
    started by the other workers wait out the same ``Retry-After`` instead of being refused
    in turn.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until = 0.0
        self._holder: int | None = None

    def hold(self, seconds: float) -> None:
        with self._lock:
            until = time.monotonic() + seconds
            if until > self._until:
                self._until, self._holder = until, threading.get_ident()

    def release(self) -> None:
        """The request that was told to wait has now been served: the pause is over."""
        with self._lock:
            if self._holder == threading.get_ident():
                self._until, self._holder = 0.0, None

    def remaining(self) -> float:
        with self._lock:
            return max(0.0, self._until - time.monotonic())


class _HeaderAuth(httpx.Auth):
    """Adds the credential header at send time, so no client default or repr ever holds it."""

    def __init__(self, header: str, value: str) -> None:
        self._header = header
        self._value = value

    def __repr__(self) -> str:
        return f"_HeaderAuth({self._header}: ***)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._value
        yield request


def auth_header(scheme: AuthScheme, secret: Secret) -> tuple[str, str]:
    """The header carrying a key: X-API-Key, ``Authorization: Bearer`` or ``Token``."""
    if scheme == "api-key":
        return "X-API-Key", secret.reveal()
    if scheme == "bearer":
        return "Authorization", f"Bearer {secret.reveal()}"
    if scheme == "token":
        return "Authorization", f"Token {secret.reveal()}"
    raise ValueError(f"auth scheme {scheme!r} carries no key")


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(provider: str, base_url: str, *, allow_insecure_http: bool) -> httpx.URL:
    """The base URL, refused when it would send a key in clear text or embed credentials."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"providers.{provider}.base_url: not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"providers.{provider}.base_url: expected an http:// or https:// URL with a host"
        )
    if url.userinfo:
        raise ConfigError(
            f"providers.{provider}.base_url: remove the user:password part; "
            "pass the key with api_key_env or api_key_file"
        )
    if url.scheme == "http" and not is_loopback(url.host) and not allow_insecure_http:
        raise ConfigError(
            f"providers.{provider}.base_url: http:// to {url.host} would send your key and "
            "memories unencrypted; use https://, or set allow_insecure_http = true if this "
            "network is trusted"
        )
    return url


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class HttpClient:
    """A provider's connection to one HTTP API: ``request`` for responses, ``json`` for data.

    ``transport`` lets tests serve the real request/response cycle from an in-process app;
    ``sleep`` lets them see the waits asked for without waiting. It is safe to call from
    ``concurrency`` threads at once: they share one connection pool of that size and one
    ``SharedBackoff``.
    """

    def __init__(
        self,
        provider: str,
        base_url: str,
        *,
        secret: Secret | None = None,
        auth: AuthScheme = "none",
        timeout: float = 30.0,
        allow_insecure_http: bool = False,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        headers: Mapping[str, str] | None = None,
        concurrency: int = 1,
    ) -> None:
        self.provider = provider
        self.base_url = check_base_url(provider, base_url, allow_insecure_http=allow_insecure_http)
        self.secret = secret if auth != "none" else None
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._sleep = sleep
        self.backoff = SharedBackoff()
        pool = max(1, concurrency)
        hook = _HeaderAuth(*auth_header(auth, self.secret)) if self.secret else None
        self._client = httpx.Client(
            base_url=self.base_url,
            auth=hook,
            # Waiting for a free connection is queueing behind our own requests, each bounded
            # by the timeout: it is not the server being slow, so it has no limit of its own.
            timeout=httpx.Timeout(timeout, pool=None),
            verify=True,
            follow_redirects=False,
            transport=transport,
            headers={"Accept": "application/json", **(headers or {})},
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
        )

    def __repr__(self) -> str:
        return f"HttpClient({self.provider!r}, {str(self.base_url)!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # public calls -----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        files: Any = None,
        idempotent: bool | None = None,
        accept: tuple[int, ...] = (),
    ) -> httpx.Response:
        """Send with retries; a 2xx response, or a typed error (NotFound on 404).

        Statuses in ``accept`` come back as responses instead of errors, for callers that
        read meaning into them (a probe's 422, a 404 that means "absent").
        """
        return self._call(
            method,
            path,
            lambda r: r,
            params=params,
            json=json,
            data=data,
            files=files,
            idempotent=idempotent,
            accept=accept,
        )

    def json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        files: Any = None,
        idempotent: bool | None = None,
    ) -> Any:
        """Send with retries and decode the JSON body; InvalidResponse when it is not JSON.

        A garbled body to an idempotent call is retried like a 5xx (proxies cut bodies short);
        to a create it is not, since the server may have written.
        """
        return self._call(
            method,
            path,
            self._decode,
            params=params,
            json=json,
            data=data,
            files=files,
            idempotent=idempotent,
        )

    def get(self, path: str, *, params: Mapping[str, Any] | None = None) -> Any:
        return self.json("GET", path, params=params)

    # machinery ----------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        parse: Callable[[httpx.Response], T],
        *,
        idempotent: bool | None,
        accept: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> T:
        method = method.upper()
        safe = method in _IDEMPOTENT if idempotent is None else idempotent
        started = time.monotonic()
        policy = self.retry
        # Time spent: the requests themselves plus the waits asked for (counted as asked, so
        # the budget holds whether ``sleep`` really sleeps or a test records it).
        waits = {"asked": 0.0, "slept": 0.0}
        # A retry has just waited what it was asked: the shared pause is already served.
        retried = {"waited": False}

        def sleep(seconds: float) -> None:
            before = time.monotonic()
            self._sleep(seconds)
            waits["slept"] += time.monotonic() - before
            waits["asked"] += seconds
            retried["waited"] = True

        def spent() -> float:
            return time.monotonic() - started - waits["slept"] + waits["asked"]

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, _RateLimited | _NotSent):
                return True
            return safe and isinstance(exc, TransientProviderError)

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, TransientProviderError) and exc.retry_after is not None:
                return exc.retry_after
            backoff = policy.initial_backoff * 2.0 ** (state.attempt_number - 1)
            return min(policy.max_backoff, backoff) + random.uniform(0, policy.initial_backoff)

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number >= policy.attempts:
                return True
            upcoming = state.upcoming_sleep or 0.0
            if upcoming > policy.max_retry_after:
                return True
            return spent() + upcoming > policy.max_elapsed

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "%s; retrying in %.2fs (attempt %d of %d)",
                exc,
                state.upcoming_sleep,
                state.attempt_number,
                policy.attempts,
            )

        retrying = Retrying(
            retry=retry_if_exception(retryable),
            wait=wait,
            stop=stop,
            sleep=sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        attempts = 0
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    honour, retried["waited"] = not retried["waited"], False
                    result = parse(self._once(method, path, accept, honour, **kwargs))
                    if attempts > 1:
                        self.backoff.release()
                    return result
        except TransientProviderError as exc:
            raise _final(exc, attempts) from None
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def _once(
        self, method: str, path: str, accept: tuple[int, ...], honour_backoff: bool, **kwargs: Any
    ) -> httpx.Response:
        where = f"{method} {path}"
        pause = self.backoff.remaining() if honour_backoff else 0.0
        if pause > 0:  # another worker was told to slow down: so is this one
            self._sleep(pause)
        try:
            response = self._client.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise _NotSent(
                f"{self.provider}: cannot connect to {self.base_url} ({_reason(exc)})"
            ) from None
        except httpx.TimeoutException:
            raise TransientProviderError(
                f"{self.provider}: {where} got no answer within {self.timeout:g}s"
            ) from None
        except httpx.TransportError as exc:
            raise TransientProviderError(
                f"{self.provider}: {where} failed: connection lost ({_reason(exc)})"
            ) from None
        log.debug("%s: %s -> HTTP %d", self.provider, where, response.status_code)
        if response.status_code in accept:
            return response
        return self._check(where, response)

    def _check(self, where: str, response: httpx.Response) -> httpx.Response:
        status = response.status_code
        if 200 <= status < 300:
            return response
        detail = self._excerpt(response)
        if status in (401, 403):
            raise AuthError(self._auth_message(status, detail))
        if status == 404:
            raise NotFound(f"{self.provider}: {where} found nothing (HTTP 404){detail}")
        if status == 429:
            wait = parse_retry_after(response.headers.get("Retry-After"))
            hold = wait if wait is not None else self.retry.initial_backoff
            self.backoff.hold(min(hold, self.retry.max_retry_after))
            raise _RateLimited(
                f"{self.provider}: {where} was rate limited (HTTP 429){detail}", retry_after=wait
            )
        if status >= 500:
            wait = parse_retry_after(response.headers.get("Retry-After"))
            raise TransientProviderError(
                f"{self.provider}: {where} failed on the server (HTTP {status}){detail}",
                retry_after=wait,
            )
        if 300 <= status < 400:
            raise ProviderError(
                f"{self.provider}: {where} was redirected (HTTP {status}) to "
                f"{response.headers.get('Location', '?')}; set base_url to the final address"
            )
        raise ProviderError(f"{self.provider}: {where} was refused (HTTP {status}){detail}")

    def _auth_message(self, status: int, detail: str = "") -> str:
        """Who refused what, with the server's own reason (redacted), and what to do."""
        verb = "refused" if status == 401 else "denied access with"
        if self.secret is None:
            return (
                f"{self.provider}: {self.base_url} requires an API key (HTTP {status}{detail}); "
                f"set api_key_env or api_key_file in providers.{self.provider}"
            )
        return (
            f"{self.provider}: {self.base_url} {verb} the key from {self.secret.source} "
            f"(HTTP {status}{detail}); check that {self.secret.source} holds a valid, "
            "unexpired key for this server"
        )

    def _excerpt(self, response: httpx.Response) -> str:
        try:
            text = response.text
        except (UnicodeDecodeError, httpx.ResponseNotRead):
            return ""
        try:
            body = json.loads(text)
            if isinstance(body, dict):
                text = _reason_in(body)
        except ValueError:
            pass
        text = redact(" ".join(text.split()), self.secret)[:_EXCERPT]
        return f": {text}" if text else ""

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except (ValueError, UnicodeDecodeError):
            kind = response.headers.get("Content-Type", "no content type")
            raise InvalidResponse(
                f"{self.provider}: {response.request.method} {response.request.url.path} answered "
                f"HTTP {response.status_code} with a body that is not valid JSON "
                f"({len(response.content)} bytes, {kind}); is base_url the right server?"
            ) from None


def _reason_in(body: dict[str, Any]) -> str:
    """The server's reason from an error body: FastAPI's ``detail``, the Platform's ``error``
    (with ``details.message``), or a bare ``message``; the whole body when none is there."""
    found = body.get("detail") or body.get("error") or body.get("message")
    text = found if isinstance(found, str) else json.dumps(found or body, ensure_ascii=False)
    details = body.get("details")
    if isinstance(details, dict) and isinstance(details.get("message"), str):
        text = f"{text} ({details['message']})" if found else details["message"]
    return text


def _reason(exc: Exception) -> str:
    return str(exc).splitlines()[0][:_EXCERPT] if str(exc) else type(exc).__name__


def _final(exc: TransientProviderError, attempts: int) -> TransientProviderError:
    """The error a caller sees once retries are spent: public type, attempt count, wait hint."""
    message = f"{exc}; gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(exc, InvalidResponse):
        return InvalidResponse(message, retry_after=exc.retry_after)
    return TransientProviderError(message, retry_after=exc.retry_after)


def expect_object(provider: str, value: Any, where: str) -> dict[str, Any]:
    """A JSON object from a response, or InvalidResponse naming where it was expected."""
    if not isinstance(value, dict):
        raise InvalidResponse(
            f"{provider}: {where} answered {type(value).__name__} where an object was expected"
        )
    return value


def expect_list(provider: str, value: Any, where: str) -> list[Any]:
    """A JSON array from a response, or InvalidResponse naming where it was expected."""
    if not isinstance(value, list):
        raise InvalidResponse(
            f"{provider}: {where} answered {type(value).__name__} where a list was expected"
        )
    return value


__all__ = [
    "AuthScheme",
    "HttpClient",
    "RetryPolicy",
    "auth_header",
    "check_base_url",
    "expect_list",
    "expect_object",
    "is_loopback",
    "parse_retry_after",
]


DEFAULT_CONCURRENCY = 8


class HttpProvider(Provider):
    """A provider over one HTTP API: one client per cycle, made on first use, closed after.

    Subclasses pass their connection settings up and use ``self.http``; those that keep
    per-cycle state (a resolved dataset id, detected server features) extend ``close``.
    Writes run ``concurrency`` at a time (each a round trip spent waiting on the network),
    one logical memory's writes in order; ``prepare_writes`` settles shared state first.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        secret: Secret | None,
        auth: AuthScheme,
        timeout: float = 30.0,
        allow_insecure_http: bool = False,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        super().__init__(name)
        check_base_url(name, base_url, allow_insecure_http=allow_insecure_http)
        self.concurrency = max(1, concurrency)
        self.base_url = base_url.rstrip("/")
        self.secret = secret
        self.timeout = timeout
        self.allow_insecure_http = allow_insecure_http
        self._client_args: dict[str, Any] = dict(
            secret=secret,
            auth=auth if secret is not None else "none",
            timeout=timeout,
            allow_insecure_http=allow_insecure_http,
            transport=transport,
            retry=retry,
            concurrency=self.concurrency,
            **({"sleep": sleep} if sleep is not None else {}),
        )
        self._http: HttpClient | None = None

    def open(self) -> None:
        if self._http is None:
            self._http = HttpClient(self.name, self.base_url, **self._client_args)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    @property
    def http(self) -> HttpClient:
        if self._http is None:
            self.open()
        assert self._http is not None
        return self._http

    def prepare_writes(self, ops: list[WriteOp]) -> None:
        """Resolve, once and before the workers start, what every write of ``ops`` needs."""

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Up to ``concurrency`` writes in flight; results as each one is durable."""
        if not ops:
            return
        try:
            self.prepare_writes(ops)
        except Exception as exc:  # every op gets its outcome, as if each had tried
            for op in ops:
                yield WriteResult(op, error=exc)
            return
        yield from write_concurrently(
            ops, lambda lane: Provider.write_many(self, lane), self.concurrency
        )
