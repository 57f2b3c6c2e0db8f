"""Authentication of the Mem0 server double, as upstream's ``server/auth.py`` and
``server/routers/auth.py`` do it (mem0 commit 8d5b786).

- ``X-API-Key`` with the ``ADMIN_API_KEY`` (compared first), else a dashboard user's ``m0sk_``
  key; a key that is neither is ``401 Invalid API key.`` even when auth is disabled.
- ``Authorization: Bearer <JWT>``, HS256, checked before any X-API-Key: access tokens last 30
  minutes (``{"sub", "role", "exp", "type": "access"}``), refresh tokens 30 days and are
  single use (``jti`` consumed on refresh, a new pair issued). Failures: ``Invalid or expired
  token.``, ``Invalid token type.``, ``User not found.``, ``Refresh token is no longer valid.``
- No credentials: ``401 Authentication required. Provide a Bearer token or X-API-Key header.``
  with ``WWW-Authenticate: Bearer`` (an empty header counts as none), unless auth is disabled.
- ``POST /auth/login`` and ``/auth/refresh`` are rate limited per client address (10 and 20
  a minute, slowapi's ``{"error": "Rate limit exceeded: N per 1 minute"}``).

Time is a ``Clock`` the test moves (``clock.advance(1801)``), so tokens expire without waiting.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

ACCESS_TOKEN_SECONDS = 30 * 60  # auth.py: ACCESS_TOKEN_EXPIRE_MINUTES = 30
REFRESH_TOKEN_SECONDS = 30 * 24 * 3600  # auth.py: REFRESH_TOKEN_EXPIRE_DAYS = 30
LOGIN_PER_MINUTE = 10  # routers/auth.py: @limiter.limit("10/minute")
REFRESH_PER_MINUTE = 20  # routers/auth.py: @limiter.limit("20/minute")
MISSING = "Authentication required. Provide a Bearer token or X-API-Key header."


class Clock:
    """Wall-clock seconds plus an offset a test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


class HTTPError(Exception):
    """What FastAPI's HTTPException answers: ``{"detail": ...}`` with a status."""

    def __init__(
        self, status: int, detail: Any, headers: dict[str, str] | None = None, *, body: Any = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}
        self.body = body if body is not None else {"detail": detail}


@dataclass
class User:
    id: str
    email: str
    password: str
    role: str = "admin"  # /auth/register only ever creates the admin; "member" comes from SQL


@dataclass(frozen=True)
class Caller:
    """Who a request came from: ``user`` is None for the admin key and disabled auth."""

    user: User | None
    auth_type: str  # "bearer" | "api_key" | "admin_api_key" | "disabled"

    @property
    def is_admin(self) -> bool:
        if self.user is None:
            return self.auth_type in ("admin_api_key", "disabled")
        return self.user.role == "admin"


@dataclass
class ServerAuth:
    """Users, keys and tokens of one double."""

    admin_api_key: str | None = None
    auth_disabled: bool = False
    clock: Clock = field(default_factory=Clock)
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    users: dict[str, User] = field(default_factory=dict)
    api_keys: dict[str, str] = field(default_factory=dict)  # m0sk_ key -> user id
    refresh_jtis: dict[str, float] = field(default_factory=dict)  # unused jti -> expiry
    refreshes: int = 0  # successful POST /auth/refresh calls
    _hits: dict[tuple[str, str], deque[float]] = field(
        default_factory=lambda: defaultdict(deque), repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # users and keys ------------------------------------------------------------------------

    def add_user(
        self, email: str = "admin@example.com", password: str = "pw", role: str = "admin"
    ) -> User:
        user = User(str(uuid.uuid4()), email, password, role)
        self.users[user.id] = user
        return user

    def create_api_key(self, user: User) -> str:
        """A dashboard key of ``user`` (``POST /api-keys``): it acts as that user."""
        key = f"m0sk_{secrets.token_urlsafe(32)}"
        self.api_keys[key] = user.id
        return key

    def tokens_for(self, user: User) -> dict[str, str]:
        """A fresh pair, as ``/auth/login`` and ``/auth/refresh`` answer it."""
        now = self.clock.now()
        jti = str(uuid.uuid4())
        self.refresh_jtis[jti] = now + REFRESH_TOKEN_SECONDS
        access = {
            "sub": user.id,
            "role": user.role,
            "exp": int(now + ACCESS_TOKEN_SECONDS),
            "type": "access",
        }
        refresh = {"sub": user.id, "exp": int(now + REFRESH_TOKEN_SECONDS), "jti": jti}
        refresh["type"] = "refresh"
        return {
            "access_token": self.encode(access),
            "refresh_token": self.encode(refresh),
            "token_type": "bearer",
        }

    # JWT (HS256) ---------------------------------------------------------------------------

    def encode(self, claims: dict[str, Any]) -> str:
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")))
        payload = _b64(json.dumps(claims, separators=(",", ":")))
        signature = hmac.new(self.secret, f"{header}.{payload}".encode(), hashlib.sha256)
        return f"{header}.{payload}.{_b64(signature.digest())}"

    def decode(self, token: str) -> dict[str, Any]:
        """The claims of a valid, unexpired token; 401 ``Invalid or expired token.`` else."""
        invalid = HTTPError(401, "Invalid or expired token.")
        parts = token.split(".")
        if len(parts) != 3:
            raise invalid
        expected = hmac.new(self.secret, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256)
        try:
            signature = _unb64(parts[2])
            claims = json.loads(_unb64(parts[1]))
        except (ValueError, UnicodeDecodeError):
            raise invalid from None
        if not hmac.compare_digest(signature, expected.digest()) or not isinstance(claims, dict):
            raise invalid
        exp = claims.get("exp")
        if isinstance(exp, int | float) and exp <= self.clock.now():
            raise invalid
        return claims

    # verify_auth -------------------------------------------------------------------------

    def verify(self, headers: dict[str, str]) -> Caller:
        """``verify_auth``: bearer first, then X-API-Key, then AUTH_DISABLED, else 401."""
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            claims = self.decode(credentials.strip())
            if claims.get("type") != "access":
                raise HTTPError(401, "Invalid token type.")
            user = self.users.get(str(claims.get("sub")))
            if user is None:
                raise HTTPError(401, "User not found.")
            return Caller(user, "bearer")
        key = headers.get("x-api-key")
        if key:
            if self.admin_api_key and hmac.compare_digest(key, self.admin_api_key):
                return Caller(None, "admin_api_key")
            owner = self.api_keys.get(key)
            if owner is None:
                raise HTTPError(401, "Invalid API key.")
            if owner not in self.users:
                raise HTTPError(401, "API key owner not found.")
            return Caller(self.users[owner], "api_key")
        if self.auth_disabled:
            return Caller(None, "disabled")
        raise HTTPError(401, MISSING, {"WWW-Authenticate": "Bearer"})

    def require_admin(self, caller: Caller) -> None:
        """``require_admin``: the admin key, disabled auth, or a user whose role is admin."""
        if not caller.is_admin:
            raise HTTPError(403, "Admin role required.")

    # /auth ---------------------------------------------------------------------------------

    def login(self, client: str, email: Any, password: Any) -> dict[str, str]:
        self._limit(client, "login", LOGIN_PER_MINUTE)
        for user in self.users.values():
            if user.email == email and user.password == password:
                return self.tokens_for(user)
        raise HTTPError(401, "Invalid email or password.")

    def refresh(self, client: str, token: Any) -> dict[str, str]:
        """``/auth/refresh``: the refresh token's jti is used up, a new pair is issued."""
        self._limit(client, "refresh", REFRESH_PER_MINUTE)
        claims = self.decode(str(token))
        if claims.get("type") != "refresh":
            raise HTTPError(401, "Invalid token type.")
        jti = claims.get("jti")
        if not jti:
            raise HTTPError(401, "Refresh token is no longer valid.")
        user = self.users.get(str(claims.get("sub")))
        if user is None:
            raise HTTPError(401, "User not found.")
        with self._lock:
            expires = self.refresh_jtis.pop(str(jti), None)
        if expires is None or expires <= self.clock.now():
            raise HTTPError(401, "Refresh token is no longer valid.")
        self.refreshes += 1
        return self.tokens_for(user)

    def _limit(self, client: str, route: str, per_minute: int) -> None:
        now = self.clock.now()
        with self._lock:
            hits = self._hits[(client, route)]
            while hits and hits[0] <= now - 60:
                hits.popleft()
            if len(hits) >= per_minute:
                message = f"Rate limit exceeded: {per_minute} per 1 minute"
                raise HTTPError(429, message, body={"error": message})
            hits.append(now)


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
