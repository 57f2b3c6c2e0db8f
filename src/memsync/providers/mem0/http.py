"""What the two Mem0 HTTP providers (self-hosted server, hosted platform) have in common.

Both hold one Mem0 scope, read a memory by id and map it with ``convert``; they differ
in routes, auth and listing, which each keeps in its own module.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, Self
from urllib.parse import quote

from memsync.base.errors import ProviderError
from memsync.base.records import Outgoing, Record, is_blank
from memsync.base.scopes import WILDCARD, Scope, scoped_name
from memsync.providers.base import WriteOp
from memsync.providers.http.provider import HttpProvider
from memsync.providers.mem0.convert import SCOPE_IDS, record_from_mem0, scope_key_of


def path_segment(provider_id: str) -> str:
    """A memory id as one URL path segment, whatever it contains."""
    return quote(provider_id, safe="")


class Mem0HttpProvider(HttpProvider):
    """A Mem0 scope behind an HTTP API. Subclasses set the scope and implement ``_raw``."""

    scope: dict[str, str]
    reread_hint = ""  # appended when a memory cannot be read back after a write

    @staticmethod
    def scope_ids(scope: Mapping[str, str]) -> dict[str, str]:
        return {k: scope[k] for k in SCOPE_IDS if scope.get(k)}

    def scope_key(self) -> str:
        return scope_key_of(self.scope)

    def describe_scope(self) -> dict[str, Any]:
        return {"scope_key": self.scope_key(), **self.scope}

    # many scopes: a wildcard scope is one API, asked per scope ----------------------------

    @property
    def discovers_scopes(self) -> bool:
        """A wildcard scope: the API names the scopes it holds."""
        return WILDCARD in self.scope.values()

    def bind(self, scope: Scope) -> Self:
        """The wildcard filled with SCOPE, beside the fixed keys."""
        fixed = {k: v for k, v in self.scope.items() if v != WILDCARD}
        return self.bound_to(scoped_name(self.name, scope), {**fixed, **scope.as_dict()})

    def bound_to(self, name: str, scope: Mapping[str, str]) -> Self:
        """This provider for one scope: its own name and scope, and this provider's settings
        (key, endpoint, transport) and client, so that every scope shares one pool."""
        bound = self.sharing(name)
        bound.scope = self.scope_ids(scope)
        return bound

    @abstractmethod
    def _raw(self, provider_id: str) -> dict[str, Any] | None:
        """The memory as the API returns it, or None when it is missing or out of scope."""

    def get(self, provider_id: str) -> Record | None:
        raw = self._raw(provider_id)
        if raw is None:
            return None
        record = record_from_mem0(raw, self.scope_key())
        return record if isinstance(record, Record) else None

    def _as_written(self, provider_id: str, item: Outgoing, text: object = None) -> Record:
        """What a write left, built from what was sent (and the text the answer echoed).

        No version token: the next listing supplies it and, the fingerprint agreeing,
        reports no change. Saves reading every memory back after writing it.
        """
        return Record(
            id=provider_id,
            content=text if isinstance(text, str) and not is_blank(text) else item.content,
            metadata=dict(item.metadata),
            scope_key=self.scope_key(),
            created_at=item.created_at,
            provenance=dict(item.provenance),
            origin=item.origin,
            expiration_date=item.expiration_date,
        )

    def _replacing(self, op: WriteOp) -> dict[str, Any] | None:
        """The user metadata an update replaces: staged in the op, else read (None: gone)."""
        if op.previous is not None:
            return dict(op.previous.metadata)
        assert op.provider_id is not None
        held = self.get(op.provider_id)
        return None if held is None else dict(held.metadata)

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self.update_op(WriteOp("update", provider_id, item=item, provider_id=provider_id))

    @abstractmethod
    def update_op(self, op: WriteOp) -> Record:
        """Update as ``op`` says, using ``op.previous`` for what it replaces when present."""

    def _reread(self, provider_id: str, what: str) -> Record:
        record = self.get(provider_id)
        if record is None:
            raise ProviderError(
                f"{self.name}: memory {provider_id} is not readable in scope {self.scope} "
                f"right after its {what}{self.reread_hint}"
            )
        return record
