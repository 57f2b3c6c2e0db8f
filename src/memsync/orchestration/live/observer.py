"""Every cycle, full or hinted, reports back to the live side as it goes (``CycleObserver``).

As each scope's cycle ends, memsync notes each local store's files as it left them
(``local_stores.py``) and each probed store's token as it was before the listing
(``probing.py``), and what its own writes made of a probed scope: so that neither its own
writes nor what it has just listed start another cycle.
"""

from __future__ import annotations

from typing import Protocol

from memsync.base.scopes import Scope
from memsync.engine.report import CycleReport
from memsync.orchestration.live.local_stores import LocalStores
from memsync.orchestration.live.probing import Probing, Tokens
from memsync.staging import StagingStore


class CycleCounter(Protocol):
    """Where each cycle is counted (``ui/metrics.Metrics``): the hinted ones too."""

    def cycle_ended(self, run_id: int, *, per_scope: bool, trigger: str = ...) -> None: ...

    def cycle_not_run(self, outcome: str, trigger: str = ...) -> None: ...


class RunObserver:
    """One run's notes: its tokens (taken before it lists, TOKENS None: at its start), handed
    on scope by scope."""

    def __init__(self, local: LocalStores, probing: Probing, tokens: Tokens | None) -> None:
        self.local = local
        self.probing = probing
        self.tokens = tokens
        self.store: StagingStore | None = None

    def cycle_starting(self, store: StagingStore) -> None:
        self.store = store
        if self.tokens is None:
            self.tokens = self.probing.tokens_before_full_pass()

    def released(self, name: str, token: str | None) -> None:
        self.local.released(name, token)

    def scope_done(self, scope: Scope | None, report: CycleReport) -> None:
        self.local.scope_done(scope, report)
        if self.store is not None and self.tokens:
            self.probing.keep_tokens(self.store, self.tokens, scope, report)
        if self.store is not None:
            self.probing.expect_own_writes(self.store, scope, report)


__all__ = ["CycleCounter", "RunObserver"]
