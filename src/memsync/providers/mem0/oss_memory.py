"""The open Mem0 ``Memory`` of a mem0-oss provider: built offline, retried while busy, released.

memsync opens the store for one cycle and closes it again: a local Qdrant path admits one
process at a time, so while memsync holds it the application cannot, and the other way round
(``open`` retries with backoff, then raises ProviderBusy). Mem0's exceptions become memsync's
typed errors here, with every key redacted.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential, wait_random

from memsync.base.errors import (
    ConfigError,
    MemsyncError,
    ProviderBusy,
    ProviderError,
    ProviderUnavailable,
    TransientProviderError,
)
from memsync.base.history import HistoryRead
from memsync.base.secrets import Secret, redact
from memsync.providers.base import Provider
from memsync.providers.mem0.convert import scope_key_of
from memsync.providers.mem0.history_reads import sqlite_history
from memsync.providers.mem0.oss_config import (
    application_mem0_dir,
    normalise_scope,
    offline_config,
    prepare_mem0_environment,
    secrets_in,
)

log = logging.getLogger("memsync.providers.mem0_oss")

_BUSY_MARK = "already accessed by another instance"
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


class _NoLlm:
    """Stands in for Mem0's LLM, which memsync never calls (every write says infer=False)."""

    config: Any = None

    def generate_response(self, *args: Any, **kwargs: Any) -> Any:
        raise ProviderError("memsync never calls Mem0's LLM; this call is a bug in memsync")


class _NoLlmFactory:
    @staticmethod
    def create(*args: Any, **kwargs: Any) -> _NoLlm:
        return _NoLlm()


class _HashEmbedderFactory:
    """The embedder ``_install_hash_embedder`` puts in place right after construction; until
    then, nothing (``embedder = "hash"``)."""

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> None:
        return None


@contextmanager
def _no_remote_clients(*, hash_embedder: bool) -> Iterator[None]:
    """Construct Memory without the OpenAI clients of its placeholder LLM (and, with the hash
    embedder, of its placeholder embedder): memsync calls neither, and each client loads the
    system's CA bundle into an SSL context, about 30 ms a client and two clients a store, at
    every open. A quiet cycle over two local stores spent a third of its time there."""
    import mem0.memory.main as main

    factories: dict[str, type] = {"LlmFactory": _NoLlmFactory}
    if hash_embedder:
        factories["EmbedderFactory"] = _HashEmbedderFactory
    saved = {name: getattr(main, name) for name in factories if hasattr(main, name)}
    for name in saved:
        setattr(main, name, factories[name])
    try:
        yield
    finally:
        for name, factory in saved.items():
            setattr(main, name, factory)


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


class MemoryHandle(Provider):
    """The part of a mem0-oss provider that holds Mem0's ``Memory`` for one scope."""

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
    def from_memory(cls, name: str, memory: Any, scope: Mapping[str, Any], **options: Any) -> Self:
        """A provider over a Memory the caller built and owns (``close()`` leaves it open)."""
        provider = cls(name, scope, **options)
        provider._memory = memory
        provider._owns_memory = False
        return provider

    @property
    def memory(self) -> Any:
        """The open mem0 ``Memory`` (for tests and import_mem0); None while closed."""
        return self._memory

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
            application_mem0_dir=application_mem0_dir(self.mem0_dir),
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
            with _no_remote_clients(hash_embedder=self.embedder == "hash"):
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
        # Here: it imports mem0 (heavy), and must only after telemetry is switched off.
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

    def history(self, memory_ids: list[str]) -> HistoryRead:
        """Mem0's history database (its config's ``history_db_path``): one read-only query."""
        database = getattr(self._require_memory(), "db", None)
        path = getattr(database, "db_path", None)
        if database is None or not isinstance(path, str):
            raise ProviderError(f"{self.name}: this Mem0 keeps no history database")
        if path == ":memory:":  # only this process can read it: through Mem0's own connection
            where = "Mem0's in-memory history"
            return sqlite_history(memory_ids, connection=database.connection, where=where)
        return sqlite_history(memory_ids, path=path, where=path)

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
