"""Wildcard scopes in the config, scope names, and path templates: what is refused, and how."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memsync.base.errors import ConfigError, MemsyncError
from memsync.base.scopes import (
    HostileScope,
    Scope,
    fill_template,
    scoped_name,
    split_scoped_name,
    template_root,
)
from memsync.config import parse_config

MEM0 = '[providers.mem0]\ntype = "mem0-oss"\nscope = {scope}\n'
MNEM = '[providers.agents]\ntype = "mnem"\npath = "{path}"\n'


def config(*tables: str) -> str:
    return '[sync]\nactive = "mem0"\n' + "\n".join(tables)


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    return str(caught.value)


def test_a_wildcard_config_with_a_template_and_a_pmm_dir_parses() -> None:
    parsed = parse_config(
        config(
            MEM0.format(scope='{ user_id = "*", agent_id = "bot" }'),
            MNEM.format(path="/srv/agents/bot/{user_id}") + "create = true\n",
            '[providers.backup]\ntype = "pmm-dir"\npath = "/srv/backup"\n',
        )
    )
    agents = parsed.providers["agents"]
    assert agents.type == "mnem" and agents.create is True
    assert str(agents.path) == "/srv/agents/bot/{user_id}"


@pytest.mark.parametrize(
    ("tables", "expected"),
    [
        ((MEM0.format(scope='{ user_id = "al*" }'),), '"*" is a wildcard only on its own'),
        (
            (
                MEM0.format(scope='{ user_id = "*" }'),
                '[providers.other]\ntype = "mem0-oss"\nscope = { agent_id = "*" }\n',
            ),
            "providers.other.scope: wildcard keys agent_id differ",
        ),
        (
            (MEM0.format(scope='{ user_id = "*" }'), MNEM.format(path="/a/{agent_id}")),
            "providers.agents.path: a template must name exactly the wildcard keys ({user_id})",
        ),
        (
            (MEM0.format(scope='{ user_id = "alice" }'), MNEM.format(path="/a/{user_id}")),
            "providers.agents.path names {user_id}, but no Mem0 provider has a wildcard",
        ),
        (
            (MEM0.format(scope='{ user_id = "*" }'), MNEM.format(path="/a/one-store")),
            "providers.agents: a mnem provider holds one scope and cannot sit beside wildcard",
        ),
        (
            (
                MEM0.format(scope='{ user_id = "*" }'),
                '[providers.backup]\ntype = "pmm-dir"\npath = "/b"\nscope_key = "alice"\n',
            ),
            "providers.backup: a pmm-dir provider holds one scope",
        ),
        (
            (MEM0.format(scope='{ user_id = "*" }'), MNEM.format(path="/a/{user_id}/{oops")),
            "unbalanced braces",
        ),
        (
            (MEM0.format(scope='{ user_id = "*" }'), MNEM.format(path="/a/{home}")),
            "{home} is not a scope key",
        ),
    ],
)
def test_scopes_that_do_not_fit_together_are_refused_naming_the_key(
    tables: tuple[str, ...], expected: str
) -> None:
    assert expected in refused(config(*tables))


def test_two_wildcards_on_the_platform_need_a_fixed_key() -> None:
    platform = (
        '[providers.mem0]\ntype = "mem0-platform"\napi_key_env = "K"\n'
        'scope = { user_id = "*", agent_id = "*" }\n'
    )
    assert "use one wildcard key, or fix the other keys" in refused(config(platform))


def test_scope_names_round_trip_whatever_the_value_holds() -> None:
    scope = Scope.of({"agent_id": "bot,v=2]", "user_id": "alice@example.com"})
    assert scope.keys == ("user_id", "agent_id")  # SCOPE_KEYS order, whatever was given
    name = scoped_name("mem0", scope)
    assert name == "mem0[user_id=alice@example.com,agent_id=bot%2Cv%3D2%5D]"
    assert split_scoped_name(name) == ("mem0", scope)
    assert Scope.parse("user_id=alice@example.com,agent_id=bot%2Cv%3D2%5D") == scope
    assert split_scoped_name("mem0") is None
    with pytest.raises(MemsyncError, match="expected KEY=VALUE"):
        Scope.parse("alice")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("..", "is not a directory name"),
        (".", "is not a directory name"),
        ("a/b", "contains a path separator"),
        ("a\\b", "contains a path separator"),
        ("a\x00b", "contains a NUL byte"),
        ("a\nb", "contains a control character"),
    ],
)
def test_hostile_scope_keys_cannot_fill_a_template(tmp_path: Path, value: str, why: str) -> None:
    template = tmp_path / "agents" / "{user_id}" / "memory"
    with pytest.raises(HostileScope) as caught:
        fill_template(template, Scope.of({"user_id": value}), provider="agents")
    message = str(caught.value)
    assert why in message and "providers.agents.path" in message
    assert message.startswith(f"scope {Scope.of({'user_id': value}).label}: refused")


def test_a_symbolic_link_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    root.mkdir()
    os.symlink(tmp_path / "elsewhere", root / "mallory")
    template = root / "{user_id}" / "memory"
    assert template_root(template) == root
    assert fill_template(template, Scope.of({"user_id": "alice"}), provider="agents") == (
        root / "alice" / "memory"
    )
    with pytest.raises(HostileScope, match="would lie outside"):
        fill_template(template, Scope.of({"user_id": "mallory"}), provider="agents")
