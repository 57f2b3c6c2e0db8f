"""What a provider that holds many scopes says of them (``Provider.discover``).

A wildcard provider (``user_id = "*"``) is synced one scope at a time, so the run over scopes
first asks it which users, agents, apps or runs it holds. Each provider finds them its own way
(a Mem0 server's ``GET /entities``, a pmm-dir's files, a mnem store's namespaces...), and says
when it could not see them all (``complete = False``): scopes it missed are not new this
cycle, and scopes known from earlier cycles are still synced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memsync.base.scopes import Scope

# What `memsync check` advises where a discovery cannot be shown complete, unless the
# provider knows better (a Mem0 server: its database, or a scopes_file).
NAME_EACH_SCOPE = "name each scope in a provider of its own, or see docs/configuration.md"


@dataclass
class Discovery:
    """The scopes a provider holds, as values of the run's wildcard keys."""

    scopes: set[Scope] = field(default_factory=set)
    complete: bool = True
    note: str | None = None  # why it is not complete (or, complete, what else was seen)
    source: str | None = None  # how the scopes were found ("database", "GET /entities"...)
    advice: str = NAME_EACH_SCOPE  # what would let it see every scope


def scope_of(
    fields: Mapping[str, Any], keys: tuple[str, ...], fixed: Mapping[str, str]
) -> Scope | None:
    """The scope a memory belongs to, or None when it lacks a wildcard key or a fixed one."""
    values: dict[str, str] = {}
    for key in keys:
        value = fields.get(key)
        if value is None or str(value) == "":
            return None
        values[key] = str(value)
    if any(str(fields.get(k)) != v for k, v in fixed.items()):
        return None
    return Scope.of(values)


def scopes_of(
    rows: Iterable[Mapping[str, Any]], keys: tuple[str, ...], fixed: Mapping[str, str]
) -> set[Scope]:
    """The scopes of the memories ROWS, those outside the fixed keys left out."""
    found = (scope_of(row, keys, fixed) for row in rows)
    return {scope for scope in found if scope is not None}


__all__ = ["NAME_EACH_SCOPE", "Discovery", "scope_of", "scopes_of"]
