"""``memsync daemon``: sync cycles and backups on a schedule, config reloads, clean stops.

One foreground process that systemd (or any supervisor) runs:

- APScheduler runs a sync job every ``[sync] interval`` and a backup job every ``[backup]
  interval``, coalesced, one instance at a time, and late runs still run (a laptop that slept
  syncs when it wakes). The first sync runs at start. A job that outlasts its interval is one
  info line when it ends (``folded_runs``), not a warning per run folded into the next.
- Between them, watched local stores and probed remote ones start cycles for only the
  providers and scopes that changed (``orchestration/live/triggers.py``).
- The mnem stores it syncs are served to agents on a local socket (``orchestration/serve``): while
  an agent uses one through memsync's clients, the daemon holds its one handle, and its own
  cycles use that handle too: the daemon's held stores (``providers/held``) are passed to
  the server and to every job that builds providers (``daemon/jobs``); each agent write starts
  a cycle.
- The config's directory is watched (editors replace files on save) and SIGHUP asks the
  same: the new file is parsed and validated first, and a broken one is logged while the
  running config keeps going.
- SIGTERM and SIGINT set the engine's stop event, so the action in flight finishes and the
  rest waits for the next start; the process exits 0 within ``STOP_GRACE`` seconds.
- Signals only ever reach the main loop (``signal_inbox``): blocked in every thread memsync
  starts, and recorded through a wakeup socket when the kernel hands one to a thread a
  library started before (numpy's OpenBLAS pool), so no handler runs in the middle of a lock
  it would need and no signal takes its default action (SIGTERM and SIGHUP would kill).
"""

from __future__ import annotations

import logging
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from memsync.base.errors import ConfigError, MemsyncError
from memsync.base.lock import daemon_lock
from memsync.base.memory import limit_arenas
from memsync.base.paths import Paths
from memsync.base.signal_inbox import SignalInbox, blocked_in_new_threads
from memsync.config import Config, load_config
from memsync.config.address import parse_listen
from memsync.orchestration.backups import last_backup_time
from memsync.orchestration.daemon import scheduled_verify
from memsync.orchestration.daemon.folded_runs import FoldedRuns
from memsync.orchestration.daemon.jobs import Jobs
from memsync.orchestration.daemon.logging import Redactor, secrets_in
from memsync.orchestration.daemon.notify import Notifier
from memsync.orchestration.live.triggers import Live
from memsync.orchestration.live.webhook_setup import read_secret
from memsync.orchestration.serve.place import serves_any
from memsync.orchestration.ui.metrics import Metrics
from memsync.orchestration.ui.server import UiServer
from memsync.providers import check_for_daemon
from memsync.providers.held import HeldStores
from memsync.providers.watched import Hint
from memsync.staging.store import checkpoint

if TYPE_CHECKING:
    from memsync.orchestration.serve.server import StoreServer

log = logging.getLogger("memsync.daemon")

STOP_GRACE = 8.0  # seconds a stop waits for the job in flight; systemd allows 10 more
TICK = 0.5  # the main loop's longest sleep: reload latency and watchdog granularity
HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass
class StopResult:
    exit_code: int
    jobs_left_running: bool  # a job ignored the stop; the caller must not wait for its thread


class Daemon:
    """The running daemon; ``run()`` returns when a stop signal arrived and jobs wound down."""

    def __init__(
        self,
        paths: Paths,
        config: Config,
        notifier: Notifier | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.paths = paths
        self.config = config
        self.notifier = notifier or Notifier()
        self.redactor = redactor
        self.stop = threading.Event()
        self._reload_pending = threading.Event()
        self.ui: UiServer | None = None
        self.live: Live | None = None  # watched and probed stores: hinted cycles
        self.serve: StoreServer | None = None  # mnem stores served to agents
        # The mnem stores held open for everyone in the daemon: the agents it serves and every
        # provider its jobs build (mnem allows one handle per store).
        self.held = HeldStores()
        self.metrics = Metrics(paths)  # /metrics on the status page's server
        self.jobs = Jobs(
            paths,
            lambda: self.config,
            self.stop,
            held=self.held,
            metrics=self.metrics,
            notifier=self.notifier,
            run_soon=self._run_soon,
        )
        self.folded_runs = FoldedRuns()  # a job longer than its interval: one info line
        self.scheduler = BackgroundScheduler(
            timezone=UTC,
            logger=self.folded_runs.logger,
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        )
        self.folded_runs.attach(self.scheduler)

    # lifecycle -----------------------------------------------------------------------------

    def run(self) -> StopResult:
        limit_arenas()  # before any thread: they share a few malloc arenas (base/memory)
        with SignalInbox(HANDLED) as inbox:
            with blocked_in_new_threads(HANDLED):
                self._start()
            reason = self._loop(inbox)
            return self._shutdown(reason)

    def _start(self) -> None:
        config = self.config
        if self.redactor is not None:
            self.redactor.update(self._secrets(config))
        now = datetime.now(UTC)
        self.scheduler.add_job(
            self.jobs.guarded("sync", self.jobs.sync),
            IntervalTrigger(seconds=config.sync.interval, timezone=UTC),
            id="sync",
            next_run_time=now,
        )
        self.scheduler.add_job(
            self.jobs.guarded("backup", self.jobs.backup),
            IntervalTrigger(seconds=config.backup.interval, timezone=UTC),
            id="backup",
            next_run_time=self._first_backup_time(now),
        )
        scheduled_verify.install(self.scheduler, self._verify_job, self.paths, config, now)
        self.live = Live(
            self.paths,
            config,
            self.stop,
            guard=self.jobs.guarded,
            held=self.held,
            counter=self.metrics,  # hinted cycles are counted as the full pass is
        )
        self.jobs.live = self.live  # every cycle's observer
        self.live.start()  # before the first sync, which keeps what the probes answer
        self._start_serving()
        self.scheduler.start()
        threading.Thread(target=self._watch_config, name="config-watch", daemon=True).start()
        self._start_ui()
        log.info(
            "memsync daemon started: config %s; sync every %s, backups every %s (keep %d)",
            self.paths.config_file,
            _seconds(config.sync.interval),
            _seconds(config.backup.interval),
            config.backup.keep,
        )
        self.notifier.ready("started; first sync running")

    def _secrets(self, config: Config) -> list[str]:
        """What the log never shows: the API keys, and the secrets of the webhook URLs."""
        hooks = [read_secret(self.paths, name) for name in config.providers]
        return secrets_in(config) + [secret for secret in hooks if secret]

    def _start_ui(self) -> None:
        """Serve the status page when [ui] listen is set; a page that cannot start is logged."""
        settings = self.config.ui
        if settings.listen is None:
            return
        host, port = parse_listen(settings.listen)
        try:
            self.ui = UiServer(
                self.paths, host, port, allow_remote=settings.allow_remote, metrics=self.metrics
            )
        except MemsyncError as exc:
            log.error("status page not started: %s; syncing goes on without it", exc)
            return
        self.ui.start_in_thread()
        log.info(
            "status page on %s (`memsync ui` prints the link with its token)", self.ui.base_url
        )

    def _start_serving(self) -> None:
        """Serve the mnem stores memsync syncs to agents (``orchestration/serve``), through the
        daemon's held stores: one handle per store for its cycles and the agents it serves."""
        if self.serve is not None or not serves_any(self.config):
            return  # no mnem store to serve (a reload that adds one starts serving then)
        try:
            from memsync.orchestration.serve.server import StoreServer  # needs the mnem SDK

            server = StoreServer(
                self.paths, self.config, held=self.held, on_write=self._served_write
            )
            server.start()
        except (ImportError, OSError) as exc:
            log.warning(
                "not serving mnem stores to agents (%s); their clients open the stores "
                "themselves, and syncing goes on",
                exc,
            )
            return
        self.serve = server

    def _served_write(self, hint: Hint) -> None:
        if self.live is not None:
            self.live.changed({hint})

    def _first_backup_time(self, now: datetime) -> datetime:
        """Due one interval after the newest backup; with none yet, right after the first sync."""
        last = last_backup_time(self.paths.backups_dir)
        if last is None:
            self.jobs.backup_after_first_sync = True
            return now + timedelta(seconds=self.config.backup.interval)
        return max(now, last + timedelta(seconds=self.config.backup.interval))

    def _loop(self, inbox: SignalInbox) -> str:
        next_ping = time.monotonic()
        while True:
            interval = self.notifier.watchdog_interval
            timeout = min(TICK, interval) if interval else TICK
            received = inbox.wait(timeout)
            stops = [sig for sig in received if sig != signal.SIGHUP]
            if stops:  # a stop wins over reloads that came with it
                return stops[0].name
            if received:  # several SIGHUPs at once are one reload
                self._reload("SIGHUP", always_notify=True)
            if self._reload_pending.is_set():
                self._reload_pending.clear()
                self._reload("config file changed", always_notify=False)
            if interval and time.monotonic() >= next_ping and self.scheduler.running:
                self.notifier.watchdog()
                next_ping = time.monotonic() + interval

    def _shutdown(self, reason: str) -> StopResult:
        log.info("stopping (%s): finishing the writes in flight; the rest runs next start", reason)
        self.stop.set()
        self.notifier.stopping("stopping")
        self.scheduler.shutdown(wait=False)
        if self.live is not None:
            self.live.close()
        deadline = time.monotonic() + STOP_GRACE
        if self.serve is not None:  # requests in flight are answered, then every client hangs up
            self.serve.close(grace=STOP_GRACE / 2)
        if self.ui is not None:
            self.ui.stop(grace=0)  # its open connections close; its requests share the grace
        idle = self.jobs.wait_idle(deadline - time.monotonic())
        if self.ui is not None and not self.ui.wait_answered(deadline - time.monotonic()):
            idle = False
        if not idle:
            log.warning(
                "a job was still running after %.0fs; exiting without it "
                "(its progress so far is recorded; the next start carries on)",
                STOP_GRACE,
            )
            return StopResult(0, jobs_left_running=True)
        self.held.let_go_of_idle()  # the agents' clients take their stores back
        self._checkpoint()
        log.info("stopped")
        return StopResult(0, jobs_left_running=False)

    def _checkpoint(self) -> None:
        """Fold the WAL into the database file without waiting for anyone (PASSIVE)."""
        if not self.paths.database.exists():
            return
        try:
            checkpoint(self.paths.database, timeout=1.0)
        except sqlite3.Error as exc:
            log.warning("could not checkpoint the staging database: %s", exc)

    # jobs (``daemon/jobs.py``) -----------------------------------------------------------

    @property
    def _verify_job(self) -> Callable[[], None]:
        """The scheduled verify, counted like every job."""
        return self.jobs.guarded("verify", self.jobs.verify)

    def _run_soon(self, job_id: str) -> None:
        """Run a job now, unless the scheduler is shutting down or the job is gone."""
        try:
            self.scheduler.modify_job(job_id, next_run_time=datetime.now(UTC))
        except Exception as exc:  # the scheduler was shut down, or the job removed
            log.debug("could not run %s now: %s", job_id, exc)

    # config --------------------------------------------------------------------------------

    def _watch_config(self) -> None:
        import watchfiles

        target = self.paths.config_file
        try:
            for _ in watchfiles.watch(
                target.parent,
                watch_filter=lambda _change, path: Path(path).name == target.name,
                debounce=400,
                stop_event=self.stop,
                recursive=False,
                raise_interrupt=False,
            ):
                self._reload_pending.set()
        except Exception as exc:  # the directory vanished, inotify limits reached, ...
            if not self.stop.is_set():
                log.warning(
                    "stopped watching %s (%s); send SIGHUP (systemctl --user reload memsync) "
                    "to reload the config",
                    target.parent,
                    exc,
                )

    def _reload(self, reason: str, *, always_notify: bool) -> None:
        """Validate the config file, then swap it in; a broken one leaves the running one."""
        try:
            new = load_config(self.paths.config_file)
            check_for_daemon(new)
        except ConfigError as exc:
            log.error(
                "config not reloaded (%s): %s; still running the previous config", reason, exc
            )
            status = f"config error, running the previous config: {exc}"
            if always_notify:  # systemd waits for READY=1 after the RELOADING=1 a SIGHUP implies
                self.notifier.reloading()
                self.notifier.ready(status)
            else:
                self.notifier.status(status)
            return
        old = self.config
        if new == old and not always_notify:
            return
        self.notifier.reloading()
        self.config = new
        if self.redactor is not None:
            self.redactor.update(self._secrets(new))
        if new.sync.interval != old.sync.interval:
            self.scheduler.reschedule_job(
                "sync", trigger=IntervalTrigger(seconds=new.sync.interval, timezone=UTC)
            )
        if new.backup.interval != old.backup.interval:
            self.scheduler.reschedule_job(
                "backup", trigger=IntervalTrigger(seconds=new.backup.interval, timezone=UTC)
            )
        scheduled_verify.reconfigure(self.scheduler, self._verify_job, self.paths, old, new)
        if new != old:
            if self.live is not None:
                self.live.reconfigure(new)
            if self.serve is not None:
                self.serve.reconfigure(new)
            self._start_serving()
            self._run_soon("sync")
            log.info(
                "config reloaded (%s): %d providers (active: %s); sync every %s, backups every %s",
                reason,
                len(new.providers),
                new.sync.active,
                _seconds(new.sync.interval),
                _seconds(new.backup.interval),
            )
        else:
            log.info("config reloaded (%s): unchanged", reason)
        self.notifier.ready("config reloaded")


def _seconds(value: float) -> str:
    return f"{value:g}s"


def run_daemon(paths: Paths, *, redactor: Redactor | None = None) -> StopResult:
    """Hold the daemon lock (one daemon an installation), load the config, run until stopped.

    Raises LockHeld when another daemon runs, ConfigError when the config is invalid at start.
    """
    lock = daemon_lock(paths)
    try:
        lock.acquire()
        config = load_config(paths.config_file)
        check_for_daemon(config)  # e.g. a Mem0 server token that dies in 30 minutes
        paths.ensure()
        return Daemon(paths, config, redactor=redactor).run()
    finally:
        lock.release()
