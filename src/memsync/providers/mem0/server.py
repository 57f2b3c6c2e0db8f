"""``mem0-server``: Mem0's self-hosted REST server (FastAPI, ``server/main.py`` upstream).

Routes used: ``GET /memories?user_id&agent_id&run_id&top_k&show_expired`` (no cursor: ``top_k``
is raised until a call comes back short, ADR-0024, via ``paging``; past its 1,000 cap
``POST /search`` checked against ``GET /entities``, see ``server_listing``), ``GET/PUT/DELETE
/memories/{id}``, ``POST /memories``, ``GET /entities`` and ``GET /memories`` without ids
(scope discovery, ``server_discovery``; the probe, ``server_probes``), ``GET /openapi.json``
(once a process while the server proves every feature, ``server_features``) and, with
``refresh_token_file``, ``POST /auth/refresh`` (``server_tokens``).

memsync never lets a write trigger LLM extraction: creates send ``infer: false``, and only to a
server that proved it knows the field (see ``server_features``).

Mem0's update merges metadata, so an update tombstones the keys the memory had and the item
has not (``convert.TOMBSTONE``); which keys it had comes from the staging store through
the op (read from the server only when a caller has no staged copy). One request per write:
a create's answer names the new id and echoes the text, and an update's answer carries nothing
more than what was sent, so neither is read back. A missing memory is a NotFound on every
server version (older ones answer 500 to a PUT or DELETE of one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Self

import httpx

from memsync.base.errors import (
    ConfigError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.history import HistoryRead
from memsync.base.records import Outgoing, Record
from memsync.base.scopes import WILDCARD, Scope
from memsync.base.secrets import Secret, resolve_secret
from memsync.config import Config, Mem0ServerConfig
from memsync.config.scoping import fixed_keys, wildcard_keys
from memsync.providers.base import Capabilities, Listing, WriteOp, require_content
from memsync.providers.change_probe import ProbeMaker
from memsync.providers.discovery import Discovery
from memsync.providers.http.provider import DEFAULT_CONCURRENCY
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.http.shapes import expect_list, expect_object
from memsync.providers.mem0.convert import (
    metadata_for_mem0,
    version_of,
)
from memsync.providers.mem0.http import Mem0HttpProvider, path_segment
from memsync.providers.mem0.server_database import (
    ServerDatabase,
    psycopg_missing,
)
from memsync.providers.mem0.server_discovery import discover_server_scopes
from memsync.providers.mem0.server_entities import EntityCensus, read_entities
from memsync.providers.mem0.server_features import (
    KNOWN,
    ServerFeatures,
    features_from_openapi,
    features_from_probes,
)
from memsync.providers.mem0.server_history import ServerHistory, history_from_config
from memsync.providers.mem0.server_listing import MAX_TOP_K, ServerListing, read_scope
from memsync.providers.mem0.server_probes import ServerDatabaseProbe, ServerEntitiesProbe
from memsync.providers.mem0.server_session import ServerSession
from memsync.providers.mem0.server_tokens import (
    RefreshTokenFile,
    refresh_call,
    require_lasting_credential,
)


class Mem0ServerProvider(Mem0HttpProvider):
    reread_hint = "; check the server's logs"
    type = "mem0-server"
    family = "mem0"
    capabilities = Capabilities(timestamps=True, ordered_updates=True, history=True)

    def __init__(
        self,
        name: str,
        base_url: str,
        scope: Mapping[str, str],
        *,
        secret: Secret | None = None,
        auth: Literal["api-key", "bearer", "none"] = "api-key",
        timeout: float = 30.0,
        allow_insecure_http: bool = False,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        start_top_k: int = MAX_TOP_K,
        concurrency: int = DEFAULT_CONCURRENCY,
        refresh_token_file: Path | None = None,
        database: ServerDatabase | None = None,
        scopes_file: Path | None = None,
        scopes_command: tuple[str, ...] | None = None,
        history: ServerHistory | None = None,
    ) -> None:
        """``history``: where the server keeps its memories' history (None: its route)."""
        if refresh_token_file is not None and auth != "bearer":
            raise ConfigError(f'providers.{name}: refresh_token_file goes with auth = "bearer"')
        if auth != "none" and secret is None and refresh_token_file is None:
            raise ConfigError(
                f"providers.{name}: auth = {auth!r} needs api_key_env or api_key_file "
                + ("(or refresh_token_file) " if auth == "bearer" else "")
                + '(or auth = "none" for a server running with AUTH_DISABLED)'
            )
        super().__init__(
            name,
            base_url,
            secret=secret,
            auth=auth,
            timeout=timeout,
            allow_insecure_http=allow_insecure_http,
            transport=transport,
            retry=retry,
            sleep=sleep,
            concurrency=concurrency,
        )
        self.scope = self.scope_ids(scope)
        self.start_top_k = start_top_k
        # Discovery and the probe read the server's own database where one is configured;
        # else the scopes the team names (scopes_file, scopes_command) where it names them.
        self.database = database
        self.scopes_file = scopes_file
        self.scopes_command = scopes_command
        self.history_store = history or ServerHistory(name)
        self._session = ServerSession()
        self._owns_session = True
        if refresh_token_file is not None:
            self._client_args["tokens"] = RefreshTokenFile(
                name,
                self.base_url,
                refresh_token_file,
                refresh_call(name, self.base_url, timeout=timeout, transport=transport),
                access=secret,
            )
        self._client_args["auth_advice"] = _advice(auth, refresh_token_file)

    # lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        super().close()
        if self._owns_session:
            self._session.clear()  # a server may be upgraded between cycles
            if self.database is not None:
                self.database.close()
            self.history_store.close()

    def bound_to(self, name: str, scope: Mapping[str, str]) -> Self:
        """This server's provider for one scope: its own name and scope, and this provider's
        client and session, so the schema and entities are read once for every scope."""
        bound = super().bound_to(name, scope)
        bound._owns_session = False
        return bound

    def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
        """Its database, the scopes the team names, or its routes (``server_discovery``)."""
        return discover_server_scopes(self, keys, fixed)

    def read_ahead(self, scopes: list[Scope]) -> None:
        """Read these scopes' memories a few at a time, ahead of the cycle that takes them
        in this order (``ServerListing`` takes each one's read, or reads it itself)."""
        fixed = {k: v for k, v in self.scope.items() if v != WILDCARD}
        bound = [self.bound_to(self.name, {**fixed, **scope.as_dict()}) for scope in scopes]
        by_key = {_scope_key(b.scope): b for b in bound}
        self._session.read_ahead(list(by_key), lambda key: read_scope(by_key[key]))

    def read_taken(self) -> tuple[bool, Any]:
        """This scope's read, when one was made ahead (its error raised here)."""
        return self._session.taken(_scope_key(self.scope))

    # identity -------------------------------------------------------------------------

    def identity(self) -> str:
        scope = ",".join(f"{k}={v}" for k, v in sorted(self.scope.items()))
        return f"mem0-server:{self.base_url}#{scope}"

    # server features --------------------------------------------------------------------

    def features(self) -> ServerFeatures:
        """What the server supports (``infer``, ``top_k``, ``/entities``...): proven once a
        process for a current server, else once a cycle for this provider and every scope
        bound from it (``server_features``)."""
        return self._session.features(
            lambda: KNOWN.features(
                self._server_key,
                lambda: (
                    features_from_openapi(self.http)
                    or features_from_probes(self.http, self._get_all)
                ),
            )
        )

    @property
    def _server_key(self) -> tuple[str, object]:
        """The server, as this process knows it: its URL, and the transport a test gives."""
        return (self.base_url, self._client_args.get("transport"))

    def features_changed(self, why: str) -> None:
        """A route answered as the features this process knows say it would not: read them
        again at the next cycle."""
        KNOWN.forget(self._server_key, f"{self.name}: {why}")

    def entities(self) -> EntityCensus | None:
        """``GET /entities`` once per cycle (None: a server without it)."""
        promised = self.features().entities
        if promised is False:
            return None
        return self._session.census(lambda: self._read_entities(promised=bool(promised)))

    def _read_entities(self, *, promised: bool) -> EntityCensus | None:
        census = read_entities(self.http, self.name)
        if census is None and promised:
            self.features_changed("GET /entities answered 404 where the server's schema has it")
        return census

    def admin_listing(self, top_k: int = MAX_TOP_K) -> list[Any]:
        """``GET /memories`` without ids: every memory, capped server-wide (admin only)."""
        return self._memories(self.http.get("/memories", params={"top_k": top_k}))

    # reads ----------------------------------------------------------------------------

    def check(self) -> str:
        features = self.features()
        count = sum(len(page.records) for page in self.listing().pages())
        writes = (
            "writes with infer:false"
            if features.infer
            else "writes refused: the server cannot promise infer:false"
        )
        return f"reachable, {count} memories in scope; {writes} (checked by {features.how})"

    def listing(self, cursor: str | None = None) -> Listing:
        return ServerListing(self)

    def versions_changed_since(self, since: datetime) -> dict[str, str | None]:
        """The server has no updated_at filter: one read of the scope (as the listing reads
        it) gives every memory's version token, which memsync compares with the mirror's."""
        return {memory_id: version_of(raw) for memory_id, raw in read_scope(self).rows.items()}

    def history(self, memory_ids: list[str]) -> HistoryRead:
        """Its memories' history: its table, its file, or its route (``server_history``)."""
        return self.history_store.read(memory_ids, self._history_of, concurrency=self.concurrency)

    def _history_of(self, memory_id: str) -> Any:
        return self.http.get(f"/memories/{path_segment(memory_id)}/history")

    def _get_all(self, top_k: int) -> list[Any]:
        # show_expired: expiry is not deletion. Servers from before 2026-06 ignore it and hide
        # expired memories; their listings say so (hides_expired) for the mirror to confirm.
        params = {**self.scope, "top_k": top_k, "show_expired": "true"}
        return self._memories(self.http.get("/memories", params=params))

    def _memories(self, body: Any) -> list[Any]:
        """The rows of a ``GET /memories`` answer: a bare list, or ``{"results": [...]}``."""
        if isinstance(body, dict):
            if "results" not in body:
                raise InvalidResponse(
                    f"{self.name}: GET /memories answered an object without 'results'"
                )
            body = body["results"]
        return expect_list(self.name, body, "GET /memories")

    def _raw(self, provider_id: str) -> dict[str, Any] | None:
        """The memory as the server holds it, or None when absent or outside the scope."""
        try:
            body = self.http.get(f"/memories/{path_segment(provider_id)}")
        except NotFound:
            return None
        if body is None:
            return None
        raw = expect_object(self.name, body, "GET /memories/{id}")
        if any(raw.get(k) != v for k, v in self.scope.items()):
            return None
        return raw

    # writes ---------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        self._require_infer_false()
        metadata = metadata_for_mem0(item)
        if item.created_at:
            metadata["created_at"] = item.created_at  # Mem0 backdates created_at from metadata
        role = item.provenance.get("role")
        body: dict[str, Any] = {
            "messages": [
                {"role": role if role in ("user", "assistant") else "user", "content": item.content}
            ],
            **self.scope,
            "metadata": metadata,
            "infer": False,
        }
        if item.expiration_date:
            body["expiration_date"] = item.expiration_date
        try:
            answer = self.http.json("POST", "/memories", json=body)
        except TransientProviderError:
            raise
        except ProviderError:  # refused (a 422 over infer?): the server may have changed
            self.features_changed("POST /memories refused a create")
            raise
        results = answer.get("results") if isinstance(answer, dict) else answer
        added = [
            r
            for r in expect_list(self.name, results, "POST /memories")
            if isinstance(r, dict) and r.get("id") and r.get("event", "ADD") == "ADD"
        ]
        if len(added) != 1:
            self.features_changed(f"POST /memories added {len(added)} memories, not one")
            raise ProviderError(
                f"{self.name}: POST /memories added {len(added)} memories where one was "
                f"expected (origin {item.origin}); check the server's logs"
            )
        return self._as_written(str(added[0]["id"]), item, added[0].get("memory"))

    def update_op(self, op: WriteOp) -> Record:
        assert op.item is not None and op.provider_id is not None
        item, provider_id = op.item, op.provider_id
        require_content(self.name, item)
        replacing = self._replacing(op)
        if replacing is None:
            raise NotFound(f"{self.name}: memory {provider_id} is not in scope {self.scope}")
        metadata = metadata_for_mem0(item, replacing=replacing)
        try:
            self.http.json(
                "PUT",
                f"/memories/{path_segment(provider_id)}",
                json={
                    "text": item.content,
                    "metadata": metadata,
                    "expiration_date": item.expiration_date,  # None clears it
                },
            )
        except TransientProviderError:
            # Servers before the 404 mapping answer 500 for a missing memory.
            if self._raw(provider_id) is None:
                raise NotFound(f"{self.name}: memory {provider_id} is gone") from None
            raise
        return self._as_written(provider_id, item)

    def delete(self, provider_id: str) -> None:
        try:
            self.http.json("DELETE", f"/memories/{path_segment(provider_id)}")
        except NotFound:
            return
        except TransientProviderError:
            # Servers before the 404 mapping answer 500 for a missing memory.
            if self._raw(provider_id) is None:
                return
            raise

    def prepare_writes(self, ops: list[WriteOp]) -> None:
        if any(op.kind == "create" for op in ops):
            self.features()  # proven once, before the workers start

    def _require_infer_false(self) -> None:
        features = self.features()
        if features.infer:
            return
        why = (
            "its POST /memories has no 'infer' field"
            if features.infer is False
            else "it did not show whether POST /memories accepts 'infer'"
        )
        raise ProviderError(
            f"{self.name}: refusing to write to the Mem0 server at {self.base_url}: {why} "
            f"(checked by {features.how}), so it could run LLM extraction and store rewritten "
            "facts instead of the memory; upgrade the server to a release that accepts infer"
        )


def _advice(auth: str, refresh_token_file: Path | None) -> str | None:
    """What to do when the server refuses the credential (401), for each way of giving one."""
    if auth == "bearer" and refresh_token_file is None:
        return (
            "a Mem0 server's bearer tokens expire 30 minutes after login: set "
            'refresh_token_file so memsync renews them, or use an API key (auth = "api-key")'
        )
    if auth == "api-key":
        return "give memsync the server's ADMIN_API_KEY or an API key from its dashboard (m0sk_...)"
    return None


def build(name: str, entry: Mem0ServerConfig, config: Config) -> Mem0ServerProvider:
    secret = resolve_secret(name, entry.api_key_env, entry.api_key_file)
    database = None
    if entry.database:
        missing = psycopg_missing(name)
        if missing is not None:
            raise missing
        url = resolve_secret(
            name, entry.database_url_env, entry.database_url_file, key="database_url"
        )
        assert url is not None
        database = ServerDatabase(name, url, entry.database_table)
    return Mem0ServerProvider(
        name,
        entry.base_url,
        entry.scope,
        secret=secret,
        auth=entry.auth,
        timeout=entry.timeout,
        allow_insecure_http=entry.allow_insecure_http,
        concurrency=entry.concurrency,
        refresh_token_file=entry.refresh_token_file,
        database=database,
        scopes_file=entry.scopes_file,
        scopes_command=entry.scopes_command,
        history=history_from_config(name, entry, database),
    )


def change_probe(name: str, entry: Mem0ServerConfig) -> ProbeMaker:
    """The server's own table where memsync may read it, else ``GET /entities``."""
    kind = ServerDatabaseProbe if entry.database else ServerEntitiesProbe
    keys, fixed = wildcard_keys(entry), fixed_keys(entry)
    return lambda provider: kind(name, provider, keys, fixed)


def _scope_key(scope: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(scope.items()))


def check_for_daemon(name: str, entry: Mem0ServerConfig, config: Config) -> None:
    """What would stop a long-running daemon, refused at its start and on reload: a bearer
    token that dies within the day with nothing to renew it (``server_tokens``)."""
    require_lasting_credential(name, entry)
