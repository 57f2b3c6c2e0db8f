"""Edits memsync makes to the user's config file, through a TOML library that keeps its layout.

The config is the user's file: comments, order and spacing survive every edit memsync makes.
"""

from __future__ import annotations

from pathlib import Path

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import String, StringType, Table

from memsync.base.errors import ConfigError
from memsync.base.files import write_private_text
from memsync.config import Config, parse_config


def set_active(config_text: str, name: str) -> str:
    """The config text with ``[sync] active`` set to NAME; everything else byte for byte."""
    try:
        document = tomlkit.parse(config_text)
    except TOMLKitError as exc:
        raise ConfigError(f"the config is not valid TOML ({exc}); fix it first") from exc
    sync = document.get("sync")
    if not isinstance(sync, Table):
        raise ConfigError("the config has no [sync] table to switch")
    if "active" not in sync:
        raise ConfigError('could not find `active = "..."` in [sync]; edit it by hand')
    sync["active"] = _in_the_same_quotes(sync["active"], name)
    return tomlkit.dumps(document)


def _in_the_same_quotes(old: object, name: str) -> String:
    """NAME as a TOML string quoted as the user quoted the old value: the edit changes the
    name and nothing else (tomlkit's own choice of quotes changed between 0.15.2 and 0.15.3)."""
    literal = (
        isinstance(old, String)
        and old.type is StringType.SLL
        and "'" not in name
        and "\n" not in name
    )
    return tomlkit.string(name, literal=literal)


def write_active(path: Path, name: str) -> Config:
    """Set ``[sync] active`` to NAME in the config file at PATH; the new config, validated
    before the file is replaced (a config memsync cannot load is never written)."""
    text = set_active(path.read_text(encoding="utf-8"), name)
    config = parse_config(text, source=str(path), base_dir=path.parent)
    write_private_text(path, text)
    return config
