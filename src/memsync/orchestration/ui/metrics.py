"""What /metrics exposes, through prometheus_client (Prometheus's own library).

One set of numbers behind `memsync status`, the status page and /metrics. What staging holds
(the outbox, open conflicts, each provider's last successful cycle) is read at each scrape
with the queries status itself uses. What happens in this process (its cycles, their writes,
how long changes took to propagate) is counted when each cycle ends, from that run's own rows
in staging (``store.cycle_outcomes``), so a counter can never tell another story than
`memsync status` and `memsync log`.

Every cycle the daemon runs is counted, by ``trigger``: ``full`` (the scheduled pass over
everything, or one the page started) and ``live`` (a hinted cycle a watch, a probe or an
agent's served write started: most cycles, beside a probe).

Labels stay bounded: ``provider`` is a configured name (a wildcard provider's scopes fold
into it), and ``scope`` is filled only with ``[metrics] per_scope = true``.

Propagation lag: from when memsync first saw a version (the mirror's journal entry of the
source's copy; for a delete, the first removal it saw) to when the last target acknowledged
the write carrying it (its outbox row finished), observed once per memory, by the cycle
that finishes its last outstanding write. Both instants are on memsync's clock and exist for
every provider type; a source's own ``updated_at`` is missing or coarse on some stores and
not moved by every change on others. The wait before memsync sees a change (the interval,
or a watch or probe) is not in it: that is the schedule's, not the sync's.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Histogram, Info, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from memsync import __version__
from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths
from memsync.base.records import parse_instant
from memsync.base.scopes import split_scoped_name
from memsync.config import Config, load_config
from memsync.orchestration.disk import Growth, disk_growth
from memsync.staging import StagingStore
from memsync.staging.webhooks import Registration

log = logging.getLogger("memsync.ui")
disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series

CYCLE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
LAG_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21600, 86400)
WRITE_OUTCOMES = {"done": "ok", "failed": "failed", "dead": "dead"}
OUTBOX_STATES = ("pending", "failed", "dead")
FULL, LIVE = "full", "live"  # a cycle's trigger


def provider_and_scope(name: str, per_scope: bool) -> tuple[str, str]:
    """A staging name as labels: the configured provider, and its scope when asked."""
    split = split_scoped_name(name)
    if split is None:
        return name, ""
    return split[0], split[1].label if per_scope else ""


class Metrics:
    """The registry /metrics renders, and the counters a cycle's end feeds."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.registry = CollectorRegistry()
        registry = self.registry
        Info("memsync_build", "The memsync version serving.", registry=registry).info(
            {"version": __version__}
        )
        self.cycles = Counter(
            "memsync_cycles",
            "Sync cycles this process ran, by outcome: ok, attention and interrupted as the "
            "runs table records them; busy (the cycle lock was held) and failed (no cycle ran); "
            "and trigger: full (every provider and scope) or live (a watch, probe or served "
            "write hinted it).",
            ["outcome", "trigger"],
            registry=registry,
        )
        self.cycle_seconds = Histogram(
            "memsync_cycle_duration_seconds",
            "How long each cycle took, start to finish, as status shows it, by trigger.",
            ["trigger"],
            buckets=CYCLE_BUCKETS,
            registry=registry,
        )
        self.writes = Counter(
            "memsync_writes",
            "Writes this process's cycles tried, by target provider, kind (create, update, "
            "delete) and outcome (ok; failed: retried later; dead: parked).",
            ["provider", "kind", "outcome", "scope"],
            registry=registry,
        )
        self.lag = Histogram(
            "memsync_propagation_lag_seconds",
            "From when memsync first saw a version to when the last target acknowledged it.",
            ["scope"],
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.lag.labels("")  # the series exists (at zero) before the first observation
        for trigger in (FULL, LIVE):
            self.cycle_seconds.labels(trigger)
        ProcessCollector(registry=registry)
        registry.register(StagingGauges(paths))

    # what a cycle's end feeds ---------------------------------------------------------------

    def cycle_not_run(self, outcome: str, trigger: str = FULL) -> None:
        """A cycle that could not start: busy (the lock was held) or failed."""
        self.cycles.labels(outcome, trigger).inc()

    def cycle_ended(self, run_id: int, *, per_scope: bool, trigger: str = FULL) -> None:
        """Count run RUN_ID, its writes and what it finished carrying, from staging.

        Never raises: metrics must not stop a sync. A run staging cannot tell about (a dry
        run's, or a database gone) counts as nothing.
        """
        try:
            with StagingStore.open(self.paths.database, create=False, reading=True) as store:
                outcomes = store.cycle_outcomes
                run = outcomes.run(run_id)
                if run is None or run.finished_at is None:
                    return
                writes = outcomes.writes(run_id)
                propagated = outcomes.propagated(run_id)
        except (MemsyncError, sqlite3.Error) as exc:
            log.debug("metrics: run %s not counted: %s", run_id, exc)
            return
        self.cycles.labels(run.status, trigger).inc()
        took = _seconds_between(run.started_at, run.finished_at)
        if took is not None:
            self.cycle_seconds.labels(trigger).observe(took)
        for count in writes:
            provider, scope = provider_and_scope(count.provider, per_scope)
            outcome = WRITE_OUTCOMES[count.state]
            self.writes.labels(provider, count.kind, outcome, scope).inc(count.writes)
        for carried in propagated:
            lag = _seconds_between(carried.seen_at, carried.acked_at)
            if lag is not None:
                self.lag.labels(provider_and_scope(carried.target, per_scope)[1]).observe(lag)

    # the exposition -------------------------------------------------------------------------

    def render(self, accept: str | None) -> tuple[bytes, str]:
        """The body and content type for a scrape (OpenMetrics when the scraper asks)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


class StagingGauges(Collector):
    """At each scrape, what staging holds now, read as `memsync status` reads it."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "memsync_staging_up", "1 if the staging database could be read for this scrape."
        )
        try:
            config = self._config()
            per_scope = config.metrics.per_scope if config is not None else False
            configured = list(config.providers) if config is not None else []
            families = list(self._read(per_scope, configured, config))
        except (MemsyncError, sqlite3.Error) as exc:
            log.debug("metrics: staging not read: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _config(self) -> Config | None:
        """The config, read afresh as the page does (None: unreadable)."""
        try:
            return load_config(self.paths.config_file)
        except MemsyncError:
            return None

    def _read(
        self, per_scope: bool, configured: Iterable[str], config: Config | None
    ) -> Iterator[Metric]:
        with StagingStore.open(self.paths.database, create=False, reading=True) as store:
            outbox_rows = store.status_counts.outbox_needing_work()
            open_conflicts = store.conflicts.count_open()
            last_cycles = store.providers.last_cycles()
            discovered = store.runs.latest_discovery()
            webhooks = store.webhooks.all()
            growth = disk_growth(store, config) if config is not None else {}
        outbox: dict[tuple[str, str, str], int] = {
            (name, state, ""): 0 for name in configured for state in OUTBOX_STATES
        }
        for row in outbox_rows:
            provider, scope = provider_and_scope(row.provider, per_scope)
            slot = (provider, row.state, scope)
            outbox[slot] = outbox.get(slot, 0) + row.actions
        actions = GaugeMetricFamily(
            "memsync_outbox_actions",
            "Writes waiting in the outbox, by target provider and state (pending; failed: "
            "retried after a backoff; dead: parked until `memsync sync --retry-dead`).",
            labels=["provider", "state", "scope"],
        )
        for (provider, state, scope), count in sorted(outbox.items()):
            actions.add_metric([provider, state, scope], count)
        yield actions
        conflicts = GaugeMetricFamily(
            "memsync_conflicts_open", "Conflicts waiting for `memsync resolve` (or the page)."
        )
        conflicts.add_metric([], open_conflicts)
        yield conflicts
        newest: dict[tuple[str, str], float] = {}
        for name, summary in last_cycles:
            at = parse_instant(_last_ok_at(summary))
            if at is None:
                continue
            key = provider_and_scope(name, per_scope)
            newest[key] = max(newest.get(key, 0.0), at.timestamp())
        success = GaugeMetricFamily(
            "memsync_provider_last_success_timestamp_seconds",
            "When each provider last took part in a whole cycle that could carry its changes "
            "(ok or partial), as Unix time; with scopes, its newest scope's.",
            labels=["provider", "scope"],
        )
        for (provider, scope), timestamp in sorted(newest.items()):
            success.add_metric([provider, scope], timestamp)
        yield success
        yield from _discovery(discovered, set(configured))
        yield from _webhooks([w for w in webhooks if w.provider in set(configured)])
        yield from _disk(growth)


def _disk(growth: dict[str, Growth]) -> Iterator[Metric]:
    """What each provider's stores take on disk, and how fast they grow (``disk``)."""
    on_disk = GaugeMetricFamily(
        "memsync_store_disk_bytes",
        "Bytes a provider's stores take on disk now (allocated blocks of every mnem store it "
        "names: one store, a template's, or a sharded root's).",
        labels=["provider"],
    )
    stores = GaugeMetricFamily(
        "memsync_store_disk_stores", "How many stores those bytes are in.", labels=["provider"]
    )
    rate = GaugeMetricFamily(
        "memsync_store_growth_bytes_per_day",
        "How fast those stores grow, per day, from the samples of the last day (absent until "
        "a minute of cycles measured it); `check` warns past the provider's growth_budget.",
        labels=["provider"],
    )
    for name, found in sorted(growth.items()):
        on_disk.add_metric([name], found.bytes)
        stores.add_metric([name], found.stores)
        if found.per_day is not None:
            rate.add_metric([name], found.per_day)
    yield on_disk
    yield stores
    yield rate


def _discovery(found: tuple[int, str | None, str] | None, configured: set[str]) -> Iterator[Metric]:
    """Per wildcard source, from the newest run that discovered scopes: how many it found, and
    whether that was provably all of them (0: "N users found, more may exist")."""
    complete = GaugeMetricFamily(
        "memsync_discovery_complete",
        "1 if the newest discovery of a wildcard source provably found every scope (user, "
        "agent, run) it holds; 0 if more may exist (see docs/mem0-server.md).",
        labels=["provider"],
    )
    scopes = GaugeMetricFamily(
        "memsync_discovered_scopes",
        "Scopes the newest discovery of a wildcard source found.",
        labels=["provider"],
    )
    sources = json.loads(found[2]) if found is not None else {}
    for name, entry in sorted(sources.items()):
        if name not in configured or not isinstance(entry, dict):
            continue
        complete.add_metric([name], 1 if entry.get("complete") is True else 0)
        scopes.add_metric([name], int(entry.get("scopes") or 0))
    yield complete
    yield scopes


def _webhooks(registrations: list[Registration]) -> Iterator[Metric]:
    """Per provider registered for webhooks, what the daemon noted of its events."""
    events = CounterMetricFamily(
        "memsync_webhook_events",
        "Webhook events received since the webhook was registered, by kind (add, update, delete).",
        labels=["provider", "event"],
    )
    missed = CounterMetricFamily(
        "memsync_webhook_missed",
        "Changes the store's probe found that no webhook event announced within 30 s.",
        labels=["provider"],
    )
    rejected = CounterMetricFamily(
        "memsync_webhook_rejected",
        "Requests to the webhook listener refused (a wrong secret, a body not an event).",
        labels=["provider"],
    )
    last = GaugeMetricFamily(
        "memsync_webhook_last_event_timestamp_seconds",
        "When the last webhook event arrived, as Unix time.",
        labels=["provider"],
    )
    up = GaugeMetricFamily(
        "memsync_webhook_up",
        "1 while a store's webhook events arrive (its probe then slows down); 0 while none "
        "has arrived yet, or changes arrive without them.",
        labels=["provider"],
    )
    for hooks in registrations:
        for kind in ("add", "update", "delete"):
            events.add_metric([hooks.provider, kind], hooks.events.get(kind, 0))
        missed.add_metric([hooks.provider], hooks.missed)
        rejected.add_metric([hooks.provider], hooks.rejected)
        at = parse_instant(hooks.last_event_at)
        if at is not None:
            last.add_metric([hooks.provider], at.timestamp())
        up.add_metric([hooks.provider], 1 if hooks.state == "arriving" else 0)
    yield from (events, missed, rejected, last, up)


def _last_ok_at(summary: str | None) -> str | None:
    if not summary:
        return None
    value = json.loads(summary).get("last_ok_at")
    return value if isinstance(value, str) else None


def _seconds_between(start: str | None, end: str | None) -> float | None:
    began: datetime | None = parse_instant(start)
    ended: datetime | None = parse_instant(end)
    if began is None or ended is None:
        return None
    return max(0.0, (ended - began).total_seconds())
