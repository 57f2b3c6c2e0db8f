"""Edits memsync makes to the user's config file, through a TOML library that keeps its layout.

The config is the user's file: comments, order and spacing survive every edit memsync makes.
"""

from __future__ import annotations

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from memsync.errors import ConfigError


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
    sync["active"] = name
    return tomlkit.dumps(document)
