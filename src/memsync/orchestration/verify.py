"""``memsync verify A B`` for a team: every scope of a wildcard config, each compared as a pair.

The scopes are those staging knows and those the sources discover; each is verified by the
engine (``engine/verify.py``) and recorded under its scoped names, and the pair as a whole
under A and B, reconciled only when every scope is (the cutover readiness view).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.scopes import Scope
from memsync.config import Config
from memsync.config.scoping import fixed_keys, scoped_config_keys, scoped_in_store, wildcard_keys
from memsync.engine.verify import VerifyReport, record_quietly, verify_and_record
from memsync.orchestration.scopes.binding import ScopeBinder
from memsync.orchestration.scopes.cycle import known_scopes
from memsync.orchestration.scopes.discovery import discover_scopes
from memsync.orchestration.scopes.report import incomplete_discoveries, scope_noun
from memsync.orchestration.scopes.views import provider_in_scope
from memsync.providers import build_provider
from memsync.providers.base import Provider
from memsync.staging.store import StagingStore

VERIFY_LANES = 4  # scopes compared at once by a team's verify


@dataclass
class ScopeVerify:
    """One scope's verify: its report, or why it could not be compared."""

    scope: Scope
    report: VerifyReport | None = None
    error: str | None = None

    @property
    def reconciled(self) -> bool:
        return self.report is not None and self.report.reconciled

    def as_dict(self) -> dict[str, Any]:
        if self.report is None:
            return {"scope": self.scope.as_dict(), "reconciled": False, "error": self.error}
        return {"scope": self.scope.as_dict(), **self.report.as_dict(), "error": None}


@dataclass
class ScopedVerifyReport:
    """``verify A B`` over every scope of a wildcard config."""

    a: str
    b: str
    scopes: list[ScopeVerify] = field(default_factory=list)
    # Sources whose discovery could not show every scope: what a person must read ("server:
    # 500 users found, more may exist"). The scopes never looked at are not reconciled.
    unfound: dict[str, str] = field(default_factory=dict)

    @property
    def reconciled(self) -> bool:
        return not self.unfound and all(s.reconciled for s in self.scopes)

    @property
    def difference_count(self) -> int:
        return self.totals()["differences"]

    def totals(self) -> dict[str, int]:
        reports = [s.report for s in self.scopes if s.report is not None]
        return {
            "scopes": len(self.scopes),
            "reconciled": sum(1 for s in self.scopes if s.reconciled),
            "differing": sum(1 for r in reports if not r.reconciled),
            "errors": sum(1 for s in self.scopes if s.report is None),
            "differences": sum(r.difference_count for r in reports),
            "explained": sum(e.count for r in reports for e in r.explained),
            "count_a": sum(r.count_a for r in reports),
            "count_b": sum(r.count_b for r in reports),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "reconciled": self.reconciled,
            "scopes": {s.scope.label: s.as_dict() for s in self.scopes},
            "total": self.totals(),
            "discovery_incomplete": self.unfound,
        }


def verify_every_scope(
    config: Config,
    database: Path,
    a: str,
    b: str,
    *,
    bases: Mapping[str, Provider] | None = None,
    stop: threading.Event | None = None,
) -> ScopedVerifyReport:
    """``verify`` of A and B in every scope: those staging knows and those the sources
    discover. Each scope is recorded under its scoped names, and the pair as a whole under
    A and B (reconciled only when every scope is), for the cutover readiness view."""
    keys = scoped_config_keys(config.providers)
    if bases is None:
        bases = {name: build_provider(name, config) for name in dict.fromkeys((a, b))}
    binder = ScopeBinder(config, bases)
    report = ScopedVerifyReport(a, b)
    with contextlib.ExitStack() as handles:
        scopes: set[Scope] = set()
        for name, base in bases.items():
            entry = config.providers[name]
            if wildcard_keys(entry) or (
                entry.type == "pmm-dir" and not getattr(entry, "scope_key", None)
            ):
                base.open()
                handles.callback(base.close)
                found = discover_scopes(base, keys, fixed_keys(entry))
                scopes |= found.scopes
                if not found.complete:
                    noun = scope_noun(keys)
                    why = f" ({found.note})" if found.note else ""
                    report.unfound[name] = (
                        f"{name}: {len(found.scopes)} {noun} found, more may exist{why}"
                    )
            elif scoped_in_store(entry):  # one mnem store, every scope: opened once, not per scope
                base.open()
                handles.callback(base.close)
                scopes |= binder.discover_in_store(name)
        if database.exists():
            with StagingStore.open(database, create=False) as store:
                scopes |= known_scopes(store, config)
                report.unfound |= _unfound_by_sources(store, config, skip=set(bases))

        def one(scope: Scope) -> ScopeVerify:
            outcome = ScopeVerify(scope)
            if stop is not None and stop.is_set():
                return outcome
            try:
                first = binder.bind(a, bases[a], scope)
                second = binder.bind(b, bases[b], scope)
                outcome.report = verify_and_record(first, second, database)
            except MemsyncError as exc:
                outcome.error = str(exc)
            return outcome

        # Scopes are compared a few at a time: each one mostly waits, on a listing request or
        # on opening its store, and a thousand one after the other took a minute and a half.
        # A Mem0 library's one Memory is shared by its scopes: it is read one scope at a time.
        shared = any(config.providers[n].type == "mem0-oss" for n in bases)
        with concurrent.futures.ThreadPoolExecutor(1 if shared else VERIFY_LANES) as lanes:
            report.scopes = list(lanes.map(one, sorted(scopes)))
        if stop is not None and stop.is_set():
            raise MemsyncError("verify stopped by a signal before every scope was compared")
    _record_whole(database, report)
    return report


def _unfound_by_sources(store: StagingStore, config: Config, skip: set[str]) -> dict[str, str]:
    """The other sources of the team (neither A nor B) whose newest discovery, in the last
    sync, could not see every scope: the team memsync syncs may be larger than A and B show."""
    found = store.runs.latest_discovery()
    if found is None:
        return {}
    sources = {
        name: entry
        for name, entry in json.loads(found[2]).items()
        if name in config.providers and name not in skip
    }
    return incomplete_discoveries(sources)


def _record_whole(database: Path, report: ScopedVerifyReport) -> None:
    """The pair as a whole: its scopes' counts and differences summed."""
    totals = report.totals()
    if report.unfound:
        error = "; ".join(report.unfound.values())
        record_quietly(database, report.a, report.b, None, error)
        return
    if totals["errors"]:
        error = f"{totals['errors']} of {totals['scopes']} scopes could not be compared"
        record_quietly(database, report.a, report.b, None, error)
        return
    whole = VerifyReport(report.a, report.b, totals["count_a"], totals["count_b"])
    for scope in report.scopes:
        if scope.report is not None:
            whole.differences += scope.report.differences
            whole.duplicated += scope.report.duplicated
    record_quietly(database, report.a, report.b, whole, None)


def verify_in_scope(
    config: Config, database: Path, a: str, b: str, scope: Scope | None = None
) -> VerifyReport:
    """``verify_and_record`` of providers A and B, each bound to SCOPE when the config has
    wildcard scopes (the report names them as staging does, ``mem0[user_id=alice]``)."""
    first = provider_in_scope(config, a, scope)
    second = provider_in_scope(config, b, scope)
    return verify_and_record(first, second, database)


def verify_pair(
    config: Config,
    database: Path,
    a: str,
    b: str,
    *,
    bases: Mapping[str, Provider] | None = None,
    stop: threading.Event | None = None,
) -> VerifyReport | ScopedVerifyReport:
    """What `memsync verify A B` does: every scope of a wildcard config, else the two
    providers as configured (``bases``: A and B built already); recorded for the readiness
    view either way."""
    if scoped_config_keys(config.providers):
        return verify_every_scope(config, database, a, b, bases=bases, stop=stop)
    if bases is not None:
        return verify_and_record(bases[a], bases[b], database)
    return verify_in_scope(config, database, a, b)
