"""A validation error as one line a person can act on: the key's dotted path, what it expects."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from memsync.config.fields import PROVIDER_TYPES


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem as 'key.path: what is expected', plus a count of the others."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    location = _dotted(first["loc"])
    message = explain_error(first)
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{location}: {message}{more}" if location else f"{message}{more}"


def _dotted(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for i, part in enumerate(loc):
        # The discriminated union inserts the provider type into the location; drop it.
        if i >= 2 and loc[0] == "providers" and part in PROVIDER_TYPES and i == 2:
            continue
        if isinstance(part, str) and part.startswith("function-"):
            continue
        parts.append(str(part))
    return ".".join(parts)


def explain_error(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key (check its spelling; see `memsync init` for every key)"
    if kind == "missing":
        return "required key is missing"
    if kind == "union_tag_invalid":
        return f"unknown provider type; expected one of {', '.join(PROVIDER_TYPES)}"
    if kind == "union_tag_not_found":
        return f"missing 'type'; expected one of {', '.join(PROVIDER_TYPES)}"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    if kind.startswith("literal_error"):
        return message.replace("Input should be", "expected")
    if "input" in error and kind not in ("value_error",):
        return f"{message.replace('Input should be', 'expected')} (got {error['input']!r})"
    return message
