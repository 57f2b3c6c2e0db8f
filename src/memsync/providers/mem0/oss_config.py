"""The Mem0 library's config as memsync runs it: no phone home, no LLM, paths and keys known.

- No phone home: ``MEM0_TELEMETRY=False`` (unless ``telemetry = true``) and ``MEM0_DIR`` in
  memsync's state directory are set before mem0 is first imported.
- No LLM: every write passes ``infer=False``. The config's LLM section is replaced by a
  placeholder on a closed loopback port, so construction needs no key and a stray call fails
  at once instead of spending tokens. A missing embedder key gets the same placeholder: pulls
  work, writes fail with a message that says what to set.

The config comes inline or from a JSON/YAML file (store paths relative to that file); every
secret-looking value in it is collected so that messages can be redacted of it.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from memsync.base.errors import ConfigError
from memsync.base.paths import make_private_dir
from memsync.base.scopes import SCOPE_KEYS
from memsync.base.secrets import Secret
from memsync.config import PLATFORM_ONLY_KEYS, Mem0OssConfig

DEAD_ENDPOINT = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, calls fail at once
PLACEHOLDER_KEY = "memsync-placeholder-not-a-key"
_SECRET_NAMES = ("api_key", "apikey", "key", "token", "secret", "password", "credentials")


def prepare_mem0_environment(*, telemetry: bool, mem0_dir: Path | None) -> None:
    """Before the first ``import mem0``: telemetry off unless asked for, MEM0_DIR set.

    mem0 reads both variables once, at import. If the host process imported mem0 already,
    its telemetry switch is turned off in place so the promise still holds.
    """
    if not telemetry:
        os.environ["MEM0_TELEMETRY"] = "False"
        for module_name in ("mem0.memory.telemetry", "mem0.memory.main"):
            module = sys.modules.get(module_name)
            if module is not None and getattr(module, "MEM0_TELEMETRY", False):
                setattr(module, "MEM0_TELEMETRY", False)  # noqa: B010 - mem0's own switch
    if mem0_dir is not None and not os.environ.get("MEM0_DIR"):
        make_private_dir(mem0_dir)
        os.environ["MEM0_DIR"] = str(mem0_dir)


def load_mem0_config(name: str, entry: Mem0OssConfig) -> dict[str, Any]:
    """The Mem0 config dict: inline, from a JSON/YAML file, or empty (Mem0's defaults)."""
    if entry.mem0_config is not None:
        return copy.deepcopy(entry.mem0_config)
    if entry.mem0_config_file is None:
        return {}
    path = Path(entry.mem0_config_file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"providers.{name}: cannot read mem0_config_file {path} ({exc.strerror})"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"providers.{name}: mem0_config_file {path} is not UTF-8 text") from None
    data: Any
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"providers.{name}: mem0_config_file {path} is not valid JSON (line {exc.lineno})"
            ) from None
    else:
        try:
            data = yaml.safe_load(text)  # YAML is a superset of JSON: takes both
        except yaml.YAMLError as exc:  # the message may quote the line: show only where
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ConfigError(
                f"providers.{name}: mem0_config_file {path} is not valid YAML or JSON{where}"
            ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"providers.{name}: mem0_config_file {path} must hold a mapping "
            "(the dict you pass to Memory.from_config)"
        )
    return _resolve_store_paths(data, path.parent)


def _resolve_store_paths(config: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative store paths in a config file are relative to that file, as a reader expects."""

    def fix(value: Any) -> Any:
        if not isinstance(value, str) or value == ":memory:" or not value:
            return value
        expanded = Path(os.path.expandvars(value)).expanduser()
        return str(expanded if expanded.is_absolute() else base / expanded)

    store = config.get("vector_store")
    settings = store.get("config") if isinstance(store, dict) else None
    if isinstance(settings, dict) and "path" in settings:
        settings["path"] = fix(settings["path"])
    if "history_db_path" in config:
        config["history_db_path"] = fix(config["history_db_path"])
    return config


def offline_config(
    config: Mapping[str, Any],
    *,
    embedder: str,
    api_key: Secret | None,
    application_mem0_dir: str,
) -> tuple[dict[str, Any], bool]:
    """The config memsync constructs Memory with, and whether the embedder is a placeholder.

    The LLM is always the dead placeholder (memsync never calls it). ``embedder = "hash"``
    gets a placeholder too (the hash embedder replaces it after construction); a configured
    OpenAI embedder without any key gets one so that pulls still work. The history database
    defaults to the application's (``$MEM0_DIR`` or ``~/.mem0``), not memsync's MEM0_DIR.
    """
    prepared = copy.deepcopy(dict(config))
    prepared["llm"] = {
        "provider": "openai",
        "config": {
            "api_key": PLACEHOLDER_KEY,
            "openai_base_url": DEAD_ENDPOINT,
            "model": "gpt-4o-mini",
        },
    }
    placeholder = False
    if embedder == "hash":
        prepared["embedder"] = _placeholder_embedder(_configured_dims(prepared))
    else:
        section = copy.deepcopy(prepared.get("embedder") or {})
        settings = dict(section.get("config") or {})
        if api_key is not None:
            settings["api_key"] = api_key.reveal()
        elif (
            section.get("provider", "openai") == "openai"
            and not settings.get("api_key")
            and not os.environ.get("OPENAI_API_KEY")
        ):
            settings["api_key"] = PLACEHOLDER_KEY
            settings["openai_base_url"] = DEAD_ENDPOINT
            placeholder = True
        section["config"] = settings
        prepared["embedder"] = section
    prepared.setdefault("history_db_path", os.path.join(application_mem0_dir, "history.db"))
    return prepared, placeholder


def _configured_dims(config: Mapping[str, Any]) -> int | None:
    store = config.get("vector_store")
    settings = store.get("config") if isinstance(store, dict) else None
    dims = settings.get("embedding_model_dims") if isinstance(settings, dict) else None
    return dims if isinstance(dims, int) else None


def _placeholder_embedder(dims: int | None) -> dict[str, Any]:
    settings: dict[str, Any] = {"api_key": PLACEHOLDER_KEY, "openai_base_url": DEAD_ENDPOINT}
    if dims:
        settings["embedding_dims"] = dims
    return {"provider": "openai", "config": settings}


def secrets_in(config: Any, found: list[Secret] | None = None) -> list[Secret]:
    """Every secret-looking string in a config, so messages can be redacted of them."""
    found = [] if found is None else found
    if isinstance(config, Mapping):
        for key, value in config.items():
            lowered = str(key).lower()
            if isinstance(value, str) and value and any(s in lowered for s in _SECRET_NAMES):
                found.append(Secret(value, f"mem0 config {key}"))
            else:
                secrets_in(value, found)
    elif isinstance(config, list):
        for value in config:
            secrets_in(value, found)
    return found


def application_mem0_dir(ours: Path | None) -> str:
    """Where the application's Mem0 keeps its files: its MEM0_DIR, else ~/.mem0."""
    current = os.environ.get("MEM0_DIR")
    if current and (ours is None or Path(current) != Path(ours)):
        return current
    return os.path.join(os.path.expanduser("~"), ".mem0")


def normalise_scope(name: str, scope: Mapping[str, Any]) -> dict[str, str]:
    """The scope as Mem0 stores it (trimmed strings); Mem0 refuses ids containing spaces."""
    clean: dict[str, str] = {}
    for key in PLATFORM_ONLY_KEYS:
        if scope.get(key):
            raise ConfigError(
                f"providers.{name}.scope.{key}: the Mem0 library has no {key} (only user_id, "
                "agent_id and run_id); an app scope exists on the Mem0 Platform alone"
            )
    for key in SCOPE_KEYS:
        value = scope.get(key)
        if value is None or str(value).strip() == "":
            continue
        text = str(value).strip()
        if any(c.isspace() for c in text):
            raise ConfigError(f"providers.{name}.scope.{key}: Mem0 ids cannot contain whitespace")
        clean[key] = text
    if not clean:
        raise ConfigError(
            f"providers.{name}.scope: expected at least one of user_id, agent_id or run_id"
        )
    return clean


# listing --------------------------------------------------------------------------------
