"""Reading a config: the file, its TOML, the model, and paths made relative to the file."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memsync.base.errors import ConfigError
from memsync.config.messages import describe_validation_error
from memsync.config.model import Config


def load_config(path: Path) -> Config:
    """Read, parse and validate the config file; every failure is one ConfigError line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no config file; create one with `memsync init` or pass --config PATH"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file; is this the right file?") from None
    return parse_config(text, source=str(path), base_dir=path.parent)


def parse_config(text: str, *, source: str = "config", base_dir: Path | None = None) -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_validation_error(exc)}") from None
    return _resolve_paths(config, base_dir or Path.cwd())


def _resolve_paths(config: Config, base_dir: Path) -> Config:
    """Expand ~ and make relative paths relative to the config file's directory."""

    def fix(path: Path | None) -> Path | None:
        if path is None:
            return None
        expanded = Path(os.path.expandvars(str(path))).expanduser()
        return expanded if expanded.is_absolute() else (base_dir / expanded)

    providers: dict[str, Any] = {}
    for name, provider in config.providers.items():
        updates: dict[str, Any] = {}
        for key in (
            "path",
            "api_key_file",
            "mem0_config_file",
            "refresh_token_file",
            "database_url_file",
            "scopes_file",
        ):
            if getattr(provider, key, None) is not None:
                updates[key] = fix(getattr(provider, key))
        providers[name] = provider.model_copy(update=updates) if updates else provider
    return config.model_copy(update={"providers": providers})
