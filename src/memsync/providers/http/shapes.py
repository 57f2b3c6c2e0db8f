"""The JSON shapes a provider expects from a response, or InvalidResponse naming where."""

from __future__ import annotations

from typing import Any

from memsync.base.errors import InvalidResponse


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
