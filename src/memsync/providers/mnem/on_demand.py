"""A mnem store that may not exist yet: one store per scope, made on its first write.

With ``create = true`` a missing store lists as empty (nothing to mirror, nothing deleted) and
is initialised by the first write memsync makes to it, so a scope with nothing to write gets
no empty store. With ``create = false`` (the default) a missing store is an error that names
the scope and says how to make it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from memsync.base.errors import ProviderError
from memsync.base.history import HistoryReport, Timeline
from memsync.base.records import Record
from memsync.providers.base import Listing, WriteOp, WriteResult
from memsync.providers.held import HeldStores
from memsync.providers.mnem.listing import MnemListing
from memsync.providers.mnem.provider import MnemProvider


class OnDemandMnemProvider(MnemProvider):
    """A ``MnemProvider`` whose store is created on the first write when ``create`` is set."""

    def __init__(
        self,
        name: str,
        path: Path | str,
        *,
        create: bool,
        config_name: str,
        scope_label: str | None = None,
        branch: str | None = None,
        scope_key: str | None = None,
        busy_timeout: float = 10.0,
        sdk: ModuleType | None = None,
        held: HeldStores | None = None,
    ) -> None:
        super().__init__(
            name,
            path,
            branch=branch,
            scope_key=scope_key,
            busy_timeout=busy_timeout,
            sdk=sdk,
            held=held,
        )
        self.create_missing = create
        self.config_name = config_name
        self.scope_label = scope_label
        self._absent = False

    def _exists(self) -> bool:
        return (self.path / ".mnem").is_dir()

    def open(self) -> None:
        if self._store is not None or self._absent:
            return
        if not self._exists():
            if not self.create_missing:
                whose = f" for scope {self.scope_label}" if self.scope_label else ""
                raise ProviderError(
                    f"{self.name}: no mnem store at {self.path}{whose}; set create = true in "
                    f"providers.{self.config_name} to create it on the first write, or create "
                    f"it with python -c \"import mnem; mnem.init('{self.path}')\""
                )
            self._absent = True
            return
        super().open()

    def close(self) -> None:
        self._absent = False
        super().close()

    def check(self) -> str:
        if self._absent:
            return f"no store yet at {self.path}; created on the first write (create = true)"
        return super().check()

    def listing(self, cursor: str | None = None) -> Listing:
        if self._absent:
            return MnemListing("full", None, lambda listing: iter(()))
        return super().listing(cursor)

    def get(self, provider_id: str) -> Record | None:
        if self._absent:
            return None
        return super().get(provider_id)

    def hidden_records(self) -> list[Record]:
        if self._absent:
            return []
        return super().hidden_records()

    def history_refusal(self) -> str | None:
        return None if self._absent else super().history_refusal()

    def import_history(
        self, timeline: Timeline, *, budget: float | None = None, dry_run: bool = False
    ) -> HistoryReport:
        """A store not made yet is made here, to begin with the history (not in a dry run)."""
        if self._absent and not dry_run:
            self._initialise()
        return super().import_history(timeline, budget=budget, dry_run=dry_run)

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        if self._absent and ops:
            try:
                self._initialise()
            except ProviderError as exc:
                for op in ops:
                    yield WriteResult(op, error=exc)
                return
        yield from super().write_many(ops)

    def _initialise(self) -> None:
        """``mnem.init`` the store (and its parent directories) and keep the handle it returns."""
        sdk = self.sdk
        try:
            store = sdk.init(str(self.path))
        except sdk.MnemError as exc:
            error = ProviderError(f"{self.name}: cannot create a mnem store at {self.path}: {exc}")
        else:
            self._absent = False
            self._foreign_staging = []
            if self.held is not None:  # the daemon: the new store is borrowed like any other
                del store
                gc.collect()
                self.open()
                self.known.everything([])
                return
            self._store = store
            del store
            self._owns_store = True
            self.known.everything([])  # a new store: every node it holds is known (none)
            return
        gc.collect()
        raise error
