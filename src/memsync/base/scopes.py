"""The scope model: wildcard Mem0 scopes, the concrete scopes they expand to, mnem templates.

A scope is made of the Mem0 Platform's entity keys (``SCOPE_KEYS``: user, agent, app, run;
the Mem0 library and server have no app). ``scope = { user_id = "*" }`` names every user a
Mem0 store holds. Each one found is a
concrete ``Scope`` (the wildcard keys' values), synced on its own under provider names such
as ``mem0[user_id=alice]``. A mnem ``path`` may be a template over the wildcard keys
(``"~/agents/{agent_id}/memory"``): each scope gets its own store, and a scope key that would
name a path outside the template's root is refused (``HostileScope``). A mnem LangGraph
layout's namespace may be a template too (``["memories", "{user_id}"]``): then one store holds
every scope, each in its own namespace (``namespace_keys``, ``fill_namespace``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from memsync.base.errors import MemsyncError

# The Mem0 Platform's entity keys, in the order a scope names them (the library and the server
# have no app).
SCOPE_KEYS = ("user_id", "agent_id", "app_id", "run_id")
WILDCARD = "*"  # a scope key's value meaning "every one the store holds"
# Characters of a scope value kept as they are in a provider name; the rest is %-encoded,
# so ',', '=', '[' and ']' can never be confused with the name's own separators.
_NAME_SAFE = "@.-_~:+!$'()*;"
_SCOPED_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\[(.+)\]$")


class HostileScope(MemsyncError):
    """A scope key that cannot fill a path template safely ('..', '/', NUL, leaves the root)."""


@dataclass(frozen=True, order=True)
class Scope:
    """One concrete scope: each wildcard key with the value found for it, in SCOPE_KEYS order."""

    items: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, values: Mapping[str, str]) -> Scope:
        return cls(tuple((k, str(values[k])) for k in SCOPE_KEYS if k in values))

    @classmethod
    def parse(cls, text: str) -> Scope:
        """'user_id=alice' or 'user_id=alice,agent_id=bot' (as --scope and names spell it)."""
        values: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.strip().partition("=")
            if not sep or key not in SCOPE_KEYS or not value:
                raise MemsyncError(
                    f"--scope {text!r}: expected KEY=VALUE[,KEY=VALUE] with keys from "
                    f"{', '.join(SCOPE_KEYS)}, e.g. --scope user_id=alice"
                )
            values[key] = unquote(value)
        return cls.of(values)

    def as_dict(self) -> dict[str, str]:
        return dict(self.items)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.items)

    @property
    def label(self) -> str:
        """'user_id=alice,agent_id=bot': how the scope is named in provider names and reports."""
        return ",".join(f"{k}={quote(v, safe=_NAME_SAFE)}" for k, v in self.items)

    @property
    def pmm_key(self) -> str:
        """The PMM scope_key (and pmm-dir file) of the scope: its value, or values joined by +."""
        if len(self.items) == 1:
            return self.items[0][1]
        return "+".join(quote(v, safe="@.-_~:") for _, v in self.items)

    @classmethod
    def from_pmm_key(cls, key: str, keys: tuple[str, ...]) -> Scope | None:
        """The scope whose ``pmm_key`` is KEY, keyed by KEYS (a pmm-dir file's, a backup's);
        None when KEY cannot be one."""
        if not key:
            return None
        if len(keys) == 1:
            return cls.of({keys[0]: key})
        parts = key.split("+")
        if len(parts) != len(keys) or not all(parts):
            return None
        return cls.of({k: unquote(v) for k, v in zip(keys, parts, strict=True)})

    def __str__(self) -> str:
        return self.label


def scoped_name(provider: str, scope: Scope) -> str:
    """The name a provider bound to one scope has in staging, reports and status."""
    return f"{provider}[{scope.label}]"


def split_scoped_name(name: str) -> tuple[str, Scope] | None:
    """('mem0', Scope) for 'mem0[user_id=alice]'; None for a plain provider name."""
    match = _SCOPED_NAME.match(name)
    if match is None:
        return None
    try:
        return match.group(1), Scope.parse(match.group(2))
    except MemsyncError:
        return None


def template_keys(template: str) -> tuple[str, ...]:
    """The scope keys a mnem path template names (empty for a plain path)."""
    keys: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        raise ValueError(
            f"path {template!r}: unbalanced braces; a template names scope keys as "
            '"{user_id}", "{agent_id}", "{app_id}" or "{run_id}"'
        ) from None
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in SCOPE_KEYS or spec or conversion:
            raise ValueError(
                f"path {template!r}: {{{field}}} is not a scope key; a template names "
                '"{user_id}", "{agent_id}", "{app_id}" or "{run_id}"'
            )
        if field not in keys:
            keys.append(field)
    return tuple(k for k in SCOPE_KEYS if k in keys)


# --- mnem path templates -----------------------------------------------------------------


def template_root(template: Path) -> Path:
    """The part of a template path before its first placeholder: no scope may leave it."""
    parts: list[str] = []
    for part in template.parts:
        if "{" in part:
            break
        parts.append(part)
    return Path(*parts) if parts else Path(".")


def fill_template(template: Path, scope: Scope, *, provider: str) -> Path:
    """The store path of one scope; HostileScope when a key could name a path outside the root."""
    values = scope.as_dict()
    for key, value in values.items():
        problem = _unsafe_component(value)
        if problem:
            raise HostileScope(
                f"scope {scope.label}: refused: {key} {value!r} {problem}, so it cannot name a "
                f"store under {template_root(template)} (providers.{provider}.path); nothing "
                "was written for this scope"
            )
    path = Path(str(template).format(**values))
    root = template_root(template).resolve()
    if not path.resolve().is_relative_to(root):
        raise HostileScope(
            f"scope {scope.label}: refused: its store {path} would lie outside {root} "
            f"(providers.{provider}.path; a symbolic link?); nothing was written for this scope"
        )
    return path


def _unsafe_component(value: str) -> str | None:
    if value in ("", ".", ".."):
        return "is not a directory name"
    if "\x00" in value:
        return "contains a NUL byte"
    if "/" in value or "\\" in value:
        return "contains a path separator"
    if any(ord(c) < 32 for c in value):
        return "contains a control character"
    return None
