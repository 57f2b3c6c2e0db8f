"""Where a key may go: base URLs that would leak it are refused, and it is added only at send time.

Plain ``http://`` is refused to anything but the loopback (unless the user says the network is
trusted), and so is a URL with ``user:password`` in it. The key goes on the wire through an
``httpx.Auth`` hook at send time, never into the client's default headers, URLs, log lines or
exception messages.

A bearer token that expires (a Mem0 server's JWTs last 30 minutes) goes through
``RenewingBearer``: a ``TokenSource`` gives the current token, and when the server answers
401 the source renews it once and the request is sent again. A 401 means the server did not
act, so even a create is safe to resend.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Generator
from typing import Literal, Protocol

import httpx

from memsync.base.errors import ConfigError
from memsync.base.secrets import Secret

AuthScheme = Literal["api-key", "bearer", "token", "none"]


class HeaderAuth(httpx.Auth):
    """Adds the credential header at send time, so no client default or repr ever holds it."""

    def __init__(self, header: str, value: str) -> None:
        self._header = header
        self._value = value

    def __repr__(self) -> str:
        return f"HeaderAuth({self._header}: ***)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._value
        yield request


class TokenSource(Protocol):
    """Where a renewable bearer token comes from (``providers/mem0/server_tokens.py``)."""

    source: str  # where its credential lives (a file's path): safe to show

    def current(self) -> str:
        """The token to send now (renewed first when none is held)."""
        ...

    def renew(self, stale: str) -> str:
        """A new token in place of ``stale`` (or the one another thread already renewed)."""
        ...


class RenewingBearer(httpx.Auth):
    """``Authorization: Bearer`` from a TokenSource, renewed once when the server answers 401."""

    def __init__(self, tokens: TokenSource) -> None:
        self._tokens = tokens

    def __repr__(self) -> str:
        return "RenewingBearer(***)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._tokens.current()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != 401:
            return
        fresh = self._tokens.renew(token)
        if fresh == token:
            return
        request.headers["Authorization"] = f"Bearer {fresh}"
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
