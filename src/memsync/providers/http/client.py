"""``HttpClient``: a provider's connection to one HTTP API, typed errors out, no key leaked.

One ``HttpClient`` per provider and cycle. It always verifies TLS, sends the key only as
``auth`` allows (see ``auth``), retries what may pass within a ``RetryPolicy`` (see ``retry``)
and turns everything else into one of ``memsync.base.errors``' typed errors. Whatever a server
echoes back is redacted before it reaches a message. A server that several requests in a row
could not reach is not tried again this cycle (``breaker``).
"""

from __future__ import annotations

import functools
import logging
import random
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception

from memsync.base.errors import (
    ProviderUnreachable,
    TransientProviderError,
)
from memsync.base.secrets import Secret
from memsync.providers.http.answers import AnswerChecks, short_reason
from memsync.providers.http.auth import (
    AuthScheme,
    HeaderAuth,
    RenewingBearer,
    TokenSource,
    auth_header,
    check_base_url,
)
from memsync.providers.http.breaker import Breaker
from memsync.providers.http.pacing import RateLimiter, Ticket
from memsync.providers.http.retry import (
    NotSent,
    RateLimited,
    RetryPolicy,
    SharedBackoff,
    final_error,
)

log = logging.getLogger("memsync.http")

T = TypeVar("T")

_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every client shares: made once a process, since making one
    loads the certificate bundle (45-60 ms), which a daemon would pay every cycle."""
    return httpx.create_ssl_context()


class HttpClient(AnswerChecks):
    """A provider's connection to one HTTP API: ``request`` for responses, ``json`` for data.

    ``transport`` lets tests serve the real request/response cycle from an in-process app;
    ``sleep`` lets them see the waits asked for without waiting. It is safe to call from
    ``concurrency`` threads at once: they share one connection pool of that size, one
    ``SharedBackoff`` and one ``RateLimiter`` (pass the key's, ``pacing.limiter_for``, so that
    every client of the key in the process paces on the same window).
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
        pacer: RateLimiter | None = None,
        tokens: TokenSource | None = None,
        breaker: Breaker | None = None,
        auth_advice: str | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = check_base_url(provider, base_url, allow_insecure_http=allow_insecure_http)
        self.secret = secret if auth != "none" else None
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._sleep = sleep
        self.backoff = SharedBackoff()
        self.breaker = breaker if breaker is not None else Breaker(provider)
        self.pacer = pacer if pacer is not None else RateLimiter()
        pool = max(1, concurrency)
        self.auth = "bearer" if tokens is not None else auth
        self.auth_advice = auth_advice  # what to do about a refused credential, when known
        hook: httpx.Auth | None = None
        self.credential: str | None = None  # where the credential comes from, safe to show
        if tokens is not None:
            hook, self.credential = RenewingBearer(tokens), tokens.source
        elif self.secret is not None:
            hook, self.credential = HeaderAuth(*auth_header(auth, self.secret)), self.secret.source
        self._client = httpx.Client(
            base_url=self.base_url,
            auth=hook,
            # Waiting for a free connection is queueing behind our own requests, each bounded
            # by the timeout: it is not the server being slow, so it has no limit of its own.
            timeout=httpx.Timeout(timeout, pool=None),
            verify=tls_context(),
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

        def pace(ticket: Ticket) -> Ticket:
            # Waiting for the rate limit's next window is no retry: it spends no budget.
            if ticket.wait > 0:
                before = time.monotonic()
                self._sleep(ticket.wait)
                waits["slept"] += time.monotonic() - before
            return ticket

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, ProviderUnreachable):
                return False  # the breaker is open: nothing is sent to it this cycle
            if isinstance(exc, RateLimited | NotSent):
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
            # A retry is not yet a failure: one that gives up is reported once, by the cycle.
            exc = state.outcome.exception() if state.outcome else None
            log.info(
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
                    self.breaker.check()  # an unreachable provider is not even paced for
                    ticket = pace(self.pacer.reserve(method, path))
                    result = parse(self._once(method, path, accept, honour, ticket, **kwargs))
                    if attempts > 1:
                        self.backoff.release()
                    return result
        except ProviderUnreachable:
            raise
        except TransientProviderError as exc:
            raise final_error(exc, attempts) from None
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def _once(
        self,
        method: str,
        path: str,
        accept: tuple[int, ...],
        honour_backoff: bool,
        ticket: Ticket,
        **kwargs: Any,
    ) -> httpx.Response:
        where = f"{method} {path}"
        pause = self.backoff.remaining() if honour_backoff else 0.0
        if pause > 0:  # another worker was told to slow down: so is this one
            self._sleep(pause)
        response: httpx.Response | None = None
        try:
            response = self._client.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            self._unreached(short_reason(exc))
            raise NotSent(
                f"{self.provider}: cannot connect to {self.base_url} ({short_reason(exc)})"
            ) from None
        except httpx.TimeoutException:
            self._unreached(f"no answer within {self.timeout:g}s")
            raise TransientProviderError(
                f"{self.provider}: {where} got no answer within {self.timeout:g}s"
            ) from None
        except httpx.TransportError as exc:
            self._unreached(f"connection lost: {short_reason(exc)}")
            raise TransientProviderError(
                f"{self.provider}: {where} failed: connection lost ({short_reason(exc)})"
            ) from None
        finally:  # every answer, a 429 too, tells the pacer where the window stands
            self.pacer.done(ticket, response.headers if response is not None else None)
        self.breaker.answered()
        log.debug("%s: %s -> HTTP %d", self.provider, where, response.status_code)
        if response.status_code in accept:
            return response
        return self._check(where, response)

    def _unreached(self, reason: str) -> None:
        """A request did not reach the server: count it; once the breaker opens, this request
        and every later one fail with ProviderUnreachable instead of being retried."""
        if self.breaker.failed(reason) or self.breaker.reason is not None:
            raise self.breaker.error() from None
