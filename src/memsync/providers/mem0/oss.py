"""``mem0-oss``: Mem0's open-source library in-process, on the application's own store.

memsync opens the store for one cycle and closes it again: a local Qdrant path admits one
process at a time, so while memsync holds it the application cannot, and the other way round
(``open`` retries with backoff, then raises ProviderBusy). Three promises hold throughout:

- No phone home: ``MEM0_TELEMETRY=False`` (unless ``telemetry = true``) and ``MEM0_DIR`` in
  memsync's state directory are set before mem0 is first imported.
- No LLM: every write passes ``infer=False``. The config's LLM section is replaced by a
  placeholder on a closed loopback port, so construction needs no key and a stray call fails
  at once instead of spending tokens. A missing embedder key gets the same placeholder: pulls
  work, writes fail with a message that says what to set.
- No silent cap (ADR-0024): listings page ``get_all`` until a call comes back short
  (``mem0_paging``), with ``show_expired=True`` so that a short call really means "all".

Mem0's ``update`` merges metadata; memsync's update replaces it. After ``Memory.update``
(which keeps Mem0's hash, history row and timestamps right), keys the new metadata no longer
has are removed by rewriting the payload through the vector store — the same
``vector_store.update(id, vector, payload)`` call Mem0 itself uses for a full write. The id
never changes.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential, wait_random

from memsync.config import SCOPE_KEYS, Config, Mem0OssConfig
from memsync.errors import (
    ConfigError,
    MemsyncError,
    NotFound,
    ProviderBusy,
    ProviderError,
    ProviderUnavailable,
    TransientProviderError,
)
from memsync.paths import make_private_dir, resolve_paths
from memsync.providers.base import (
    Capabilities,
    Listing,
    Page,
    Provider,
    WriteOp,
    WriteResult,
    require_content,
)
from memsync.providers.mem0.convert import (
    MEM0_OWN_KEYS,
    metadata_for_mem0,
    record_from_mem0,
    scope_key_of,
)
from memsync.providers.mem0.embed_ahead import EmbeddedAhead
from memsync.providers.mem0.paging import FetchResult, fetch_all, start_for
from memsync.records import Outgoing, Record, Skipped
from memsync.secrets import Secret, redact, resolve_secret

log = logging.getLogger("memsync.providers.mem0_oss")

PAGE_SIZE = 500
# get_all's top_k grows this much per call: a local Qdrant scans every point on every call
# whatever top_k asks, so fewer, larger calls win (see mem0_paging for the bound it keeps).
TOP_K_FACTOR = 16
DEAD_ENDPOINT = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, calls fail at once
PLACEHOLDER_KEY = "memsync-placeholder-not-a-key"
_BUSY_MARK = "already accessed by another instance"
_SECRET_NAMES = ("api_key", "apikey", "key", "token", "secret", "password", "credentials")
_CONNECTION_ERRORS = {
    "APIConnectionError",
    "APITimeoutError",
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "ResponseHandlingException",
    "RateLimitError",
    "InternalServerError",
}

EMBED_GROUP = 8  # creates embedded ahead per worker, before their adds run


# environment and config ---------------------------------------------------------------


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


def _application_mem0_dir(ours: Path | None) -> str:
    """Where the application's Mem0 keeps its files: its MEM0_DIR, else ~/.mem0."""
    current = os.environ.get("MEM0_DIR")
    if current and (ours is None or Path(current) != Path(ours)):
        return current
    return os.path.join(os.path.expanduser("~"), ".mem0")


def _store_busy(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and _BUSY_MARK in str(exc)


def _is_connection_problem(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionError | TimeoutError) or type(seen).__name__ in (
            _CONNECTION_ERRORS
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def normalise_scope(name: str, scope: Mapping[str, Any]) -> dict[str, str]:
    """The scope as Mem0 stores it (trimmed strings); Mem0 refuses ids containing spaces."""
    clean: dict[str, str] = {}
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


class Mem0Listing(Listing):
    """A full pass from one ``fetch_all`` result, mapped to Records page by page.

    Complete only when the fetch proved it (a short get_all call) and no id came twice.
    ``fetch`` holds the paging figures after the pass, for status and benchmarks.
    """

    def __init__(
        self, fetch: Callable[[], FetchResult[dict[str, Any]]], scope_key: str, name: str
    ) -> None:
        super().__init__()
        self._fetch = fetch
        self._scope_key = scope_key
        self._name = name
        self.fetch: FetchResult[dict[str, Any]] | None = None

    def pages(self) -> Iterator[Page]:
        result = self._fetch()
        self.fetch = result
        seen: set[str] = set()
        for start in range(0, len(result.items), PAGE_SIZE):
            page = Page([])
            for raw in result.items[start : start + PAGE_SIZE]:
                mapped = record_from_mem0(raw, self._scope_key)
                if isinstance(mapped, Skipped):
                    page.skipped.append(mapped)
                elif mapped.id in seen:
                    self.mark_partial(
                        f"{self._name}: Mem0 listed memory {mapped.id} twice (did the store "
                        "change during the listing?); no deletes are inferred this time"
                    )
                else:
                    seen.add(mapped.id)
                    page.records.append(mapped)
            yield page
        if not result.complete:
            self.mark_partial(
                f"{self._name}: Mem0 returned its maximum of {result.top_k} memories for this "
                "scope; the rest were not listed, so no deletes are inferred"
            )
        elif self.partial_reason is None:
            self.complete = True


# the provider ---------------------------------------------------------------------------


class Mem0OssProvider(Provider):
    type = "mem0-oss"
    family = "mem0"
    capabilities = Capabilities(timestamps=True, metadata_values="json")

    def __init__(
        self,
        name: str,
        scope: Mapping[str, Any],
        *,
        mem0_config: Mapping[str, Any] | None = None,
        embedder: str = "config",
        api_key: Secret | None = None,
        telemetry: bool = False,
        mem0_dir: Path | None = None,
        busy_timeout: float = 10.0,
        first_top_k: int | None = None,
        count_hint: bool = True,
        concurrency: int = 8,
    ) -> None:
        """A provider over a Mem0 config; nothing is imported or opened until ``open()``.

        ``mem0_dir`` becomes MEM0_DIR when the environment has none (memsync passes a
        directory under its state dir). ``first_top_k`` and ``count_hint`` tune the paging
        loop: by default the first get_all asks for a little more than the collection holds
        (Qdrant counts it for free), so one call usually proves the listing complete.
        """
        super().__init__(name)
        self.scope = normalise_scope(name, scope)
        self.mem0_config: dict[str, Any] = copy.deepcopy(dict(mem0_config or {}))
        self.embedder = embedder
        self.telemetry = telemetry
        self.mem0_dir = mem0_dir
        self.busy_timeout = busy_timeout
        self.first_top_k = first_top_k
        self.count_hint = count_hint
        self.concurrency = max(1, concurrency)
        self._api_key = api_key
        self._secrets: list[Secret] = [
            s for s in [api_key, *secrets_in(self.mem0_config)] if s is not None
        ]
        self._memory: Any = None
        self._owns_memory = True
        self._embedder_placeholder = False

    @classmethod
    def from_memory(
        cls, name: str, memory: Any, scope: Mapping[str, Any], **options: Any
    ) -> Mem0OssProvider:
        """A provider over a Memory the caller built and owns (``close()`` leaves it open)."""
        provider = cls(name, scope, **options)
        provider._memory = memory
        provider._owns_memory = False
        return provider

    @property
    def memory(self) -> Any:
        """The open mem0 ``Memory`` (for tests and import_mem0); None while closed."""
        return self._memory

    def __repr__(self) -> str:
        return f"Mem0OssProvider({self.name!r}, {self.identity()!r})"

    # identity ---------------------------------------------------------------------------

    def identity(self) -> str:
        return f"mem0-oss:{self._store_location()}#{self._scope_text()}"

    def scope_key(self) -> str:
        return scope_key_of(self.scope)

    def describe_scope(self) -> dict[str, Any]:
        return {"scope_key": self.scope_key(), **self.scope}

    def _scope_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.scope.items())

    def _store_location(self) -> str:
        """Where the vector store lives (path, URL or host) and its collection; never a key."""
        settings: dict[str, Any]
        if self._memory is not None and not self._owns_memory:  # borrowed: its own config
            store = self._memory.config.vector_store
            provider = store.provider
            raw = store.config
            settings = (
                dict(raw)
                if isinstance(raw, dict)
                else {
                    key: getattr(raw, key, None)
                    for key in ("url", "host", "port", "path", "client", "collection_name")
                }
            )
        else:
            section = self.mem0_config.get("vector_store") or {}
            provider = section.get("provider", "qdrant")
            settings = dict(section.get("config") or {})
        host, port = settings.get("host"), settings.get("port")
        where = settings.get("url") or (f"{host}:{port}" if host else None) or settings.get("path")
        if where is None and settings.get("client") is not None:
            where = "client"
        return f"{provider}:{where or 'default'}/{settings.get('collection_name') or 'mem0'}"

    # lifecycle --------------------------------------------------------------------------

    def open(self) -> None:
        """Build the Memory: telemetry off first, no LLM, retrying while the store is busy."""
        if self._memory is not None:
            return
        prepare_mem0_environment(telemetry=self.telemetry, mem0_dir=self.mem0_dir)
        try:
            from mem0 import Memory
            from mem0.configs.base import MemoryConfig
            from pydantic import ValidationError
        except ImportError:
            raise ProviderUnavailable(
                f"providers.{self.name}: type 'mem0-oss' needs the mem0 extra; "
                "install it with: pip install 'memsync[mem0]'"
            ) from None
        config, self._embedder_placeholder = offline_config(
            self.mem0_config,
            embedder=self.embedder,
            api_key=self._api_key,
            application_mem0_dir=_application_mem0_dir(self.mem0_dir),
        )
        try:
            memory_config = MemoryConfig(**config)
        except (ValidationError, ValueError) as exc:
            raise ConfigError(
                f"providers.{self.name}: the Mem0 config is invalid: {self._explain(exc)}"
            ) from None
        memory = self._construct(Memory, memory_config)
        if self.embedder == "hash":
            self._install_hash_embedder(memory)
        self._memory = memory
        self._owns_memory = True

    def _construct(self, memory_class: Any, memory_config: Any) -> Any:
        retrying = Retrying(
            retry=retry_if_exception(_store_busy),
            stop=stop_after_delay(self.busy_timeout),
            wait=wait_exponential(multiplier=0.1, max=2.0) + wait_random(0, 0.1),
            reraise=True,
        )
        try:
            return retrying(memory_class, memory_config)
        except MemsyncError:
            raise
        except Exception as exc:
            if _store_busy(exc):
                raise ProviderBusy(
                    f"{self.name}: Mem0 store busy: {self._store_location()} is held by another "
                    f"process (the application using it?); waited {self.busy_timeout:g}s, "
                    "memsync tries again next cycle. For concurrent access run a Qdrant server",
                    retry_after=max(self.busy_timeout, 5.0),
                ) from None
            raise ProviderError(
                f"{self.name}: cannot open the Mem0 store: {self._explain(exc)}"
            ) from exc

    def _install_hash_embedder(self, memory: Any) -> None:
        from memsync.providers.mem0.hash_embedder import HashEmbedder

        dims = getattr(memory.config.vector_store.config, "embedding_model_dims", None) or getattr(
            memory.vector_store, "embedding_model_dims", None
        )
        if not isinstance(dims, int) or dims < 1:
            self._release(memory)
            raise ConfigError(
                f'providers.{self.name}: embedder = "hash" needs '
                "vector_store.config.embedding_model_dims in the Mem0 config"
            )
        memory.embedding_model = HashEmbedder(dims)
        log.info(
            "%s: using the hash embedder: fine for backup and sync, unfit for semantic search",
            self.name,
        )

    def close(self) -> None:
        """Release the store (Qdrant's lock, the history database) if memsync opened it.

        A borrowed Memory (``from_memory``) stays open and attached: its owner closes it.
        """
        if not self._owns_memory:
            return
        memory, self._memory = self._memory, None
        if memory is not None:
            self._release(memory)

    def _release(self, memory: Any) -> None:
        # Memory.close() only closes the history database; the Qdrant client holds the
        # path's lock until it is closed itself. The entity store shares that client.
        user_client = ((self.mem0_config.get("vector_store") or {}).get("config") or {}).get(
            "client"
        )
        closed: set[int] = set()
        for store in (
            getattr(memory, "vector_store", None),
            getattr(memory, "_entity_store", None),
            getattr(memory, "_telemetry_vector_store", None),
        ):
            client = getattr(store, "client", None)
            if client is None or client is user_client or id(client) in closed:
                continue
            closed.add(id(client))
            try:
                client.close()
            except Exception as exc:  # one failing close must not keep the others open
                log.warning("%s: closing the vector store client failed: %s", self.name, exc)
        memory.close()

    def _require_memory(self) -> Any:
        if self._memory is None:
            raise ProviderError(f"{self.name}: the provider is not open; call open() first")
        return self._memory

    # errors -----------------------------------------------------------------------------

    def _explain(self, exc: BaseException) -> str:
        errors = getattr(exc, "errors", None)
        if callable(errors):
            try:
                first = errors(include_input=False, include_url=False)[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                text = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
            except Exception:  # not a pydantic error after all
                text = str(exc)
        else:
            text = str(exc)
        line = (text.strip().splitlines() or [""])[0][:300]
        described = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
        return redact(described, *self._secrets)

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        """Mem0's exceptions as memsync's typed errors, with any key redacted."""
        try:
            yield
        except MemsyncError:
            raise
        except Exception as exc:
            if self._embedder_placeholder and _is_connection_problem(exc):
                raise ProviderError(
                    f"{self.name}: cannot {action}: the Mem0 config gives the embedder no key; "
                    'set api_key_env (or OPENAI_API_KEY), or embedder = "hash" for backups'
                ) from exc
            if _is_connection_problem(exc):
                raise TransientProviderError(
                    f"{self.name}: cannot {action}, Mem0's backend is unreachable "
                    f"({self._explain(exc)}); will retry"
                ) from exc
            raise ProviderError(
                f"{self.name}: Mem0 failed to {action}: {self._explain(exc)}"
            ) from exc

    # reads ------------------------------------------------------------------------------

    def listing(self, cursor: str | None = None) -> Mem0Listing:
        return Mem0Listing(self._fetch, self.scope_key(), self.name)

    def _fetch(self) -> FetchResult[dict[str, Any]]:
        memory = self._require_memory()

        def get_all(top_k: int) -> list[dict[str, Any]]:
            # show_expired=True: Mem0 then fetches exactly top_k, so a short answer means
            # "all"; otherwise it over-fetches, drops expired ones, and proves nothing.
            try:
                with self._translate("list memories"):
                    answer = memory.get_all(
                        filters=dict(self.scope), top_k=top_k, show_expired=True
                    )
            except ProviderError as exc:
                bad = self._non_text_ids(memory, top_k)
                if bad:  # one such point makes Mem0 fail the whole get_all: name them
                    raise ProviderError(
                        f"{self.name}: Mem0 cannot list scope {self._scope_text()}: memories "
                        f"{', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold non-text "
                        "content; fix or delete them in Mem0"
                    ) from exc
                raise
            results = answer.get("results") if isinstance(answer, dict) else None
            if not isinstance(results, list):
                raise ProviderError(f"{self.name}: Mem0's get_all returned no 'results' list")
            return results

        expected = self._collection_size(memory) if self.count_hint else None
        start = self.first_top_k or start_for(expected)
        return fetch_all(get_all, start=start, factor=TOP_K_FACTOR)

    def _non_text_ids(self, memory: Any, top_k: int) -> list[str]:
        """Ids of points in scope whose ``data`` is neither text nor missing (raw listing)."""
        try:
            listed = memory.vector_store.list(filters=dict(self.scope), top_k=top_k)
        except Exception:  # only for the message: the original error stands
            return []
        rows = listed[0] if listed and isinstance(listed[0], list | tuple) else listed
        return [
            str(row.id)
            for row in rows or []
            if not isinstance((getattr(row, "payload", None) or {}).get("data", ""), str)
        ]

    def _collection_size(self, memory: Any) -> int | None:
        """How many points the whole Qdrant collection holds: an upper bound for the scope.

        Qdrant answers it without a scan, and asking get_all for that many costs no more than
        asking for fewer (a local store scans every point either way). Only a hint: the
        paging loop proves completeness with or without it.
        """
        store = memory.vector_store
        if type(store).__module__ != "mem0.vector_stores.qdrant":
            return None
        try:
            counted = store.client.count(collection_name=store.collection_name, exact=False)
            return int(counted.count)
        except Exception as exc:  # only a hint: the paging loop works without it
            log.debug("%s: counting the collection failed: %s", self.name, exc)
            return None

    def _in_scope(self, fields: Mapping[str, Any] | None) -> bool:
        fields = fields or {}
        return all(str(fields.get(key)) == value for key, value in self.scope.items())

    def _point(self, memory: Any, provider_id: str) -> Any:
        """The raw vector-store point in this scope, or None (also for foreign-scope ids)."""
        if not _is_uuid(provider_id):
            return None
        with self._translate("read a memory"):
            point = memory.vector_store.get(vector_id=provider_id)
        if point is None or not self._in_scope(getattr(point, "payload", None)):
            return None
        return point

    def get(self, provider_id: str) -> Record | None:
        memory = self._require_memory()
        if self._point(memory, provider_id) is None:
            return None
        with self._translate("read a memory"):
            raw = memory.get(provider_id)
        if raw is None:
            return None
        mapped = record_from_mem0(raw, self.scope_key())
        return mapped if isinstance(mapped, Record) else None

    # writes -----------------------------------------------------------------------------

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """One write at a time (the store is single-writer), with the embeddings of the
        creates ahead computed ``concurrency`` at a time when the embedder is remote."""
        memory = self._memory
        if self.embedder == "hash" or self.concurrency <= 1 or memory is None:
            yield from super().write_many(ops)
            return
        ahead = EmbeddedAhead(memory.embedding_model, self.concurrency)
        memory.embedding_model = ahead
        try:
            group = EMBED_GROUP * self.concurrency
            for start in range(0, len(ops), group):
                chunk = ops[start : start + group]
                ahead.prepare(op.item.content for op in chunk if op.kind == "create" and op.item)
                yield from super().write_many(chunk)
                ahead.forget()
        finally:
            memory.embedding_model = ahead.inner

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        memory = self._require_memory()
        message = _message_for(item)
        native = {"role": message["role"], "actor_id": message.get("name"), **self.scope}
        metadata = metadata_for_mem0(item, native=native)
        if item.created_at:
            metadata["created_at"] = item.created_at  # Mem0 backdates created_at and updated_at
        with self._translate("add a memory"):
            answer = memory.add(
                [message],
                **self.scope,
                metadata=metadata,
                infer=False,
                expiration_date=item.expiration_date,
            )
        ids = [r.get("id") for r in (answer or {}).get("results", []) if isinstance(r, dict)]
        if len(ids) != 1 or not isinstance(ids[0], str):
            raise ProviderError(
                f"{self.name}: Mem0 added {len(ids)} memories for one (origin {item.origin})"
            )
        # What was written, as a listing will show it (no second read: the next mirror
        # brings Mem0's own version token).
        return Record(
            id=ids[0],
            content=item.content,
            metadata=dict(item.metadata),
            scope_key=self.scope_key(),
            created_at=item.created_at,
            provenance={
                **item.provenance,
                **{k: v for k, v in native.items() if v},
                "source": native["actor_id"] or native["role"],
            },
            origin=item.origin,
            expiration_date=item.expiration_date,
        )

    def update(self, provider_id: str, item: Outgoing) -> Record:
        require_content(self.name, item)
        memory = self._require_memory()
        point = self._point(memory, provider_id)
        if point is None:
            raise NotFound(f"{self.name}: no memory {provider_id} in scope {self._scope_text()}")
        # What the memory already holds in Mem0's own fields (kept by update) is not stored
        # again in memsync_provenance.
        held = point.payload or {}
        native = {k: held.get(k) for k in ("role", "actor_id", "user_id", "agent_id", "run_id")}
        metadata = metadata_for_mem0(item, native=native)
        stale = (set(point.payload or {}) - MEM0_OWN_KEYS) - set(metadata)
        with self._translate("update a memory"):
            memory.update(
                provider_id,
                text=item.content,
                metadata=metadata,
                expiration_date=item.expiration_date,  # None clears it
            )
            if stale:
                self._drop_payload_keys(memory, provider_id, stale, item.content)
        record = self.get(provider_id)
        if record is None:
            raise NotFound(f"{self.name}: memory {provider_id} vanished while being updated")
        return record

    def _drop_payload_keys(self, memory: Any, memory_id: str, keys: set[str], text: str) -> None:
        """Remove metadata keys Mem0's merging update cannot remove: rewrite the payload whole.

        ``vector_store.update`` with both vector and payload replaces the point (Qdrant
        upserts it), which is how Mem0 writes a full payload itself.
        """
        point = memory.vector_store.get(vector_id=memory_id)
        if point is None:
            return
        payload = {k: v for k, v in (point.payload or {}).items() if k not in keys}
        vector = memory.embedding_model.embed(text, "update")
        memory.vector_store.update(vector_id=memory_id, vector=vector, payload=payload)

    def delete(self, provider_id: str) -> None:
        memory = self._require_memory()
        if self._point(memory, provider_id) is None:
            return  # already gone: not an error
        with self._translate("delete a memory"):
            memory.delete(provider_id)


def _message_for(item: Outgoing) -> dict[str, str]:
    """One chat message: Mem0 stores its role, and its ``name`` as the actor id."""
    role = item.provenance.get("role")
    message = {
        "role": role if isinstance(role, str) and role.strip() and role != "system" else "user",
        "content": item.content,
    }
    actor = item.provenance.get("actor_id")
    if isinstance(actor, str) and actor.strip():
        message["name"] = actor
    return message


def build(name: str, entry: Mem0OssConfig, config: Config) -> Mem0OssProvider:
    """The provider for a ``[providers.NAME]`` entry of type mem0-oss (mem0 not yet imported)."""
    return Mem0OssProvider(
        name,
        entry.scope,
        mem0_config=load_mem0_config(name, entry),
        embedder=entry.embedder,
        api_key=resolve_secret(name, entry.api_key_env, entry.api_key_file),
        telemetry=entry.telemetry,
        mem0_dir=resolve_paths().state_dir / "mem0",
        busy_timeout=entry.busy_timeout,
        concurrency=entry.concurrency,
    )
