"""How a config's providers are scoped: wildcard Mem0 scopes, mnem templates, and whether they fit.

Read from the config's entries (each type's fields); the config's validation calls
``check_scoped_config`` and turns its ValueError into one line naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memsync.base.mnem_items import namespace_keys
from memsync.base.scopes import SCOPE_KEYS, WILDCARD, template_keys

MEM0_TYPES = ("mem0-oss", "mem0-server", "mem0-platform")


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


def is_template(entry: Any) -> bool:
    return getattr(entry, "type", None) == "mnem" and bool(template_keys(str(entry.path)))


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


def sharded(entry: Any) -> bool:
    """A mnem provider whose path is a root holding a store per namespace
    (``layout.stores = "per-namespace"``, ``base/mnem_shards``)."""
    layout = getattr(entry, "layout", None) if getattr(entry, "type", None) == "mnem" else None
    return getattr(layout, "stores", "one") == "per-namespace"


def store_per_scope(entry: Any) -> bool:
    """A mnem provider with a store per scope: a path template, or a sharded root whose
    namespace names scope keys."""
    return is_template(entry) or (sharded(entry) and scoped_in_store(entry))


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
    for name, entry in providers.items():
        if sharded(entry) and is_template(entry):
            raise ValueError(
                f'providers.{name}.path: with stores = "per-namespace" the path is the one '
                "root holding a store per namespace; name the scope keys in layout.namespace, "
                "not in path"
            )
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
