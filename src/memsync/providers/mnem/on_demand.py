"""A mnem store that may not exist yet: one store per scope, made on its first write.

With ``create = true`` a missing store lists as empty (nothing to mirror, nothing deleted) and
is initialised by the first write memsync makes to it, so a scope with nothing to write gets
no empty store. With ``create = false`` (the default) a missing store is an error that names
the scope and says how to make it.

A first sync into such a store, outside the daemon and of at least ``AHEAD_FROM`` memories, is
staged ahead (``ahead``): a writer process makes the store and stages each memory the cycle
expects to create while memsync mirrors and plans; replay prepares its writes against what
was staged (``prepare_writes``), and ``commit_prepared`` takes the store over, unstages what
the plan did not ask for and commits the rest in one commit. Not in the daemon: there the store
is held to serve agents, and a writer process would lock them out of it for the whole copy.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from memsync.base.errors import ProviderError
from memsync.base.history import HistoryReport, Timeline
from memsync.base.records import Outgoing, Record, is_expired
from memsync.providers.base import Listing, WriteOp, WriteResult
from memsync.providers.held import HeldStores
from memsync.providers.mnem.ahead import StageAhead
from memsync.providers.mnem.batch import BatchWrite
from memsync.providers.mnem.convert import NodeSpec, node_spec
from memsync.providers.mnem.handle import StagedChangesPresent
from memsync.providers.mnem.listing import MnemListing
from memsync.providers.mnem.making import clear_unfinished, init_store
from memsync.providers.mnem.opening import open_store
from memsync.providers.mnem.provider import MnemProvider

AHEAD_FROM = 500  # memories expected before a writer process starts staging them ahead

log = logging.getLogger("memsync.mnem")


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
        self._ahead: StageAhead | None = None  # the writer process staging ahead
        self._waiting: list[NodeSpec] = []  # expected, too few yet to start the writer
        self._prepared: BatchWrite | None = None

    def _exists(self) -> bool:
        """Whether the store is there: one whose making was cut short is removed, not used."""
        if not (self.path / ".mnem").is_dir():
            return False
        if clear_unfinished(self.sdk, self.path):
            log.warning(
                "%s: removed the mnem store at %s: a process making it was killed inside "
                "mnem's init, so it never held anything; it is made again",
                self.name,
                self.path,
            )
            return False
        return True

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
        if self._ahead is not None:  # staged ahead for writes never committed: left noted
            self._ahead.stop()
            self._ahead = None
        self._absent = False
        self._prepared, self._waiting = None, []
        super().close()

    # staged ahead (see the module docstring and ``ahead``) ----------------------------------

    def stages_ahead(self) -> bool:
        """A store this cycle creates (asked before it is opened too), outside the daemon."""
        if self.held is not None or self._store is not None:
            return False
        return self._absent or (self.create_missing and not self._exists())

    def expect_creates(self, items: list[Outgoing]) -> None:
        """Stage these in a writer process, once ``AHEAD_FROM`` are expected (fewer gain less
        than the process costs). Never a node that is written expired or retired: the batch
        writes those itself, and forgets them after its commit."""
        if not self.stages_ahead():
            return
        for item in items:
            if item.is_blank:
                continue
            spec = node_spec(item, layout=self.layout)
            if not spec.retired and not is_expired(spec.expiration_date):
                self._waiting.append(spec)
        if self._ahead is None and len(self._waiting) >= AHEAD_FROM:
            self._ahead = StageAhead(self.path, self.in_flight)
        if self._ahead is not None:
            self._ahead.offer(self._waiting)
            self._waiting = []

    def planned_creates(self, origins: set[str]) -> None:
        self._waiting = []
        if self._ahead is not None:
            self.known.everything([])  # a store this cycle creates holds nothing committed
            offered = self._ahead.offered.items()
            self.known.learn_ahead({i: f for i, f in offered if f[1] in origins})

    def prepare_writes(self, ops: list[WriteOp]) -> list[WriteResult] | None:
        """With nodes staged ahead: plan these writes into the one batch ``commit_prepared``
        commits (planned without the store, which the writer holds meanwhile)."""
        if self._prepared is None and (self._ahead is None or not self.known.ahead):
            return None
        if self._prepared is None:
            self._prepared = BatchWrite(self, self.known)
        return self._prepared.prepare(ops)

    def commit_prepared(self) -> None:
        """Take the store over from the writer and commit every prepared write in one commit;
        on an error none is committed and nothing memsync staged stays staged."""
        batch, self._prepared = self._prepared, None
        assert batch is not None
        try:
            self._take_over(batch)
            batch.apply()
        except ProviderError:
            if self._store is None:
                self._drop_ahead()
            else:  # unstage what memsync's note names (a failed commit did already), or say
                self._note_foreign_staging()  # that another writer staged in the store
            self.known.forget_all()  # the ordinary path reads what the store holds
            raise

    def _take_over(self, batch: BatchWrite) -> None:
        """The writer let the store go: hold it, keeping staged only what the batch commits."""
        ahead, self._ahead = self._ahead, None
        assert ahead is not None
        try:
            offered = ahead.finish()
        except ProviderError:
            ahead.stop()
            raise
        store = open_store(self.sdk, self.path, name=self.name, busy_timeout=self.busy_timeout)
        problem = self._problem_with(store)
        if problem is not None:
            del store
            gc.collect()
            raise ProviderError(problem)
        self._store, self._owns_store, self._absent = store, True, False
        del store
        staged = {i for i, _ in self.store.staged()} | set(self.store.staged_deletions())
        if self.store.head_commit() is not None or not staged <= offered.keys():
            raise StagedChangesPresent(f"{self.name}: another writer wrote into {self.path}")
        wanted = batch.ahead_made.keys()
        if not wanted <= staged:
            raise ProviderError(f"{self.name}: the writer process staged only part of the batch")
        if not self.unstage(sorted(staged - wanted)):  # never committed: the plan left them
            raise ProviderError(f"{self.name}: cannot unstage what the plan did not ask for")
        self.known.learn_ahead({i: f for i, f in self.known.ahead.items() if i in wanted})

    def _drop_ahead(self) -> None:
        """Stop the writer, and leave the store as if there had been none: opened when it was
        made, whereupon the open unstages what memsync staged (its note names it)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.stop()
        if self._store is None and self._exists():
            self._absent = False
            MnemProvider.open(self)

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
        if (self._absent or self._ahead is not None) and ops:
            try:
                self._initialise()
            except ProviderError as exc:
                for op in ops:
                    yield WriteResult(op, error=exc)
                return
        yield from super().write_many(ops)

    def _initialise(self) -> None:
        """``mnem.init`` the store (and its parent directories) and keep the handle it returns.
        A writer staging ahead is stopped first (its store is opened, and what it staged
        unstaged): whoever writes into the new store outside ``commit_prepared`` comes here."""
        if self._ahead is not None:
            self._drop_ahead()
            if not self._absent:  # the writer made it: nothing committed in it, unless another did
                if self.store.head_commit() is None:
                    self.known.everything([])
                return
        sdk = self.sdk
        try:
            store = init_store(sdk, self.path)
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
