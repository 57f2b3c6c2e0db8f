"""The TOML configuration: a validated model, and errors that name the key and what it expects.

Unknown keys are errors (a typo must never be silently ignored) and secrets are never read
from the config itself: only ``api_key_env`` (a variable's name) or ``api_key_file`` (a path).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from memsync.base.errors import ConfigError
from memsync.base.exclude import check_glob
from memsync.base.mnem_items import namespace_keys
from memsync.base.pmm import DEFAULT_MAX_CONTENT_BYTES
from memsync.base.scopes import SCOPE_KEYS, WILDCARD, template_keys
from memsync.config.address import check_exposure, parse_listen
from memsync.config.scoping import check_scoped_config

PROVIDER_TYPES = (
    "mem0-oss",
    "mem0-server",
    "mem0-platform",
    "mnem",
    "hindsight",
    "cognee",
    "pmm-dir",
)
# app_id, of the Mem0 Platform's four entity types (SCOPE_KEYS), exists on the Platform alone.
PLATFORM_ONLY_KEYS = ("app_id",)

# Keys that would carry a secret inline; refused with a message that says how to pass one.
_SECRET_KEYS = {
    "api_key",
    "apikey",
    "key",
    "token",
    "secret",
    "password",
    "bearer",
    "refresh_token",
}
_SECRET_HINT = (
    'secrets are never read from the config file; set api_key_env = "VARIABLE_NAME" '
    '(an environment variable holding the key) or api_key_file = "path/to/file"'
)

# A database URL carries a password: never in the config either.
_DATABASE_KEYS = {"database_url", "database", "dsn", "connection_string"}
_DATABASE_HINT = (
    "a database URL carries a password and is never read from the config file; set "
    'database_url_env = "VARIABLE_NAME" (a variable holding postgresql://...) or '
    'database_url_file = "path/to/file"'
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: str | int | float) -> float:
    """'90s', '5m', '1h', '1d' or a number of seconds, as seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '30s', '5m', '1h' or '1d'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif not isinstance(value, str):
        raise ValueError(f"expected a duration such as '30s', '5m', '1h' or '1d', got {value!r}")
    else:
        match = _DURATION.match(value)
        if not match:
            raise ValueError(
                f"expected a duration such as '30s', '5m', '1h' or '1d', got {value!r}"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise ValueError("expected a duration greater than zero")
    return seconds


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _globs(value: Any) -> Any:
    if isinstance(value, str):
        raise ValueError(f'expected a list of globs, e.g. ids = ["{value}"]')
    return value


class ExcludeConfig(_Strict):
    """``exclude``: records memsync leaves alone (``memsync.base.exclude``), by id glob."""

    ids: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _kinds_are_mnem_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and "content_kinds" in data and cls is ExcludeConfig:
            raise ValueError("content_kinds: only mnem stores have content kinds; use ids (globs)")
        return data

    _as_list = field_validator("ids", mode="before")(classmethod(lambda cls, v: _globs(v)))
    _checked = field_validator("ids")(
        classmethod(lambda cls, v: tuple(check_glob(glob) for glob in v))
    )


class MnemExcludeConfig(ExcludeConfig):
    """mnem's ``exclude`` also takes node content kinds."""

    content_kinds: tuple[Literal["note", "claim"], ...] = ()

    @model_validator(mode="after")
    def _not_every_kind(self) -> MnemExcludeConfig:
        if {"note", "claim"} <= set(self.content_kinds):
            raise ValueError(
                "content_kinds = ['note', 'claim'] excludes every node; to stop syncing this "
                "store, remove it from the config"
            )
        return self


class ProviderBase(_Strict):
    """Keys every provider accepts."""

    type: str
    direction: Literal["pull", "push", "both"] = "both"
    exclude: ExcludeConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_inline_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if str(key).lower() in _DATABASE_KEYS:
                    raise ValueError(f"'{key}': {_DATABASE_HINT}")
                if str(key).lower() in _SECRET_KEYS:
                    raise ValueError(f"'{key}': {_SECRET_HINT}")
        return data


def _variable_name(value: str | None, key: str) -> str | None:
    if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        hint = _DATABASE_HINT if key.startswith("database") else _SECRET_HINT
        raise ValueError(
            "expected the NAME of an environment variable (letters, digits, _), "
            "not the secret itself; " + hint
        )
    return value


class _Authenticated(ProviderBase):
    api_key_env: str | None = None
    api_key_file: Path | None = None

    @model_validator(mode="after")
    def _one_secret_source(self) -> _Authenticated:
        if self.api_key_env and self.api_key_file:
            raise ValueError("set api_key_env or api_key_file, not both")
        return self

    _looks_like_a_name = field_validator("api_key_env")(
        classmethod(lambda cls, v: _variable_name(v, "api_key_env"))
    )


class _Http(_Authenticated):
    base_url: str
    timeout: float = Field(default=30.0, gt=0)
    allow_insecure_http: bool = False
    concurrency: int = Field(default=8, ge=1, le=64)  # writes and point reads in flight

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")


def _check_scope(scope: dict[str, str]) -> dict[str, str]:
    unknown = sorted(set(scope) - set(SCOPE_KEYS))
    if unknown:
        raise ValueError(f"unknown scope key(s) {unknown}; allowed: {', '.join(SCOPE_KEYS)}")
    for key, value in scope.items():
        if WILDCARD in value and value != WILDCARD:
            raise ValueError(
                f'{key} = {value!r}: "*" is a wildcard only on its own ({key} = "*" syncs '
                "every one); patterns are not supported"
            )
    if not any(scope.get(k) for k in SCOPE_KEYS):
        raise ValueError(
            "expected at least one of user_id, agent_id, app_id or run_id, e.g. "
            "scope = { user_id = \"alice\" }; Mem0 has no 'list everything' call"
        )
    return scope


def _no_platform_only_keys(scope: dict[str, str]) -> dict[str, str]:
    """The Mem0 library and the self-hosted server know users, agents and runs, not apps."""
    for key in PLATFORM_ONLY_KEYS:
        if key in scope:
            raise ValueError(
                f"{key} is a Mem0 Platform key: the Mem0 library and the self-hosted server "
                "store only user_id, agent_id and run_id (mem0 8d5b786), so an app cannot be "
                "a scope there; remove it, or scope by user_id, agent_id or run_id"
            )
    return scope


class Mem0OssConfig(_Authenticated):
    """Mem0's library in-process. api_key_env/api_key_file: the embedder's key, when it has one."""

    type: Literal["mem0-oss"]
    scope: dict[str, str]
    mem0_config: dict[str, Any] | None = None
    mem0_config_file: Path | None = None
    embedder: Literal["config", "hash"] = "config"
    telemetry: bool = False
    busy_timeout: float = 10.0  # how long open() waits for an application holding the store
    concurrency: int = Field(default=8, ge=1, le=64)  # embedding calls in flight (writes: 1)

    _scope = field_validator("scope")(_check_scope)
    _scope_keys = field_validator("scope")(_no_platform_only_keys)
    _busy_timeout = field_validator("busy_timeout", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )

    @field_validator("mem0_config")
    @classmethod
    def _no_inline_secrets(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        def walk(node: Any, path: str) -> None:
            if isinstance(node, dict):
                for key, child in node.items():
                    if str(key).lower() in _SECRET_KEYS and child:
                        raise ValueError(
                            f"'{path}{key}': {_SECRET_HINT} (for the embedder's key), or keep "
                            "the Mem0 config in its own file and set mem0_config_file"
                        )
                    walk(child, f"{path}{key}.")

        walk(value, "")
        return value

    @model_validator(mode="after")
    def _one_config_source(self) -> Mem0OssConfig:
        if self.mem0_config is not None and self.mem0_config_file is not None:
            raise ValueError("set mem0_config or mem0_config_file, not both")
        return self


class Mem0ServerConfig(_Http):
    type: Literal["mem0-server"]
    scope: dict[str, str]
    auth: Literal["api-key", "bearer", "none"] = "api-key"
    # auth = "bearer": the server's single-use refresh token, a file memsync rewrites on use
    refresh_token_file: Path | None = None
    # The server's own PostgreSQL database, read-only, for discovery and the probe: its URL
    # (a secret) from a variable or a file, and the table (the server's collection_name).
    database_url_env: str | None = None
    database_url_file: Path | None = None
    database_table: str = "memories"
    # Without a database: the team's scopes named by the team, one a line (docs/mem0-server.md).
    scopes_file: Path | None = None
    scopes_command: tuple[str, ...] | None = None

    _scope = field_validator("scope")(_check_scope)
    _scope_keys = field_validator("scope")(_no_platform_only_keys)
    _url_name = field_validator("database_url_env")(
        classmethod(lambda cls, v: _variable_name(v, "database_url_env"))
    )

    @field_validator("database_table")
    @classmethod
    def _table_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]{0,62}", value):
            raise ValueError(f"expected a table name such as 'memories', got {value!r}")
        return value

    @field_validator("scopes_command", mode="before")
    @classmethod
    def _command(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(
                f'expected the command as a list of words, e.g. scopes_command = ["{value}"]'
            )
        if value is not None and not value:
            raise ValueError("expected a command, e.g. scopes_command = ['list-users']")
        return value

    @model_validator(mode="after")
    def _refresh_needs_bearer(self) -> Mem0ServerConfig:
        if self.refresh_token_file is not None and self.auth != "bearer":
            raise ValueError('refresh_token_file goes with auth = "bearer"')
        return self

    @model_validator(mode="after")
    def _one_way_to_find_the_team(self) -> Mem0ServerConfig:
        if self.database_url_env and self.database_url_file:
            raise ValueError("set database_url_env or database_url_file, not both")
        if self.scopes_file is not None and self.scopes_command is not None:
            raise ValueError("set scopes_file or scopes_command, not both")
        listed = self.scopes_file is not None or self.scopes_command is not None
        database = bool(self.database_url_env or self.database_url_file)
        if listed and database:
            raise ValueError(
                "a database connection already finds every scope: set database_url_env (or "
                "database_url_file) or scopes_file/scopes_command, not both"
            )
        if listed and WILDCARD not in self.scope.values():
            raise ValueError(
                "scopes_file and scopes_command name the scopes of a wildcard, e.g. "
                'scope = { user_id = "*" }'
            )
        return self

    @property
    def database(self) -> bool:
        """Whether a database connection is configured."""
        return bool(self.database_url_env or self.database_url_file)


class Mem0PlatformConfig(_Http):
    type: Literal["mem0-platform"]
    base_url: str = "https://api.mem0.ai"
    scope: dict[str, str]
    org_id: str | None = None
    project_id: str | None = None
    lookback: float = 600.0
    # Read only what Dream calls the current truth (latest_only=true): memories already
    # superseded or merged when first seen are never copied (see docs/dream.md).
    latest_only: bool = False

    _scope = field_validator("scope")(_check_scope)
    _lookback = field_validator("lookback", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )


class LangGraphLayoutConfig(_Strict):
    """``layout = { type = "langgraph", ... }``: each memory a LangGraph item, as
    ``mnem-langgraph`` stores one (``providers/mnem/layouts.py``)."""

    type: Literal["langgraph"]
    # The item's namespace; "{user_id}" (any scope key) as a whole segment: LangMem's default.
    namespace: tuple[str, ...] = ("memories", "{user_id}")
    # The item's value: {"content": text} (LangMem's manage_memory tool), or
    # {"kind": "Memory", "content": {"content": text}} (LangMem's store manager).
    value: Literal["content", "kind"] = "content"

    @field_validator("namespace", mode="before")
    @classmethod
    def _segments(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(
                f'expected a list of segments, e.g. namespace = ["memories", "{value}"]'
            )
        return value

    @field_validator("namespace")
    @classmethod
    def _template(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        namespace_keys(value)  # a segment that cannot be a namespace's is refused here
        return value


class MnemConfig(ProviderBase):
    type: Literal["mnem"]
    path: Path
    branch: str | None = None
    scope_key: str | None = None  # default: the config's Mem0 scope, else the store's name
    busy_timeout: float = 10.0  # how long open() retries while an agent holds the store
    create: bool = False  # initialise a missing store on its first write
    exclude: MnemExcludeConfig | None = None
    # How a memory is a node: "mem0" (ADR-0024: node mem0:{id}, the text as content) or a
    # LangGraph item ("langgraph", or a table of LangGraphLayoutConfig's keys).
    layout: Literal["mem0"] | LangGraphLayoutConfig = "mem0"

    @field_validator("layout", mode="before")
    @classmethod
    def _layout(cls, value: Any) -> Any:
        if value == "langgraph":
            return {"type": "langgraph"}
        if isinstance(value, dict):
            try:
                return LangGraphLayoutConfig.model_validate(value)
            except ValidationError as exc:  # one line naming the layout's key, not the union's
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"] if isinstance(p, str))
                raise ValueError(f"{where or 'layout'}: {_explain(first)}") from None
        if value != "mem0" and not isinstance(value, LangGraphLayoutConfig):
            raise ValueError(
                f'unknown layout {value!r}; use "mem0" (the default) or "langgraph", or a table '
                'such as { type = "langgraph", namespace = ["memories", "{user_id}"], '
                'value = "content" }'
            )
        return value

    @field_validator("path")
    @classmethod
    def _template(cls, value: Path) -> Path:
        template_keys(str(value))  # a malformed {placeholder} is refused here
        return value

    _busy_timeout = field_validator("busy_timeout", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )


class HindsightConfig(_Http):
    type: Literal["hindsight"]
    bank: str | None = None
    lookback: float = 600.0

    _lookback = field_validator("lookback", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )


class CogneeConfig(_Http):
    type: Literal["cognee"]
    dataset: str
    # Cognee takes API keys as X-Api-Key; "bearer" sends a login token (JWT) instead.
    auth: Literal["api-key", "bearer"] = "api-key"


class PmmDirConfig(ProviderBase):
    type: Literal["pmm-dir"]
    path: Path
    scope_key: str | None = None


ProviderConfig = Annotated[
    Mem0OssConfig
    | Mem0ServerConfig
    | Mem0PlatformConfig
    | MnemConfig
    | HindsightConfig
    | CogneeConfig
    | PmmDirConfig,
    Field(discriminator="type"),
]


DEFAULT_INTERVAL = 300.0  # the full pass: every 5 minutes...
PROBED_INTERVAL = 3600.0  # ...every hour beside a probe, which finds remote changes sooner...
COMPLETELY_PROBED_INTERVAL = 86400.0  # ...and daily when every probe sees every change


class SyncConfig(_Strict):
    active: str
    conflict: Literal["error", "active", "newest", "keep-both"] = "newest"
    # "content": a record no link claims is paired with another provider's unlinked copy of
    # the same text in the same scope (see sync/adopt.py); "off": every such record is new.
    adopt: Literal["content", "off"] = "content"
    max_delete: float = 25.0
    max_delete_count: int = Field(default=100, ge=0)
    interval: float = DEFAULT_INTERVAL
    full_scan_interval: float = 3600.0
    max_attempts: int = Field(default=5, ge=1)
    # The daemon's hints (scopes/triggers.py): local stores watched for changes, remote ones
    # asked every `probe` seconds which scopes changed; the interval cycle stays the full pass.
    watch: bool = True
    probe: float | None = None

    _durations = field_validator("interval", "full_scan_interval", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )

    @field_validator("probe", mode="before")
    @classmethod
    def _probe_period(cls, value: Any) -> float | None:
        if value is None or (isinstance(value, str) and value.strip().lower() == "off"):
            return None
        seconds = parse_duration(value)
        if seconds < 1.0:
            raise ValueError(
                f"a probe more often than once a second is refused (got {value!r}); "
                'try probe = "5s", or "off"'
            )
        return seconds

    @field_validator("max_delete", mode="before")
    @classmethod
    def _percentage(cls, value: Any) -> float:
        text = str(value).strip()
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%?", text)
        if not match or isinstance(value, bool):
            raise ValueError(f'expected a percentage such as "25%", got {value!r}')
        number = float(match.group(1))
        if not 0 <= number <= 100:
            raise ValueError(f"expected a percentage between 0% and 100%, got {value!r}")
        return number


class BackupConfig(_Strict):
    interval: float = 3600.0
    keep: int = Field(default=24, ge=1)
    gzip: bool = False

    _interval = field_validator("interval", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )


class PmmConfig(_Strict):
    max_content_bytes: int = Field(default=DEFAULT_MAX_CONTENT_BYTES, gt=0)


class UiConfig(_Strict):
    """The local status page; off unless ``listen`` is set (the daemon then serves it)."""

    listen: str | None = None
    allow_remote: bool = False

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None:
            parse_listen(value)  # raises ValueError with what to write instead
        return value

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> UiConfig:
        if self.listen is not None:
            check_exposure(parse_listen(self.listen)[0], allow_remote=self.allow_remote)
        return self


class VerifyConfig(_Strict):
    """Scheduled verify: the daemon runs `verify` over every linked pair and scope this often;
    off unless ``interval`` is set."""

    interval: float | None = None

    @field_validator("interval", mode="before")
    @classmethod
    def _interval(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)


class MetricsConfig(_Strict):
    """/metrics on the status page's server: labels per configured provider, per scope too
    only when asked (a team of thousands of scopes would be thousands of series each)."""

    per_scope: bool = False


class Config(_Strict):
    sync: SyncConfig
    backup: BackupConfig = BackupConfig()
    pmm: PmmConfig = PmmConfig()
    ui: UiConfig = UiConfig()
    verify: VerifyConfig = VerifyConfig()
    metrics: MetricsConfig = MetricsConfig()
    providers: dict[str, ProviderConfig]

    @field_validator("providers")
    @classmethod
    def _names(cls, providers: dict[str, Any]) -> dict[str, Any]:
        if not providers:
            raise ValueError("expected at least one [providers.NAME] table")
        for name in providers:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                raise ValueError(f"provider name {name!r}: use letters, digits, '-', '_' or '.'")
        return providers

    @model_validator(mode="before")
    @classmethod
    def _full_pass_beside_a_probe(cls, data: Any) -> Any:
        """With a probe and no interval, the full pass runs as docs/daemon.md recommends beside
        one: hourly, or daily when every probed store is a Mem0 server read through its
        database (a probe that misses nothing). Every 5 minutes, a team's full passes would
        cost more than its probes save."""
        sync = data.get("sync") if isinstance(data, dict) else None
        if not isinstance(sync, dict) or "interval" in sync:
            return data
        probe = sync.get("probe")
        if probe is None or (isinstance(probe, str) and probe.strip().lower() == "off"):
            return data
        providers = data.get("providers")
        entries = (
            [e for e in providers.values() if isinstance(e, dict)]
            if isinstance(providers, dict)
            else []
        )
        probed = [  # the stores scopes/probes.py probes
            e
            for e in entries
            if e.get("type") in ("mem0-server", "mem0-platform")
            or (e.get("type") == "hindsight" and e.get("bank"))
        ]
        complete = bool(probed) and all(
            e.get("type") == "mem0-server"
            and (e.get("database_url_env") or e.get("database_url_file"))
            for e in probed
        )
        interval = COMPLETELY_PROBED_INTERVAL if complete else PROBED_INTERVAL
        return {**data, "sync": {**sync, "interval": interval}}

    @model_validator(mode="after")
    def _scopes_fit_together(self) -> Config:
        check_scoped_config(self.providers)
        return self

    @model_validator(mode="after")
    def _active_is_configured(self) -> Config:
        if self.sync.active not in self.providers:
            names = ", ".join(sorted(self.providers)) or "none"
            raise ValueError(
                f"sync.active = {self.sync.active!r} names no configured provider "
                f"(configured: {names})"
            )
        return self

    def provider(self, name: str) -> ProviderConfig:
        """The provider called NAME, or a ConfigError listing the ones that exist."""
        try:
            return self.providers[name]
        except KeyError:
            names = ", ".join(sorted(self.providers))
            raise ConfigError(
                f"no provider named {name!r} in the config (configured: {names})"
            ) from None


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


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem as 'key.path: what is expected', plus a count of the others."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    location = _dotted(first["loc"])
    message = _explain(first)
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{location}: {message}{more}" if location else f"{message}{more}"


def _dotted(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for i, part in enumerate(loc):
        # The discriminated union inserts the provider type into the location; drop it.
        if i >= 2 and loc[0] == "providers" and part in PROVIDER_TYPES and i == 2:
            continue
        if isinstance(part, str) and part.startswith("function-"):
            continue
        parts.append(str(part))
    return ".".join(parts)


def _explain(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key (check its spelling; see `memsync init` for every key)"
    if kind == "missing":
        return "required key is missing"
    if kind == "union_tag_invalid":
        return f"unknown provider type; expected one of {', '.join(PROVIDER_TYPES)}"
    if kind == "union_tag_not_found":
        return f"missing 'type'; expected one of {', '.join(PROVIDER_TYPES)}"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    if kind.startswith("literal_error"):
        return message.replace("Input should be", "expected")
    if "input" in error and kind not in ("value_error",):
        return f"{message.replace('Input should be', 'expected')} (got {error['input']!r})"
    return message
