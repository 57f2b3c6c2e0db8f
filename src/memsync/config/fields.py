"""The pieces every config model is built from: strict tables, durations, scopes, secret keys.

A key that would carry a secret inline is refused, with how to pass one instead.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from memsync.base.scopes import SCOPE_KEYS, WILDCARD

PROVIDER_TYPES = (
    "mem0-oss",
    "mem0-server",
    "mem0-platform",
    "mnem",
    "hindsight",
    "cognee",
    "pmm-dir",
)

# app_id, of the Mem0 Platform's four entity types (SCOPE_KEYS), exists on the Platform alone.
PLATFORM_ONLY_KEYS = ("app_id",)

# Keys that would carry a secret inline; refused with a message that says how to pass one.
SECRET_KEYS = {
    "api_key",
    "apikey",
    "key",
    "token",
    "secret",
    "password",
    "bearer",
    "refresh_token",
}

SECRET_HINT = (
    'secrets are never read from the config file; set api_key_env = "VARIABLE_NAME" '
    '(an environment variable holding the key) or api_key_file = "path/to/file"'
)

# A database URL carries a password: never in the config either.
DATABASE_KEYS = {
    "database_url",
    "database",
    "dsn",
    "connection_string",
    "history_database_url",
}
DATABASE_HINT = (
    "a database URL carries a password and is never read from the config file; set "
    'database_url_env = "VARIABLE_NAME" (a variable holding postgresql://...) or '
    'database_url_file = "path/to/file"'
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: str | int | float) -> float:
    """'90s', '5m', '1h', '1d' or a number of seconds, as seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '30s', '5m', '1h' or '1d'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif not isinstance(value, str):
        raise ValueError(f"expected a duration such as '30s', '5m', '1h' or '1d', got {value!r}")
    else:
        match = _DURATION.match(value)
        if not match:
            raise ValueError(
                f"expected a duration such as '30s', '5m', '1h' or '1d', got {value!r}"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise ValueError("expected a duration greater than zero")
    return seconds


def parse_optional_duration(value: Any) -> float | None:
    """A duration, or None for "off" (or no value)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "off"):
        return None
    return parse_duration(value)


_RATE = re.compile(r"^\s*(\d+)\s*/\s*(.+?)\s*$")


def parse_rate(value: Any) -> tuple[int, float]:
    """'1000/1m' (requests per window) as (requests, seconds)."""
    if isinstance(value, list | tuple) and len(value) == 2:
        requests, window = value
    else:
        match = _RATE.match(value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f"expected requests per window such as '1000/1m', got {value!r}")
        requests, window = match.group(1), match.group(2)
    try:
        count = int(requests)
    except (TypeError, ValueError):
        raise ValueError(f"expected a whole number of requests, got {requests!r}") from None
    if count < 1:
        raise ValueError("expected at least one request a window")
    return count, parse_duration(window)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(value: str | int) -> int:
    """'1GB' (10^9 bytes), '500 MB', '2GiB' (2^30) or a number of bytes, as bytes."""
    example = "expected a size such as '1GB', '500MB' or '2GiB'"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{example}, got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.match(value)
        if not match:
            raise ValueError(f"{example}, got {value!r}")
        size = int(float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "b").lower()])
    if size <= 0:
        raise ValueError("expected a size greater than zero")
    return size


class Strict(BaseModel):
    """Every table: an unknown key is an error, and a loaded config never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def globs(value: Any) -> Any:
    """A list of id globs; one bare string is refused with the list it should be."""
    if isinstance(value, str):
        raise ValueError(f'expected a list of globs, e.g. ids = ["{value}"]')
    return value


def variable_name(value: str | None, key: str) -> str | None:
    """The NAME of an environment variable holding a secret, never the secret itself."""
    if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        hint = DATABASE_HINT if key.startswith("database") else SECRET_HINT
        raise ValueError(
            "expected the NAME of an environment variable (letters, digits, _), "
            "not the secret itself; " + hint
        )
    return value


def check_scope(scope: dict[str, str]) -> dict[str, str]:
    """A scope of known keys, at least one set, "*" only as a whole value (a wildcard)."""
    unknown = sorted(set(scope) - set(SCOPE_KEYS))
    if unknown:
        raise ValueError(f"unknown scope key(s) {unknown}; allowed: {', '.join(SCOPE_KEYS)}")
    for key, value in scope.items():
        if WILDCARD in value and value != WILDCARD:
            raise ValueError(
                f'{key} = {value!r}: "*" is a wildcard only on its own ({key} = "*" syncs '
                "every one); patterns are not supported"
            )
    if not any(scope.get(k) for k in SCOPE_KEYS):
        raise ValueError(
            "expected at least one of user_id, agent_id, app_id or run_id, e.g. "
            "scope = { user_id = \"alice\" }; Mem0 has no 'list everything' call"
        )
    return scope


def no_platform_only_keys(scope: dict[str, str]) -> dict[str, str]:
    """The Mem0 library and the self-hosted server know users, agents and runs, not apps."""
    for key in PLATFORM_ONLY_KEYS:
        if key in scope:
            raise ValueError(
                f"{key} is a Mem0 Platform key: the Mem0 library and the self-hosted server "
                "store only user_id, agent_id and run_id (mem0 8d5b786), so an app cannot be "
                "a scope there; remove it, or scope by user_id, agent_id or run_id"
            )
    return scope
