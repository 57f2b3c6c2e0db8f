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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from memsync.base.errors import MemsyncError
from memsync.config import SCOPE_KEYS, WILDCARD

MEM0_TYPES = ("mem0-oss", "mem0-server", "mem0-platform")
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


# --- config ------------------------------------------------------------------------------


def wildcard_keys(entry: Any) -> tuple[str, ...]:
    """The keys of a Mem0 provider's scope that are wildcards ("*"), in SCOPE_KEYS order."""
    scope = getattr(entry, "scope", None) or {}
    if getattr(entry, "type", None) not in MEM0_TYPES:
        return ()
    return tuple(k for k in SCOPE_KEYS if scope.get(k) == WILDCARD)


def fixed_keys(entry: Any) -> dict[str, str]:
    """The keys of a Mem0 provider's scope that hold one value beside the wildcards."""
    scope = getattr(entry, "scope", None) or {}
    return {k: v for k, v in scope.items() if v and v != WILDCARD}


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


def is_template(entry: Any) -> bool:
    return getattr(entry, "type", None) == "mnem" and bool(template_keys(str(entry.path)))


NAMESPACE_SEPARATOR = ":"  # mnem-langgraph joins namespace and key with it into a node id


def namespace_keys(template: Sequence[str]) -> tuple[str, ...]:
    """The scope keys a LangGraph namespace template names, each a whole segment
    (``["memories", "{user_id}"]``); ValueError for a segment that cannot be a namespace's."""
    keys: list[str] = []
    if not template:
        raise ValueError(
            'namespace is empty; name at least one segment, e.g. ["memories", "{user_id}"]'
        )
    for segment in template:
        if segment.startswith("{") and segment.endswith("}"):
            key = segment[1:-1]
            if key not in SCOPE_KEYS:
                raise ValueError(
                    f"namespace segment {segment!r} is not a scope key; a template names "
                    '"{user_id}", "{agent_id}", "{app_id}" or "{run_id}" as a whole segment'
                )
            if key not in keys:
                keys.append(key)
            continue
        problem = _segment_problem(segment)
        if problem or "{" in segment or "}" in segment:
            raise ValueError(
                f"namespace segment {segment!r} {problem or 'mixes text and a placeholder'}; "
                'write a placeholder as a whole segment ("{user_id}") and literal segments '
                f"without {NAMESPACE_SEPARATOR!r}"
            )
    return tuple(k for k in SCOPE_KEYS if k in keys)


def layout_namespace(entry: Any) -> tuple[str, ...] | None:
    """The namespace template of a mnem provider's LangGraph layout; None for other layouts."""
    if getattr(entry, "type", None) != "mnem":
        return None
    layout = getattr(entry, "layout", None)
    namespace = getattr(layout, "namespace", None)
    return tuple(namespace) if namespace is not None else None


def scoped_in_store(entry: Any) -> bool:
    """A mnem provider whose one store holds several scopes, one namespace each."""
    namespace = layout_namespace(entry)
    return namespace is not None and bool(namespace_keys(namespace))


def fill_namespace(template: Sequence[str], scope: Scope, *, provider: str) -> tuple[str, ...]:
    """The namespace of one scope; HostileScope when a value cannot be a namespace segment."""
    values = scope.as_dict()
    filled: list[str] = []
    for segment in template:
        if segment.startswith("{") and segment.endswith("}"):
            key = segment[1:-1]
            value = values.get(key)
            if value is None:
                raise HostileScope(
                    f"scope {scope.label}: no {key} to fill the namespace of "
                    f"providers.{provider}.layout"
                )
            problem = _segment_problem(value)
            if problem:
                raise HostileScope(
                    f"scope {scope.label}: refused: {key} {value!r} {problem}, so it cannot "
                    f"name a LangGraph namespace in providers.{provider}.layout (mnem-langgraph "
                    "joins namespace segments with ':'); nothing was written for this scope"
                )
            filled.append(value)
        else:
            filled.append(segment)
    return tuple(filled)


def place_in_namespace(template: Sequence[str], node_id: str) -> dict[str, str] | None:
    """The scope values a node id's namespace names under TEMPLATE (``{}`` for a template
    without placeholders), or None when the node lies outside every namespace it names."""
    parts = node_id.split(NAMESPACE_SEPARATOR)
    if len(parts) != len(template) + 1 or not parts[-1]:
        return None
    values: dict[str, str] = {}
    for segment, part in zip(template, parts, strict=False):
        if segment.startswith("{") and segment.endswith("}"):
            key = segment[1:-1]
            if not part or values.get(key, part) != part:
                return None
            values[key] = part
        elif segment != part:
            return None
    return values


def _segment_problem(value: str) -> str | None:
    if not value:
        return "is empty"
    if NAMESPACE_SEPARATOR in value:
        return f"contains {NAMESPACE_SEPARATOR!r}"
    if any(ord(c) < 32 for c in value):
        return "contains a control character"
    return None


def scoped_config_keys(providers: Mapping[str, Any]) -> tuple[str, ...]:
    """The wildcard keys of a config's scopes; () when no provider has a wildcard."""
    for entry in providers.values():
        keys = wildcard_keys(entry)
        if keys:
            return keys
    return ()


def check_scoped_config(providers: Mapping[str, Any]) -> None:
    """Providers beside wildcard scopes must fit them: same wildcard keys, templates over them.

    Raises ValueError (the config's validation turns it into one line naming the key).
    """
    wild = {name: wildcard_keys(entry) for name, entry in providers.items()}
    wild = {name: keys for name, keys in wild.items() if keys}
    templates = {
        name: _templated_keys(name, entry)
        for name, entry in providers.items()
        if is_template(entry) or scoped_in_store(entry)
    }
    if not wild and not templates:
        return
    if not wild:
        name, keys = next(iter(templates.items()))
        where = "path" if is_template(providers[name]) else "layout.namespace"
        raise ValueError(
            f"providers.{name}.{where} names {{{keys[0]}}}, but no Mem0 provider has a "
            f'wildcard scope such as scope = {{ {keys[0]} = "*" }} to fill it; write a fixed '
            "scope's namespace literally"
        )
    first, keys = next(iter(wild.items()))
    for name, other in wild.items():
        if other != keys:
            raise ValueError(
                f"providers.{name}.scope: wildcard keys {', '.join(other)} differ from "
                f"providers.{first}'s ({', '.join(keys)}); scopes are paired by the same keys"
            )
        entry = providers[name]
        if entry.type == "mem0-platform" and len(keys) > 1 and not fixed_keys(entry):
            raise ValueError(
                f"providers.{name}.scope: the Mem0 Platform lists users, agents, apps and runs "
                "apart (GET /v1/entities/), not which pairs hold memories; use one wildcard "
                'key, or fix the other keys (e.g. { user_id = "alice", app_id = "*" })'
            )
    for name, used in templates.items():
        if used == keys:
            continue
        wanted = ", ".join("{" + k + "}" for k in keys)
        if is_template(providers[name]):
            raise ValueError(
                f"providers.{name}.path: a template must name exactly the wildcard keys "
                f"({wanted}), so that each scope has a store of its own; write fixed keys "
                "literally"
            )
        raise ValueError(
            f"providers.{name}.layout.namespace: a template must name exactly the wildcard "
            f"keys ({wanted}), so that each scope has a namespace of its own in the store; "
            "write fixed keys literally"
        )
    for name, entry in providers.items():
        if name in wild or name in templates:
            continue
        if entry.type == "pmm-dir" and entry.scope_key is None:
            continue  # one file per scope key: holds every scope already
        raise ValueError(
            f"providers.{name}: a {entry.type} provider holds one scope and cannot sit beside "
            "wildcard scopes; give it the wildcard (Mem0), a path template (mnem, e.g. "
            '"~/agents/{' + keys[0] + '}/memory"), a LangGraph layout whose namespace names '
            'the keys (mnem, e.g. layout = { type = "langgraph", namespace = ["memories", '
            '"{' + keys[0] + '}"] }) or no scope_key (pmm-dir), or sync it from a config of '
            "its own"
        )


def _templated_keys(name: str, entry: Any) -> tuple[str, ...]:
    """The scope keys a mnem provider's path template or layout namespace names."""
    if is_template(entry) and scoped_in_store(entry):
        raise ValueError(
            f"providers.{name}: name the scope keys either in path (a store per scope) or in "
            "layout.namespace (one store, a namespace per scope), not in both; write the other "
            "literally"
        )
    namespace = layout_namespace(entry)
    if scoped_in_store(entry) and namespace is not None:
        return namespace_keys(namespace)
    return template_keys(str(entry.path))


# --- templates ---------------------------------------------------------------------------


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
