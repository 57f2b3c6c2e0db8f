"""Bearer tokens for a Mem0 server that last as long as the daemon: renewed through
``POST /auth/refresh``, the refresh token kept in a file memsync rewrites.

Upstream (``server/auth.py``, ``routers/auth.py`` at 8d5b786) issues access JWTs that expire
after 30 minutes, and refresh tokens that last 30 days and are **single use**: each refresh
consumes the token's ``jti`` and answers a new pair. So memsync cannot take a refresh token
from the environment (it would be spent on the first use, and the next start would hold a
dead one) nor from the config (secrets never go there): it takes ``refresh_token_file``, and
writes each new refresh token back into that file (atomically, 0600) the moment it has it.

The access token is kept in memory for the life of the process, shared by every provider of
the same server and file, and renewed when the server answers 401 (``RenewingBearer``), not
on a timer. Renewals are serialised by a thread lock and, across processes (the daemon and a
``memsync sync`` started by hand), by an exclusive lock on ``FILE.lock``: each renewal reads
the file under the lock, so two processes never spend the same refresh token. Login and
refresh are rate limited upstream (10 and 20 a minute per address); renewing only on a 401
stays far below that.

A daemon given a static bearer token that expires (no ``refresh_token_file``) would stop
syncing within half an hour: ``require_lasting_credential`` refuses it at start and on reload
(the registry's ``check_for_daemon``).

What a lost refresh token means (the file deleted, or memsync killed between the server's
answer and the write): the chain is broken, and the message says to log in again
(``POST /auth/login``) and put the answer's ``refresh_token`` into the file.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx

from memsync.base.errors import AuthError, ConfigError, ProviderError, TransientProviderError
from memsync.base.secrets import Secret, resolve_secret
from memsync.config import Config, Mem0ServerConfig
from memsync.providers.http.shapes import expect_object

RefreshCall = Callable[[str], httpx.Response]


class _Held:
    """The access token one process holds for one server and refresh file."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.access: str | None = None


_HELD: dict[tuple[str, str], _Held] = {}
_HELD_LOCK = threading.Lock()


def _held(base_url: str, path: Path) -> _Held:
    key = (base_url, str(path.resolve()))
    with _HELD_LOCK:
        return _HELD.setdefault(key, _Held())


class RefreshTokenFile:
    """A ``TokenSource``: access tokens from ``/auth/refresh``, the refresh token in a file."""

    def __init__(
        self,
        provider: str,
        base_url: str,
        path: Path,
        refresh: RefreshCall,
        *,
        access: Secret | None = None,
    ) -> None:
        """``refresh(token)`` sends ``POST /auth/refresh`` and returns the response;
        ``access`` is an access token to start with (api_key_env or api_key_file), if any."""
        self.provider = provider
        self.path = Path(path).expanduser()
        self.source = str(self.path)
        self._refresh = refresh
        self._held = _held(base_url, self.path)
        if access is not None:
            with self._held.lock:
                self._held.access = self._held.access or access.reveal()

    def current(self) -> str:
        with self._held.lock:
            held = self._held.access
        return held if held is not None else self.renew("")

    def renew(self, stale: str) -> str:
        with self._held.lock:
            if self._held.access is not None and self._held.access != stale:
                return self._held.access  # another worker renewed it meanwhile
            with _file_lock(self.path):
                access = self._exchange()
            self._held.access = access
            return access

    def _exchange(self) -> str:
        """Spend the file's refresh token; write the new one back; the new access token."""
        token = self._read()
        response = self._refresh(token)
        status = response.status_code
        detail = _detail(response)
        if status == 401:
            raise AuthError(
                f"{self.provider}: the server refused the refresh token in {self.path} "
                f"(HTTP 401: {detail}); it was already used, expired (30 days) or belongs to "
                f"another server: log in again (POST /auth/login) and write the refresh_token "
                f"of its answer into {self.path}"
            )
        if status == 429 or status >= 500:
            raise TransientProviderError(
                f"{self.provider}: POST /auth/refresh failed (HTTP {status}: {detail}); "
                "memsync tries again next cycle"
            )
        if status != 200:
            raise ProviderError(
                f"{self.provider}: POST /auth/refresh was refused (HTTP {status}: {detail})"
            )
        try:
            body = expect_object(self.provider, response.json(), "POST /auth/refresh")
        except ValueError:
            body = {}
        access, refresh = body.get("access_token"), body.get("refresh_token")
        if not isinstance(access, str) or not access or not isinstance(refresh, str) or not refresh:
            raise ProviderError(
                f"{self.provider}: POST /auth/refresh answered no access_token and "
                "refresh_token; is base_url a Mem0 server?"
            )
        self._write(refresh)
        return access

    def _read(self) -> str:
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise AuthError(
                f"{self.provider}: cannot read refresh_token_file {self.path} ({exc.strerror}); "
                "log in (POST /auth/login) and write the refresh_token of its answer there"
            ) from None
        if not token:
            raise AuthError(f"{self.provider}: refresh_token_file {self.path} is empty")
        return token

    def _write(self, token: str) -> None:
        """Replace the file's token in one rename, so a crash leaves the old file or the new."""
        try:
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(token + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.chmod(temporary, 0o600)
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise AuthError(
                f"{self.provider}: the server issued a new refresh token but memsync could not "
                f"save it to {self.path} ({exc.strerror}); the old one is spent: fix the file's "
                "permissions, log in again and write the new refresh_token there"
            ) from None


class _file_lock:
    """An exclusive lock on ``PATH.lock`` beside the token file, across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> None:
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuthError(f"cannot lock {self.path} ({exc.strerror})") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)


def refresh_call(
    provider: str, base_url: str, *, timeout: float, transport: httpx.BaseTransport | None
) -> RefreshCall:
    """``POST /auth/refresh`` on a client of its own (no credential header: the body is it)."""

    def call(token: str) -> httpx.Response:
        with httpx.Client(
            base_url=base_url,
            timeout=timeout,
            verify=True,
            follow_redirects=False,
            transport=transport,
        ) as client:
            try:
                return client.post("/auth/refresh", json={"refresh_token": token})
            except httpx.TransportError as exc:
                raise TransientProviderError(
                    f"{provider}: POST {base_url}/auth/refresh failed ({type(exc).__name__}); "
                    "memsync tries again next cycle"
                ) from None

    return call


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase or "no reason given"
    found = body.get("detail") or body.get("error") if isinstance(body, dict) else None
    return str(found) if found else "no reason given"


def require_lasting_credentials(config: Config) -> None:
    """``require_lasting_credential`` for every Mem0 server a config names."""
    for name, entry in config.providers.items():
        if isinstance(entry, Mem0ServerConfig):
            require_lasting_credential(name, entry)


def require_lasting_credential(name: str, entry: Mem0ServerConfig) -> None:
    """Refuse a daemon a credential it knows will die: a static bearer JWT of a Mem0 server
    (upstream's last 30 minutes) with no refresh_token_file to renew it. A token whose
    expiry cannot be read, or that lasts more than a day, is let through."""
    if entry.auth != "bearer" or entry.refresh_token_file is not None:
        return
    try:
        secret = resolve_secret(name, entry.api_key_env, entry.api_key_file)
    except ConfigError:
        return  # a key that cannot be read is reported by each cycle, as for any provider
    expiry = jwt_expiry(secret.reveal()) if secret is not None else None
    if secret is None or expiry is None or expiry - time.time() > 86_400:
        return
    when = datetime.fromtimestamp(expiry, UTC).strftime("%Y-%m-%d %H:%M UTC")
    raise ConfigError(
        f'providers.{name}: auth = "bearer" with a token from {secret.source} that '
        f"{'expired' if expiry <= time.time() else 'expires'} at {when}: a Mem0 server's "
        "tokens last 30 minutes, so the daemon would stop syncing; set refresh_token_file "
        '(memsync renews the token) or use an API key (auth = "api-key")'
    )


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT, read without checking its signature (None: not a JWT)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None
