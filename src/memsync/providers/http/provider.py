"""The base of every remote provider: one HttpClient per cycle, shared by the scopes bound
from it, writes a few at a time."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any, Self

import httpx

from memsync.base.secrets import Secret
from memsync.providers.base import Provider, WriteOp, WriteResult
from memsync.providers.concurrent import write_concurrently
from memsync.providers.http.auth import AuthScheme, check_base_url
from memsync.providers.http.breaker import Breaker
from memsync.providers.http.client import HttpClient
from memsync.providers.http.pacing import limiter_for
from memsync.providers.http.retry import RetryPolicy

DEFAULT_CONCURRENCY = 8


class HttpProvider(Provider):
    """A provider over one HTTP API: one client per cycle, made on first use, closed after.

    Subclasses pass their connection settings up and use ``self.http``; those that keep
    per-cycle state (a resolved dataset id, detected server features) extend ``close``.
    A scope bound from the provider (``sharing``) talks through the provider's own client: one
    connection pool, one TLS context for a thousand users, not one each (making a client loads
    the system's certificates: 60 ms a scope).
    Writes run ``concurrency`` at a time (each a round trip spent waiting on the network),
    one logical memory's writes in order; ``prepare_writes`` settles shared state first.
    One ``RateLimiter`` serves every client of the server and key in the process (this
    provider's, its per-scope copies', the next cycle's, a probe's): the server's rate limit
    answers for the key, whichever scope, worker or cycle asks. ``rate_limit`` is the documented
    (requests, seconds) until answers name a limit; ``rate_headroom`` the share of it left to
    the key's other clients.
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
        rate_limit: tuple[int, float] | None = None,
        rate_headroom: float = 0.0,
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
            pacer=limiter_for(
                self.base_url,
                secret.reveal() if secret is not None else None,
                transport=transport,
                limit=rate_limit[0] if rate_limit else None,
                window=rate_limit[1] if rate_limit else None,
                headroom=rate_headroom,
            ),
            **({"sleep": sleep} if sleep is not None else {}),
        )
        self._http: HttpClient | None = None
        # One breaker for this provider and every scope bound from it (copies share it), so a
        # server down for all of them is found unreachable once, not once a scope; the
        # provider that made it starts a fresh one when it closes, at the end of the cycle.
        self.breaker = Breaker(name)
        self._breaker_owner: HttpProvider = self
        self._client_owner: HttpProvider = self

    def sharing(self, name: str) -> Self:
        """A copy named NAME (one scope bound from this provider) that talks through this
        provider's client; closing the copy leaves the client to this provider, which closes
        it with itself at the end of the cycle."""
        bound = copy.copy(self)
        bound.name = name
        bound._http = None
        bound._client_owner = self
        return bound

    def open(self) -> None:
        if self._http is not None:
            return
        owner = self._client_owner
        if owner is not self:
            self._http = owner.http
            return
        self._http = HttpClient(self.name, self.base_url, breaker=self.breaker, **self._client_args)

    def close(self) -> None:
        if self._http is not None:
            if self._client_owner is self:
                self._http.close()
            self._http = None
        if self._breaker_owner is self:
            self.breaker = Breaker(self.name)

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
