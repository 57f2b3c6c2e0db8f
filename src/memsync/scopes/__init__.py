"""Scopes: everything memsync knows about syncing a team per user, agent or run.

One package for one idea, as Syncthing gives a folder's life one package (``lib/model``):

- ``model``: what a scope is (``Scope``), the names scoped providers have in staging, the
  wildcard and template keys of a config, mnem path templates;
- ``discovery``: which scopes a wildcard provider holds;
- ``binding``: the configured providers bound to one scope (``mem0`` → ``mem0[user_id=alice]``);
- ``cycle``: one run over every scope, each an engine cycle of its own;
- ``report``: what such a run reports, scope by scope;
- ``views``: scopes as ``status``, ``log``, ``verify`` and ``check`` show them;
- ``watch``, ``probes``, ``triggers``: the daemon's live side, where a changed local store or a
  remote store's probe starts a cycle for only the scopes it names.

A mnem store made on a scope's first write is a mnem provider (``providers/mnem/on_demand``).

Only the model is imported here, so that providers and the config (which sit below the sync
layer) can use ``from memsync.scopes import Scope`` without pulling in the cycle.
"""

from memsync.scopes.model import (
    MEM0_TYPES,
    HostileScope,
    Scope,
    check_scoped_config,
    fill_namespace,
    fill_template,
    fixed_keys,
    is_template,
    namespace_keys,
    place_in_namespace,
    scoped_config_keys,
    scoped_in_store,
    scoped_name,
    split_scoped_name,
    template_keys,
    template_root,
    wildcard_keys,
)

__all__ = [
    "MEM0_TYPES",
    "HostileScope",
    "Scope",
    "check_scoped_config",
    "fill_namespace",
    "fill_template",
    "fixed_keys",
    "is_template",
    "namespace_keys",
    "place_in_namespace",
    "scoped_config_keys",
    "scoped_in_store",
    "scoped_name",
    "split_scoped_name",
    "template_keys",
    "template_root",
    "wildcard_keys",
]
