"""One sync cycle: mirror every provider, plan every memory that needs it, replay the plan.

The engine's public entry is ``run_cycle``. Its steps, each safe to interrupt:

1. **mirror** each provider into staging (``mirror.Mirror``), page by page;
2. find the **dirty** memories by comparing mirror, bases and agreed versions in SQL (state,
   not events: a crash or a dry run never makes a change invisible to the next cycle);
3. **plan** each dirty memory with the pure ``plan.plan_link`` and record the decision;
4. **replay** the actions through the outbox, recording each outcome before the next;
   targets in a fixed order: the active backend, the other providers, backups last.

At-least-once replay plus origin markers make it effectively once: a write whose outcome was
lost in a crash shows up in the next mirror under its origin and is recognised, not redone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memsync.config import Config
from memsync.errors import (
    AuthError,
    MemsyncError,
    ProviderBusy,
    RefusedError,
    TransientProviderError,
)
from memsync.faults import fault_point
from memsync.providers.base import Provider, WriteOp, WriteResult
from memsync.records import Outgoing, Record, parse_instant, utc_now_iso
from memsync.staging.store import RECORD_COLUMNS, StagingStore, dumps, record_row, row_record
from memsync.sync.adopt import Adoption, adopt
from memsync.sync.freshness import changed_targets
from memsync.sync.mirror import (
    INSERT_JOURNAL,
    DeleteLimits,
    Mirror,
    MirrorResult,
    check_identity,
    journal_row,
    load_cursor,
    save_cycle_summary,
)
from memsync.sync.plan import Action, Decision, LinkView, Side, Topology, Version, plan_link

log = logging.getLogger(__name__)

PLAN_CHUNK = 500
MAX_LISTED = 1000  # actions listed one by one in a report; the rest are counted
OUTCOME_GROUP = 200  # successful writes recorded per transaction during replay
OUTCOME_DELAY = 2.0  # ...or after this many seconds, whichever comes first
OUTBOX_RUNS_KEPT = 50  # finished actions of this many recent runs stay for inspection
REPLAY_BATCH = 1000
BACKOFF_BASE = timedelta(seconds=30)
BACKOFF_MAX = timedelta(hours=1)


@dataclass
class SyncOptions:
    only: list[str] | None = None  # --provider: mirror and write only these (and the active)
    dry_run: bool = False
    force_delete: bool = False
    full: bool = False  # list incremental providers in full
    retry_dead: bool = False
    stop: threading.Event | None = None  # set by SIGTERM: finish the action in flight, stop


@dataclass
class ProviderOutcome:
    name: str
    state: str = "ok"  # ok | partial | busy | refused | error | skipped
    mirror: MirrorResult | None = None
    error: str | None = None
    written: int = 0
    failed: int = 0
    replanned: int = 0  # writes held back: the target changed after the mirror
    adopted: int = 0  # records linked by content to a copy another provider already held
    seconds: float = 0.0  # time spent listing and writing this provider

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "state": self.state,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }
        if self.mirror:
            data.update(self.mirror.as_dict())
        data.update({"written": self.written, "failed": self.failed, "adopted": self.adopted})
        if self.replanned:
            data["replanned"] = self.replanned
        return data


@dataclass
class CycleReport:
    run_id: int
    dry_run: bool
    started_at: str
    finished_at: str | None = None
    providers: dict[str, ProviderOutcome] = field(default_factory=dict)
    planned: list[dict[str, Any]] = field(default_factory=list)  # the first MAX_LISTED
    planned_total: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    replayed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0  # actions held back by retry backoff or parked as dead
    interrupted: bool = False

    def add_planned(self, action: Action) -> None:
        """Count every action; keep the first MAX_LISTED for the report (memory stays flat)."""
        self.planned_total += 1
        if len(self.planned) < MAX_LISTED:
            self.planned.append(_action_dict(action))

    def add_adoption(self, adoption: Adoption) -> None:
        """An ``adopt`` action: no write, a record taking another's logical id."""
        self.planned_total += 1
        if len(self.planned) < MAX_LISTED:
            self.planned.append(
                {
                    "action": "adopt",
                    "memory": adoption.link_id,
                    "provider": adoption.provider,
                    "from": adoption.from_provider,
                    "provider_id": adoption.provider_id,
                }
            )

    @property
    def refusals(self) -> dict[str, str]:
        return {
            n: o.mirror.refused for n, o in self.providers.items() if o.mirror and o.mirror.refused
        }

    @property
    def exit_code(self) -> int:
        if self.refusals:
            return RefusedError.exit_code
        if (
            self.failures
            or any(o.state in ("busy", "error") for o in self.providers.values())
            or any(c.get("state") == "open" for c in self.conflicts)
        ):
            return 1
        return 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "providers": {n: o.as_dict() for n, o in self.providers.items()},
            "actions": self.planned,
            "actions_total": self.planned_total,
            "replayed": dict(self.replayed),
            "failures": self.failures,
            "conflicts": self.conflicts,
            "refusals": self.refusals,
            "waiting": self.waiting,
            "interrupted": self.interrupted,
            "exit_code": self.exit_code,
        }


class Engine:
    def __init__(
        self,
        config: Config,
        store: StagingStore,
        providers: dict[str, Provider],
        *,
        scoped: bool = False,
    ) -> None:
        """``scoped``: these providers are one scope among others in the same staging store
        (``sync.scopes``); the cycle then looks only at memories they hold or held."""
        self.config = config
        self.store = store
        self.providers = providers
        self.scoped = scoped
        self.conn = store.conn
        self._resolving: set[str] = set()
        self._any_failed = True
        self.topology = Topology(
            active=config.sync.active,
            directions={n: p.direction for n, p in config.providers.items()},
            policy=config.sync.conflict,
        )

    # the cycle ----------------------------------------------------------------------------

    def run_cycle(
        self, options: SyncOptions | None = None, *, run_id: int | None = None
    ) -> CycleReport:
        """One cycle; each provider is opened once, on first use, and closed at the end.

        With ``run_id`` the cycle is part of a run the caller started and finishes (one run
        for all scopes); the providers' summaries are still saved here.
        """
        with contextlib.ExitStack() as self._handles:
            self._opened: set[str] = set()
            return self._cycle(options or SyncOptions(), run_id)

    def _use(self, provider: Provider) -> Provider:
        """Open a provider for the rest of this cycle (may raise ProviderBusy)."""
        if provider.name not in self._opened:
            provider.open()
            self._opened.add(provider.name)
            self._handles.callback(provider.close)
        return provider

    def _cycle(self, options: SyncOptions, joined_run: int | None = None) -> CycleReport:
        run_id = joined_run if joined_run is not None else self._start_run()
        report = CycleReport(run_id, options.dry_run, utc_now_iso())
        selected = self._selected(options)
        limits = DeleteLimits(
            self.config.sync.max_delete, self.config.sync.max_delete_count, options.force_delete
        )
        for name in self.providers:
            outcome = ProviderOutcome(name)
            report.providers[name] = outcome
            if name not in selected or _stopping(options):
                outcome.state = "skipped"
                report.interrupted = report.interrupted or _stopping(options)
                continue
            started = time.monotonic()
            self._mirror_one(self.providers[name], run_id, limits, options, outcome)
            outcome.seconds += time.monotonic() - started
            fault_point("cycle:after-mirror")
        unavailable = frozenset(
            n for n, o in report.providers.items() if o.state not in ("ok", "partial")
        )
        topology = Topology(
            self.topology.active, self.topology.directions, self.topology.policy, unavailable
        )
        if joined_run is None:  # a shared run does this once, in start_shared_run
            self._supersede_stale(run_id, options)
        if not _stopping(options):
            self._plan(run_id, topology, report, options)
        fault_point("cycle:after-plan")
        if not options.dry_run and not _stopping(options):
            self._replay(run_id, topology, report, options)
        report.finished_at = utc_now_iso()
        self._finish_run(report, record_run=joined_run is None)
        if joined_run is None:
            self._prune_outbox(run_id)
        return report

    def start_shared_run(self, options: SyncOptions) -> int:
        """Start a run that several cycles join (one per scope, ``run_cycle(run_id=...)``).

        The run-wide steps happen once here (and in ``end_shared_run``), not once per cycle:
        each scans the outbox's older runs, which a thousand scopes would repeat.
        """
        run_id = self._start_run()
        self._supersede_stale(run_id, options)
        return run_id

    def end_shared_run(self, run_id: int) -> None:
        self._prune_outbox(run_id)

    def _selected(self, options: SyncOptions) -> set[str]:
        if not options.only:
            return set(self.providers)
        return set(options.only) | {self.topology.active}

    def _start_run(self) -> int:
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (started_at, status, pid) VALUES (?, 'running', ?)",
                (utc_now_iso(), os.getpid()),
            )
            return int(cursor.lastrowid or 0)

    def _finish_run(self, report: CycleReport, *, record_run: bool = True) -> None:
        status = (
            "interrupted"
            if report.interrupted
            else ("ok" if report.exit_code == 0 else "attention")
        )
        for name, outcome in report.providers.items():
            if outcome.state == "skipped":
                continue
            summary = outcome.as_dict()
            summary["skipped"] = len(summary.get("skipped", []))
            summary["finished_at"] = report.finished_at
            summary["run_id"] = report.run_id
            summary["busy"] = outcome.state == "busy"
            save_cycle_summary(self.store, name, summary)
        if not record_run:
            return
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
                (
                    report.finished_at,
                    status,
                    json.dumps(report.as_dict(), default=str),
                    report.run_id,
                ),
            )

    def _prune_outbox(self, run_id: int) -> None:
        """Forget finished actions of old runs (the journal keeps what they wrote)."""
        with self.store.transaction() as conn:
            conn.execute(
                "DELETE FROM outbox WHERE state IN ('done', 'superseded') AND run_id < ?",
                (run_id - OUTBOX_RUNS_KEPT,),
            )

    # mirror -------------------------------------------------------------------------------

    def _mirror_one(
        self,
        provider: Provider,
        run_id: int,
        limits: DeleteLimits,
        options: SyncOptions,
        outcome: ProviderOutcome,
    ) -> None:
        try:
            reset = check_identity(self.store, provider)
            cursor, full_scan_at = load_cursor(self.store, provider.name)
            if not self._incremental_allowed(provider, cursor, full_scan_at, options):
                cursor = None
            listing = self._use(provider).listing(cursor)
            write_back = not options.dry_run and self.topology.is_receiver(provider.name)
            mirror = Mirror(self.store, provider, run_id, limits, options.stop, write_back)
            result = mirror.run(listing)
            result.reset = reset
            outcome.mirror = result
            if result.refused:
                outcome.state = "refused"
            elif not result.complete:
                outcome.state = "partial"
        except ProviderBusy as exc:
            outcome.state, outcome.error = "busy", str(exc)
        except MemsyncError as exc:
            outcome.state, outcome.error = "error", str(exc)
        if outcome.error:
            log.warning("%s: %s", provider.name, outcome.error)

    def _incremental_allowed(
        self,
        provider: Provider,
        cursor: str | None,
        full_scan_at: str | None,
        options: SyncOptions,
    ) -> bool:
        if options.full or cursor is None or not provider.capabilities.incremental:
            return False
        last_full = parse_instant(full_scan_at)
        if last_full is None:
            return False
        age = (datetime.now(UTC) - last_full).total_seconds()
        return age < self.config.sync.full_scan_interval

    # dirty set ----------------------------------------------------------------------------

    def _mark_dirty(self) -> int:
        """Every memory where some provider differs from what memsync last reconciled."""
        conn = self.conn
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS dirty (link_id TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM temp.dirty")
        mine = self._own_rows
        queries = [
            # a record that is new here, or changed since its base
            "SELECT r.link_id FROM records r LEFT JOIN links b "
            "ON b.link_id = r.link_id AND b.provider = r.provider "
            f"WHERE (b.fingerprint IS NULL OR b.fingerprint != r.fingerprint){mine('r')}",
            # a base whose record is gone
            "SELECT b.link_id FROM links b WHERE NOT EXISTS (SELECT 1 FROM records r "
            "INDEXED BY records_by_link "
            f"WHERE r.provider = b.provider AND r.link_id = b.link_id){mine('b')}",
            # a base behind the agreed version (an earlier write failed)
            "SELECT b.link_id FROM links b JOIN link_state s ON s.link_id = b.link_id "
            f"WHERE s.deleted = 0 AND b.fingerprint != s.fingerprint{mine('b')}",
            # a deleted memory some provider still holds
            "SELECT s.link_id FROM link_state s JOIN records r ON r.link_id = s.link_id "
            f"WHERE s.deleted = 1{mine('r')}",
            # a conflict the user resolved
            "SELECT link_id FROM conflicts WHERE state = 'resolving'"
            + (
                " AND link_id IN (SELECT o.link_id FROM links o WHERE 1"
                f"{mine('o')} UNION SELECT o.link_id FROM records o WHERE 1{mine('o')})"
                if self.scoped
                else ""
            ),
            # two records of one memory in one provider (a duplicate to clean up)
            f"SELECT link_id FROM records r WHERE 1{mine('r')} "
            "GROUP BY provider, link_id HAVING COUNT(*) > 1",
        ]
        for receiver in self._receivers():
            held = (
                f"FROM links o JOIN link_state s ON s.link_id = o.link_id WHERE 1{mine('o')} AND"
                if self.scoped
                else "FROM link_state s WHERE"
            )
            queries.append(
                f"SELECT s.link_id {held} s.deleted = 0 AND NOT EXISTS "
                "(SELECT 1 FROM links b WHERE b.link_id = s.link_id AND b.provider = "
                f"{_quote(receiver)})"
            )
        for query in queries:
            conn.execute(f"INSERT OR IGNORE INTO temp.dirty {query}")
        return int(conn.execute("SELECT COUNT(*) FROM temp.dirty").fetchone()[0])

    def _own_rows(self, alias: str) -> str:
        """In a scoped cycle, a clause keeping rows of this cycle's providers (else nothing)."""
        if not self.scoped:
            return ""
        names = ", ".join(_quote(name) for name in self.providers)
        return f" AND {alias}.provider IN ({names})"

    def _receivers(self) -> list[str]:
        return [n for n in self.providers if self.topology.is_receiver(n)]

    # plan ---------------------------------------------------------------------------------

    def _plan(
        self, run_id: int, topology: Topology, report: CycleReport, options: SyncOptions
    ) -> None:
        if options.dry_run:
            # A dry run shows what adoption would link but keeps none of it: the relinks are
            # rolled back once the plan has been read (no network call runs meanwhile).
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self._adopt(run_id, report)
                self._mark_dirty()
                self._plan_dirty(run_id, topology, report, options)
            finally:
                self.conn.execute("ROLLBACK")
            return
        with self.store.transaction():
            self._adopt(run_id, report)
            self._mark_dirty()
        fault_point("plan:adopted")
        self._plan_dirty(run_id, topology, report, options)

    def _adopt(self, run_id: int, report: CycleReport) -> None:
        """Link what providers already held in common (``sync/adopt.py``), unless turned off."""
        if self.config.sync.adopt == "off":
            return
        result = adopt(self.conn, self.providers, self.topology.active, run_id)
        for name, count in result.by_provider.items():
            if name in report.providers:
                report.providers[name].adopted += count
        for adoption in result.listed:
            report.add_adoption(adoption)
        report.planned_total += result.total - len(result.listed)

    def _plan_dirty(
        self, run_id: int, topology: Topology, report: CycleReport, options: SyncOptions
    ) -> None:
        self._resolving = {
            row[0]
            for row in self.conn.execute("SELECT link_id FROM conflicts WHERE state = 'resolving'")
        }
        self._any_failed = (
            self.conn.execute(
                "SELECT 1 FROM outbox WHERE state IN ('failed', 'dead') LIMIT 1"
            ).fetchone()
            is not None
        )
        complete = {
            n: (o.mirror.complete if o.mirror else True) for n, o in report.providers.items()
        }
        for chunk in self._dirty_chunks():
            views, extras = self._views(chunk, complete)
            decisions = [plan_link(view, topology) for view in views]
            duplicates = [
                a for a in extras if a.target not in topology.unavailable and complete.get(a.target)
            ]
            for decision in decisions:
                for action in decision.actions:
                    report.add_planned(action)
            for action in duplicates:
                report.add_planned(action)
            if options.dry_run:
                for decision in decisions:
                    if decision.conflict:
                        report.conflicts.append(self._conflict_dict(decision, None))
                continue
            with self.store.transaction():
                for decision in decisions:
                    self._record_decision(run_id, decision, report, options)
                for action in duplicates:
                    self._enqueue(run_id, action, report, options)
            fault_point("plan:chunk")

    def _dirty_chunks(self) -> Iterator[list[str]]:
        last = ""
        while True:
            rows = self.conn.execute(
                "SELECT link_id FROM temp.dirty WHERE link_id > ? ORDER BY link_id LIMIT ?",
                (last, PLAN_CHUNK),
            ).fetchall()
            if not rows:
                return
            chunk = [r[0] for r in rows]
            last = chunk[-1]
            yield chunk

    def _views(
        self, chunk: list[str], complete: dict[str, bool]
    ) -> tuple[list[LinkView], list[Action]]:
        marks = ",".join("?" * len(chunk))
        current: dict[str, dict[str, list[Version]]] = defaultdict(lambda: defaultdict(list))
        for row in self.conn.execute(
            f"SELECT link_id, provider, provider_id, fingerprint, updated_at FROM records "
            f"WHERE link_id IN ({marks}) ORDER BY provider_id",
            chunk,
        ):
            current[row[0]][row[1]].append(Version(row[2], row[3], row[4]))
        bases: dict[str, dict[str, tuple[str, str | None]]] = defaultdict(dict)
        for row in self.conn.execute(
            "SELECT link_id, provider, fingerprint, provider_id FROM links "
            f"WHERE link_id IN ({marks})",
            chunk,
        ):
            bases[row[0]][row[1]] = (row[2], row[3])
        agreed: dict[str, tuple[str | None, bool, str | None]] = {}
        for row in self.conn.execute(
            "SELECT link_id, fingerprint, deleted, version_at FROM link_state "
            f"WHERE link_id IN ({marks})",
            chunk,
        ):
            agreed[row[0]] = (row[1], bool(row[2]), row[3])
        forced = {
            row[0]: row[1]
            for row in self.conn.execute(
                f"SELECT link_id, winner FROM conflicts WHERE state = 'resolving' "
                f"AND link_id IN ({marks})",
                chunk,
            )
        }
        views: list[LinkView] = []
        extras: list[Action] = []
        for link_id in chunk:
            sides: dict[str, Side] = {}
            for provider in self.providers:
                versions = current[link_id].get(provider, [])
                base_fp, base_id = bases[link_id].get(provider, (None, None))
                chosen = _pick(versions, base_id)
                for extra in versions:
                    if chosen is not None and extra.provider_id != chosen.provider_id:
                        extras.append(
                            Action("delete", link_id, provider, provider_id=extra.provider_id)
                        )
                sides[provider] = Side(chosen, base_fp, complete.get(provider, True))
            fp, deleted, agreed_at = agreed.get(link_id, (None, False, None))
            views.append(
                LinkView(link_id, sides, fp, deleted, agreed_at, forced_winner=forced.get(link_id))
            )
        return views, extras

    def _record_decision(
        self, run_id: int, decision: Decision, report: CycleReport, options: SyncOptions
    ) -> None:
        conn = self.conn
        now = utc_now_iso()
        if decision.conflict is not None:
            self._store_conflict(run_id, decision, report)
        if decision.blocked:
            return
        if decision.winner is not None:
            self._agree(decision, now)
        for provider, fingerprint in decision.acknowledge.items():
            if fingerprint is None:
                conn.execute(
                    "DELETE FROM links WHERE link_id = ? AND provider = ?",
                    (decision.link_id, provider),
                )
            else:
                conn.execute(
                    "INSERT INTO links (link_id, provider, provider_id, fingerprint, content_hash, "
                    "synced_at) SELECT link_id, provider, provider_id, fingerprint, "
                    "content_hash, ? "
                    "FROM records INDEXED BY records_by_link "
                    "WHERE link_id = ? AND provider = ? AND fingerprint = ? LIMIT 1 "
                    "ON CONFLICT (link_id, provider) DO UPDATE SET "
                    "provider_id = excluded.provider_id, "
                    "fingerprint = excluded.fingerprint, content_hash = excluded.content_hash, "
                    "synced_at = excluded.synced_at",
                    (now, decision.link_id, provider, fingerprint),
                )
        if decision.link_id in self._resolving:
            conn.execute(
                "UPDATE conflicts SET state = 'resolved', resolved_at = ? "
                "WHERE link_id = ? AND state = 'resolving'",
                (now, decision.link_id),
            )
        for action in decision.actions:
            self._enqueue(run_id, action, report, options)

    def _agree(self, decision: Decision, now: str) -> None:
        """Record the version everyone converges on, with the winner's own update time."""
        row = None
        if not decision.deleted:
            row = self.conn.execute(
                "SELECT content_hash, updated_at FROM records INDEXED BY records_by_link "
                "WHERE link_id = ? AND provider = ? AND fingerprint = ? LIMIT 1",
                (decision.link_id, decision.winner, decision.agreed),
            ).fetchone()
        self.conn.execute(
            "INSERT INTO link_state (link_id, fingerprint, content_hash, deleted, version_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (link_id) DO UPDATE SET "
            "fingerprint = excluded.fingerprint, content_hash = excluded.content_hash, "
            "deleted = excluded.deleted, version_at = excluded.version_at, "
            "updated_at = excluded.updated_at",
            (
                decision.link_id,
                None if decision.deleted else decision.agreed,
                row["content_hash"] if row else None,
                1 if decision.deleted else 0,
                now if decision.deleted or row is None else (row["updated_at"] or now),
                now,
            ),
        )

    def _store_conflict(self, run_id: int, decision: Decision, report: CycleReport) -> None:
        conflict = decision.conflict
        assert conflict is not None
        conn = self.conn
        if conflict.winner is None:
            existing = conn.execute(
                "SELECT id FROM conflicts WHERE link_id = ? AND state = 'open'", (decision.link_id,)
            ).fetchone()
            if existing:
                report.conflicts.append(self._conflict_dict(decision, existing[0]))
                return
        versions = {}
        for change in conflict.changes:
            row = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM records INDEXED BY records_by_link "
                "WHERE provider = ? AND link_id = ? "
                "AND fingerprint = ? LIMIT 1",
                (
                    change.provider,
                    decision.link_id,
                    change.version.fingerprint if change.version else "",
                ),
            ).fetchone()
            if row is not None:
                record = row_record(row)
                versions[change.provider] = {
                    "provider_id": record.id,
                    "content": record.content,
                    "metadata": record.metadata,
                    "updated_at": record.updated_at,
                    "fingerprint": record.fingerprint,
                }
        state = "open" if conflict.winner is None else "resolved"
        cursor = conn.execute(
            "INSERT INTO conflicts (link_id, run_id, policy, state, winner, versions, created_at, "
            "resolved_at, resolution) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                decision.link_id,
                run_id,
                conflict.policy,
                state,
                conflict.winner,
                dumps(versions),
                utc_now_iso(),
                utc_now_iso() if conflict.winner else None,
                f"policy {conflict.policy}" if conflict.winner else None,
            ),
        )
        report.conflicts.append(self._conflict_dict(decision, cursor.lastrowid))

    def _conflict_dict(self, decision: Decision, conflict_id: int | None) -> dict[str, Any]:
        conflict = decision.conflict
        assert conflict is not None
        return {
            "id": conflict_id,
            "link_id": decision.link_id,
            "providers": [c.provider for c in conflict.changes],
            "policy": conflict.policy,
            "winner": conflict.winner,
            "state": "open" if conflict.winner is None else "resolved",
            "kept_as_copies": list(conflict.keep_both_from),
        }

    # outbox -------------------------------------------------------------------------------

    def _supersede_stale(self, run_id: int, options: SyncOptions) -> None:
        """Actions of earlier runs that never finished: the new plan decides afresh."""
        if options.dry_run:
            return
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE outbox SET state = 'superseded', updated_at = ? "
                "WHERE state IN ('pending', 'running') AND run_id < ?",
                (utc_now_iso(), run_id),
            )
            if options.retry_dead:
                conn.execute(
                    "UPDATE outbox SET state = 'superseded', attempts = 0, updated_at = ? "
                    "WHERE state = 'dead'",
                    (utc_now_iso(),),
                )

    def _enqueue(
        self, run_id: int, action: Action, report: CycleReport, options: SyncOptions
    ) -> None:
        conn = self.conn
        now = utc_now_iso()
        prior = None
        if self._any_failed:  # the common case, nothing ever failed, needs no lookup
            prior = conn.execute(
                "SELECT id, state, attempts, next_attempt_at FROM outbox "
                "WHERE link_id = ? AND provider = ? "
                "AND kind = ? AND state IN ('failed', 'dead') ORDER BY id DESC LIMIT 1",
                (action.link_id, action.target, action.kind),
            ).fetchone()
        attempts = 0
        if prior is not None:
            if prior["state"] == "dead":
                report.waiting += 1
                return
            retry_at = parse_instant(prior["next_attempt_at"])
            if retry_at and retry_at > datetime.now(UTC):
                report.waiting += 1
                return
            attempts = prior["attempts"]
            conn.execute("UPDATE outbox SET state = 'superseded' WHERE id = ?", (prior["id"],))
        payload = {"source": action.source, "source_link": action.source_link}
        conn.execute(
            "INSERT INTO outbox (run_id, link_id, provider, kind, provider_id, payload, state, "
            "attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
            (
                run_id,
                action.link_id,
                action.target,
                action.kind,
                action.provider_id,
                json.dumps(payload),
                attempts,
                now,
                now,
            ),
        )

    # replay -------------------------------------------------------------------------------

    def _replay(
        self, run_id: int, topology: Topology, report: CycleReport, options: SyncOptions
    ) -> None:
        targets = [
            row[0]
            for row in self.conn.execute(
                "SELECT DISTINCT provider FROM outbox WHERE run_id = ? AND state = 'pending'"
                + self._own_rows("outbox"),
                (run_id,),
            )
        ]
        for target in sorted(targets, key=self._replay_rank):
            if target in topology.unavailable or target not in self.providers:
                continue
            if options.stop is not None and options.stop.is_set():
                report.interrupted = True
                return
            started = time.monotonic()
            self._replay_into(run_id, self.providers[target], report, options)
            report.providers[target].seconds += time.monotonic() - started

    def _replay_rank(self, name: str) -> tuple[int, int]:
        """Replay order: the active backend first (agents read it, so it is current soonest),
        then the other two-way and pull providers, push-only backups last (a backup copies
        what the others hold); config order within each group. Never by name."""
        order = list(self.providers)
        group = 0 if name == self.topology.active else 1
        if self.topology.directions.get(name) == "push":
            group = 2
        return group, order.index(name) if name in order else len(order)

    def _replay_into(
        self, run_id: int, provider: Provider, report: CycleReport, options: SyncOptions
    ) -> None:
        outcome = report.providers[provider.name]
        try:
            self._use(provider)
            last_id = 0
            while True:
                rows = self.conn.execute(
                    "SELECT * FROM outbox WHERE run_id = ? AND provider = ? "
                    "AND state = 'pending' "
                    "AND id > ? ORDER BY id LIMIT ?",
                    (run_id, provider.name, last_id, REPLAY_BATCH),
                ).fetchall()
                if not rows:
                    return
                last_id = rows[-1]["id"]
                if options.stop is not None and options.stop.is_set():
                    report.interrupted = True
                    return
                rows = self._skip_changed_targets(provider, rows, report)
                if not rows:
                    continue
                if not self._replay_batch(provider, rows, report, outcome, options):
                    return
        except ProviderBusy as exc:
            outcome.state, outcome.error = "busy", str(exc)
        except MemsyncError as exc:
            outcome.state, outcome.error = "error", str(exc)

    def _skip_changed_targets(
        self, provider: Provider, rows: list[Any], report: CycleReport
    ) -> list[Any]:
        """Never write blind over an edit made since the mirror: such actions are superseded
        and planned again next cycle, after the edit is mirrored (see sync/freshness)."""
        since = parse_instant(report.started_at) or datetime.now(UTC)
        stale = changed_targets(self.store, provider, since, rows)
        if not stale:
            return rows
        with self.store.transaction() as conn:
            conn.executemany(
                "UPDATE outbox SET state = 'superseded', last_error = ?, updated_at = ? "
                "WHERE id = ?",
                [
                    (
                        "the target changed since the mirror; planned again next cycle",
                        utc_now_iso(),
                        i,
                    )
                    for i in stale
                ],
            )
        report.providers[provider.name].replanned += len(stale)
        log.info(
            "%s: %d memories changed since the mirror; their writes wait for the next cycle",
            provider.name,
            len(stale),
        )
        return [row for row in rows if row["id"] not in stale]

    def _replay_batch(
        self,
        provider: Provider,
        rows: list[Any],
        report: CycleReport,
        outcome: ProviderOutcome,
        options: SyncOptions,
    ) -> bool:
        ops = self._ops_for(rows)
        by_key = {str(row["id"]): row for row in rows}
        with self.store.transaction() as conn:
            for row in rows:
                if str(row["id"]) not in ops:
                    conn.execute(
                        "UPDATE outbox SET state = 'superseded' WHERE id = ?", (row["id"],)
                    )
            conn.executemany(
                "UPDATE outbox SET state = 'running', attempts = attempts + 1, updated_at = ? "
                "WHERE id = ?",
                [(utc_now_iso(), int(key)) for key in ops],
            )
        fault_point("replay:before-batch")
        keep_going = True
        done: list[tuple[Any, WriteResult]] = []
        flushed_at = time.monotonic()
        try:
            for result in provider.write_many(list(ops.values())):
                row = by_key[result.op.key]
                if self._record_outcome(provider, row, result, report, outcome):
                    done.append((row, result))
                fault_point("replay:result")
                if len(done) >= OUTCOME_GROUP or time.monotonic() - flushed_at > OUTCOME_DELAY:
                    self._remember_written(provider.name, done)
                    done, flushed_at = [], time.monotonic()
                if isinstance(result.error, AuthError | ProviderBusy):
                    keep_going = False
                if _stopping(options):  # SIGTERM: the write in flight is done; stop here
                    report.interrupted, keep_going = True, False
                    break
        finally:
            self._remember_written(provider.name, done)
        return keep_going

    def _ops_for(self, rows: list[Any]) -> dict[str, WriteOp]:
        """The writes for a batch of outbox rows, their content read from the mirror at once."""
        wanted: dict[tuple[str, str], list[Any]] = defaultdict(list)
        ops: dict[str, WriteOp] = {}
        copies: set[str] = set()  # keep-both copies (a link of their own, from another's)
        for row in rows:
            key = str(row["id"])
            if row["kind"] == "delete":
                ops[key] = WriteOp("delete", key, provider_id=row["provider_id"])
                continue
            payload = json.loads(row["payload"] or "{}")
            source_link = payload.get("source_link") or row["link_id"]
            wanted[(payload.get("source") or "", source_link)].append(row)
            if source_link != row["link_id"]:
                copies.add(row["link_id"])
        links = sorted({link for _, link in wanted} | copies)
        sources: dict[tuple[str, str], Record] = {}
        made: dict[str, Record] = {}  # a copy already written into some provider
        for start in range(0, len(links), PLAN_CHUNK):
            chunk = links[start : start + PLAN_CHUNK]
            marks = ",".join("?" * len(chunk))
            for source_row in self.conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM records INDEXED BY records_by_link "
                f"WHERE link_id IN ({marks})",
                chunk,
            ):
                sources.setdefault(
                    (source_row["provider"], source_row["link_id"]), row_record(source_row)
                )
                if source_row["link_id"] in copies:
                    made.setdefault(source_row["link_id"], row_record(source_row))
        for (source, source_link), source_rows in wanted.items():
            for row in source_rows:
                # A keep-both copy made in an earlier target is the losing version itself;
                # the source's record may since hold the winner (replayed into it first).
                record = made.get(row["link_id"]) or sources.get((source, source_link))
                if record is None:
                    continue  # the source changed under us: the next plan decides again
                key = str(row["id"])
                item = Outgoing.from_record(record, origin=row["link_id"])
                ops[key] = WriteOp(row["kind"], key, item=item, provider_id=row["provider_id"])
        self._attach_previous(rows, ops)
        return {key: ops[key] for key in sorted(ops, key=int)}

    def _attach_previous(self, rows: list[Any], ops: dict[str, WriteOp]) -> None:
        """Give each update the record it replaces, as staged: no read before the write."""
        updates = [(row["provider"], row["provider_id"], str(row["id"])) for row in rows]
        updates = [u for u in updates if u[2] in ops and ops[u[2]].kind == "update" and u[1]]
        for start in range(0, len(updates), PLAN_CHUNK):
            chunk = updates[start : start + PLAN_CHUNK]
            wanted = {(provider, provider_id): key for provider, provider_id, key in chunk}
            marks = ",".join("(?, ?)" for _ in chunk)
            for found in self.conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE (provider, provider_id) IN "
                f"(VALUES {marks})",
                [value for provider, provider_id, _ in chunk for value in (provider, provider_id)],
            ):
                key = wanted.get((found["provider"], found["provider_id"]))
                if key is not None:
                    ops[key].previous = row_record(found)

    def _record_outcome(
        self,
        provider: Provider,
        row: Any,
        result: WriteResult,
        report: CycleReport,
        outcome: ProviderOutcome,
    ) -> bool:
        """Count a success (recorded with its group); record a failure at once. True if done."""
        name, link_id, kind = provider.name, row["link_id"], row["kind"]
        now = utc_now_iso()
        if result.error is None:
            report.replayed[kind] += 1
            outcome.written += 1
            return True
        attempts = row["attempts"] + 1
        dead = attempts >= self.config.sync.max_attempts
        delay = min(BACKOFF_BASE * (2 ** (attempts - 1)), BACKOFF_MAX)
        if isinstance(result.error, TransientProviderError) and result.error.retry_after:
            delay = max(delay, timedelta(seconds=result.error.retry_after))
        message = (
            str(result.error) if isinstance(result.error, MemsyncError) else repr(result.error)
        )
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE outbox SET state = ?, last_error = ?, next_attempt_at = ?, updated_at = ? "
                "WHERE id = ?",
                (
                    "dead" if dead else "failed",
                    message[:500],
                    (datetime.now(UTC) + delay).isoformat(),
                    now,
                    row["id"],
                ),
            )
        outcome.failed += 1
        report.failures.append(
            {"provider": name, "action": kind, "link_id": link_id, "error": message, "dead": dead}
        )
        return False

    def _remember_written(self, provider: str, done: list[tuple[Any, WriteResult]]) -> None:
        """Record a group of successes: outbox done, and the writes as the mirror will see them.

        Successes are recorded in groups (OUTCOME_GROUP writes or OUTCOME_DELAY seconds), not
        one transaction per write: a commit between every write made the stores' own fsyncs
        slower (12% of a first sync into Mem0). A crash loses at most one group's records,
        never a memory: the writes carry origin markers and the next mirror recognises them
        (the crash matrix kills memsync between every write to prove it).
        """
        if not done:
            return
        now = utc_now_iso()
        records, links, states, journal, deletes = [], [], [], [], []
        for row, result in done:
            link_id, run_id = row["link_id"], row["run_id"]
            record = result.record
            if row["kind"] == "delete":
                deletes.append((provider, row["provider_id"], link_id))
                journal.append(
                    journal_row(run_id, provider, link_id, "removed", None, row["provider_id"])
                )
                continue
            if record is None:
                continue
            records.append(record_row(provider, link_id, record, run_id))
            if row["provider_id"] and row["provider_id"] != record.id:
                # The provider gave the memory a new id on update (Cognee): drop the old row.
                deletes.append((provider, row["provider_id"], None))
            if not _restores_own_fields(row, provider):
                links.append(
                    (link_id, provider, record.id, record.fingerprint, record.content_hash, now)
                )
            states.append(
                (link_id, record.fingerprint, record.content_hash, record.updated_at or now, now)
            )
            journal.append(journal_row(run_id, provider, link_id, "written", record, record.id))
        with self.store.transaction() as conn:
            conn.executemany(
                "UPDATE outbox SET state = 'done', last_error = NULL, updated_at = ? WHERE id = ?",
                [(now, row["id"]) for row, _ in done],
            )
            self.store.upsert_records(records)
            conn.executemany(
                "INSERT INTO links (link_id, provider, provider_id, fingerprint, content_hash, "
                "synced_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (link_id, provider) DO UPDATE "
                "SET provider_id = excluded.provider_id, fingerprint = excluded.fingerprint, "
                "content_hash = excluded.content_hash, synced_at = excluded.synced_at",
                links,
            )
            conn.executemany(
                "INSERT INTO link_state (link_id, fingerprint, content_hash, deleted, version_at, "
                "updated_at) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (link_id) DO NOTHING",
                states,
            )
            conn.executemany(
                "DELETE FROM records WHERE provider = ? AND provider_id = ?",
                [(p, pid) for p, pid, _ in deletes],
            )
            conn.executemany(
                "DELETE FROM links WHERE link_id = ? AND provider = ? AND provider_id IS ?",
                [(link, p, pid) for p, pid, link in deletes if link is not None],
            )
            conn.executemany(INSERT_JOURNAL, journal)
        fault_point("replay:remembered")


def _restores_own_fields(row: Any, provider: str) -> bool:
    """A repair the mirror queued (a store's own record written back with the fields an agent
    rewrite dropped): it reconciles nothing, so the provider's base stays where it was. Moving
    it would hide the agent's edit from the planner while a conflict on it is still open."""
    if row["kind"] != "update":
        return False
    payload = json.loads(row["payload"] or "{}")
    return bool(payload.get("source") == provider and payload.get("source_link") == row["link_id"])


def _stopping(options: SyncOptions) -> bool:
    return options.stop is not None and options.stop.is_set()


def _pick(versions: list[Version], base_id: str | None) -> Version | None:
    """The record that stands for a memory in a provider: the one reconciled before, if any."""
    if not versions:
        return None
    for version in versions:
        if version.provider_id == base_id:
            return version
    return versions[0]


def _action_dict(action: Action) -> dict[str, Any]:
    return {
        "action": action.kind,
        "memory": action.link_id,
        "provider": action.target,
        "from": action.source,
        "provider_id": action.provider_id,
    }


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
