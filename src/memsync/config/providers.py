"""The ``[providers.NAME]`` tables: one model per provider type, told apart by ``type``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from memsync.base.exclude import check_glob
from memsync.base.mnem_items import namespace_keys
from memsync.base.scopes import WILDCARD, template_keys
from memsync.config.fields import (
    DATABASE_HINT,
    DATABASE_KEYS,
    SECRET_HINT,
    SECRET_KEYS,
    Strict,
    check_scope,
    globs,
    no_platform_only_keys,
    parse_duration,
    parse_optional_duration,
    parse_rate,
    parse_size,
    variable_name,
)
from memsync.config.messages import explain_error


class ExcludeConfig(Strict):
    """``exclude``: records memsync leaves alone (``memsync.base.exclude``), by id glob."""

    ids: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _kinds_are_mnem_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and "content_kinds" in data and cls is ExcludeConfig:
            raise ValueError("content_kinds: only mnem stores have content kinds; use ids (globs)")
        return data

    _as_list = field_validator("ids", mode="before")(classmethod(lambda cls, v: globs(v)))
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


class ProviderBase(Strict):
    """Keys every provider accepts."""

    type: str
    direction: Literal["pull", "push", "both"] = "both"
    exclude: ExcludeConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_inline_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if str(key).lower() in DATABASE_KEYS:
                    raise ValueError(f"'{key}': {DATABASE_HINT}")
                if str(key).lower() in SECRET_KEYS:
                    raise ValueError(f"'{key}': {SECRET_HINT}")
        return data


class _Authenticated(ProviderBase):
    api_key_env: str | None = None
    api_key_file: Path | None = None

    @model_validator(mode="after")
    def _one_secret_source(self) -> _Authenticated:
        if self.api_key_env and self.api_key_file:
            raise ValueError("set api_key_env or api_key_file, not both")
        return self

    _looks_like_a_name = field_validator("api_key_env")(
        classmethod(lambda cls, v: variable_name(v, "api_key_env"))
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

    _scope = field_validator("scope")(check_scope)
    _scope_keys = field_validator("scope")(no_platform_only_keys)
    _busy_timeout = field_validator("busy_timeout", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )

    @field_validator("mem0_config")
    @classmethod
    def _no_inline_secrets(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        def walk(node: Any, path: str) -> None:
            if isinstance(node, dict):
                for key, child in node.items():
                    if str(key).lower() in SECRET_KEYS and child:
                        raise ValueError(
                            f"'{path}{key}': {SECRET_HINT} (for the embedder's key), or keep "
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
    # Where the server keeps each memory's history, read for a history import: its PostgreSQL
    # table (upstream's migration 007, in the app database when history_database_url_* names
    # it, else in the database above), or its SQLite file (upstream's main branch); without
    # either, its route GET /memories/{id}/history (docs/mem0-server.md).
    history_table: str = "history"
    history_database_url_env: str | None = None
    history_database_url_file: Path | None = None
    history_db_path: Path | None = None
    # Without a database: the team's scopes named by the team, one a line (docs/mem0-server.md).
    scopes_file: Path | None = None
    scopes_command: tuple[str, ...] | None = None

    _scope = field_validator("scope")(check_scope)
    _scope_keys = field_validator("scope")(no_platform_only_keys)
    _url_name = field_validator("database_url_env")(
        classmethod(lambda cls, v: variable_name(v, "database_url_env"))
    )
    _history_url_name = field_validator("history_database_url_env")(
        classmethod(lambda cls, v: variable_name(v, "history_database_url_env"))
    )

    @field_validator("database_table", "history_table")
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
    def _one_history_source(self) -> Mem0ServerConfig:
        if self.history_database_url_env and self.history_database_url_file:
            raise ValueError("set history_database_url_env or history_database_url_file, not both")
        if self.history_db_path is not None and (
            self.history_database_url_env or self.history_database_url_file
        ):
            raise ValueError(
                "the server keeps its history in a database or in a file: set "
                "history_database_url_env (or _file) or history_db_path, not both"
            )
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
    # The key's limit (requests per window), shared with every other client of the key: the
    # documented 1,000 a minute until the answers' X-RateLimit-Limit names another; memsync
    # leaves rate_headroom of it to the key's other clients (agents).
    rate_limit: tuple[int, float] = (1000, 60.0)
    rate_headroom: float = Field(default=0.05, ge=0.0, lt=1.0)
    # How often, while no cycle runs, one count on the Platform checks for deletes
    # (docs/daemon.md, "Deletes on the Platform"); None: off.
    delete_check: float | None = 60.0

    _scope = field_validator("scope")(check_scope)
    _lookback = field_validator("lookback", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )
    _delete_check = field_validator("delete_check", mode="before")(
        classmethod(lambda cls, v: parse_optional_duration(v))
    )

    @field_validator("rate_limit", mode="before")
    @classmethod
    def _rate(cls, value: Any) -> tuple[int, float]:
        return parse_rate(value)


class LangGraphLayoutConfig(Strict):
    """``layout = { type = "langgraph", ... }``: each memory a LangGraph item, as
    ``mnem-langgraph`` stores one (``providers/mnem/layouts.py``)."""

    type: Literal["langgraph"]
    # The item's namespace; "{user_id}" (any scope key) as a whole segment: LangMem's default.
    namespace: tuple[str, ...] = ("memories", "{user_id}")
    # The item's value: {"content": text} (LangMem's manage_memory tool), or
    # {"kind": "Memory", "content": {"content": text}} (LangMem's store manager).
    value: Literal["content", "kind"] = "content"
    # Where the items live: "one" store at path (every namespace in it), or "per-namespace":
    # path is a root holding a store per namespace (``base/mnem_shards``), which a commit
    # into costs what one namespace's items cost, not the whole team's.
    stores: Literal["one", "per-namespace"] = "one"

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
    # How many bytes a day its stores may grow by before `check` warns (mnem keeps every
    # commit's state: docs/configuration.md "What a layout costs on disk").
    growth_budget: int = 10**9
    # A new store (no commit yet) begins with the Mem0 memories' past: each version at its own
    # time (docs/migrating-from-mem0.md), in commits as fine as the store's disk allows: with
    # history at most history_budget times the size of the same store without it.
    import_history: bool = True
    history_budget: float = Field(default=4.0, ge=1.0, le=1000.0)

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
                raise ValueError(f"{where or 'layout'}: {explain_error(first)}") from None
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
    _growth_budget = field_validator("growth_budget", mode="before")(
        classmethod(lambda cls, v: parse_size(v))
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
