"""The daemon's live side: changes found by watching and probing start cycles for only the
providers and scopes they touch.

Three ways a change is found, from cheapest to surest (docs/daemon.md):

- **watch** (``watch.py``): a local store's files changed (mnem, pmm-dir, a Mem0 library's
  local store); the hint is checked against what memsync left there (``local_stores.py``), so
  memsync's own writes never start a cycle;
- **probe** (``probing.py``): every ``[sync] probe`` seconds one cheap request per remote store
  says which scopes moved since memsync last listed them;
- **push** (``pushes.py``): a store that sends its changes (the Platform's webhooks) names each
  memory changed; the probe of such a store slows down while its events arrive;
- **full pass**: every ``[sync] interval`` the daemon lists everything, whatever the hints
  said, so nothing relies on a hint being right.

A hint starts a cycle (``run_sync`` with ``only`` and ``only_scopes``) for the hinted
provider and every provider that receives its changes (the active backend and the ``push`` and
``both`` providers), in the hinted scopes only; hints that arrive meanwhile wait for the next
one (``hints.py``). Every cycle, full or hinted, reports back (``observer.py``). A hinted cycle
that could not reach its store (busy, down) is tried again, backing off; a probe that fails
lists its provider in full, said once.

memsync's own writes start nothing, in either kind of store: a local store's files are
compared with what memsync left; a probed store's answer, where the probe can tell it from
memsync's mirror (``ChangeProbe.expected``), with what memsync's writes made of the scope. A
scope that answers exactly that is memsync's own write, not a change to list again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.lock import is_locked
from memsync.base.paths import Paths
from memsync.base.scopes import Scope, scoped_name
from memsync.config import Config
from memsync.config.scoping import scoped_config_keys
from memsync.engine.from_config import topology_of
from memsync.engine.report import USABLE, CycleReport, ProviderState, SyncOptions
from memsync.orchestration.live.hints import HintQueue
from memsync.orchestration.live.local_stores import Left, LocalStores
from memsync.orchestration.live.observer import CycleCounter, RunObserver
from memsync.orchestration.live.probing import Probing, Tokens, probes_for
from memsync.orchestration.live.pushes import Pushes
from memsync.orchestration.live.watch import Watcher, watched_stores
from memsync.orchestration.runner import run_sync
from memsync.orchestration.scopes.report import incomplete_discoveries
from memsync.providers import build_provider
from memsync.providers.base import Provider
from memsync.providers.change_probe import ChangeProbe
from memsync.providers.held import HeldStores
from memsync.providers.watched import Hint, WatchedFiles
from memsync.staging import StagingStore

log = logging.getLogger("memsync.live")

Guard = Callable[[str, Callable[[], None]], Callable[[], None]]

LOCK_WAIT = 0.5  # a hinted cycle waits this long for the cycle lock, then tries again later
IDLE = 1.0  # the longest the loop sleeps without a reason to wake
SHOWN = 3  # hints named in a log line
LIVE = "live"  # a hinted cycle's trigger, as /metrics labels it


class Live:
    """Watches, probes and hinted cycles for one daemon; also every cycle's observer.

    ``guard(name, job)`` is the daemon's wrapper that counts a job while it runs, so a stop
    waits for a hinted cycle as for the scheduled one; ``build`` makes a provider by name.
    """

    def __init__(
        self,
        paths: Paths,
        config: Config,
        stop: threading.Event,
        *,
        guard: Guard | None = None,
        build: Callable[[str, Config], Provider] = build_provider,
        watch: Callable[..., object] | None = None,
        held: HeldStores | None = None,
        counter: CycleCounter | None = None,
    ) -> None:
        self.paths = paths
        self.config = config
        self.stop = stop
        self.guard: Guard = guard or (lambda _name, job: job)
        self.build = build
        self.watch_function = watch
        self.held = held  # the daemon's held stores: its hinted cycles borrow mnem stores there
        self.counter = counter  # the daemon's /metrics: every hinted cycle is counted there
        self._wake = threading.Event()
        self.queue = HintQueue()
        self.local = LocalStores()
        self.probing = Probing()
        self.pushes = Pushes(paths, self._wake.set)  # webhooks: the changes stores push
        self._full: RunObserver | None = None
        self.watcher: Watcher | None = None
        self._thread: threading.Thread | None = None
        self.cycles = 0  # hinted cycles run
        self._failing: tuple[str, int] | None = None  # an unexpected failure said, and times

    # what the daemon's status and the tests read ----------------------------------------------

    @property
    def stores(self) -> list[WatchedFiles]:
        return self.local.stores

    @property
    def probes(self) -> list[ChangeProbe]:
        return self.probing.probes

    @property
    def own_changes(self) -> int:
        """Watched changes that were memsync's own writes (no cycle)."""
        return self.local.own_changes

    @property
    def own_answers(self) -> int:
        """Probed scopes whose change was memsync's own writes (no cycle)."""
        return self.probing.own_answers

    @property
    def _left(self) -> dict[Hint, Left]:
        return self.local.left

    @property
    def _pending(self) -> set[Hint]:
        return self.queue.pending

    # lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching and probing (as the config asks) and the loop that runs hinted cycles."""
        self._configure(self.config)
        self._thread = threading.Thread(target=self._loop, name="live-sync", daemon=True)
        self._thread.start()

    def reconfigure(self, config: Config) -> None:
        """Take a new config: watch and probe what it names from now on."""
        self._unconfigure()
        self.config = config
        self._configure(config)
        self._wake.set()

    def close(self) -> None:
        self._unconfigure()
        self.pushes.close()
        self._wake.set()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
        if self.watcher is not None:
            self.watcher.join(timeout)

    def _configure(self, config: Config) -> None:
        sync = config.sync
        stores = watched_stores(config, self.held) if sync.watch else []
        probes: list[ChangeProbe] = []
        if sync.probe is not None:
            probes = probes_for(config, lambda name: self.build(name, config))
        self.local.watch(stores)
        self.probing.configure(
            probes, period=sync.probe or 0.0, interval=sync.interval, database=self.paths.database
        )
        self.probing.load_tokens(self.paths.database)
        self.pushes.configure(config, self.build, self.probing)
        if stores:
            self.watcher = Watcher(
                stores,
                self._on_hints,
                self.stop,
                fallback=f"the sync every {sync.interval:g}s",
                on_watch=self._look_again,
                watch=self.watch_function,  # type: ignore[arg-type]
            )
            self.watcher.start()
        watched = ", ".join(store.describe() for store in stores) or "none"
        probed = ", ".join(probe.name for probe in probes)
        log.info(
            "live: watching %s%s; full pass every %gs",
            watched,
            f"; probing {probed} every {sync.probe:g}s" if probes and sync.probe else "",
            sync.interval,
        )

    def _unconfigure(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        self.probing.close()

    # hints -------------------------------------------------------------------------------------

    def _on_hints(self, hints: set[Hint]) -> None:
        self.queue.watched(hints)
        self._wake.set()

    def changed(self, hints: set[Hint]) -> None:
        """Stores an agent wrote through the daemon (``orchestration/serve``): a cycle for them at
        once, with no watching or comparing of files involved."""
        self.queue.served(hints)
        self._wake.set()

    def _look_again(self, roots: list[Path]) -> None:
        """Compare every store under ROOTS with what memsync left there (a watch just began)."""
        self.queue.watched(self.local.left_under(roots))
        self._wake.set()

    def _loop(self) -> None:
        said: str | None = None
        while not self.stop.is_set():
            try:
                self._turn()
            except Exception as exc:  # the loop must outlive any one turn; the full pass goes on
                if str(exc) != said:
                    said = str(exc)
                    log.exception("live sync: %s; carrying on", exc)
                self.stop.wait(IDLE)

    def _turn(self) -> None:
        """Wait for a reason to act, then probe, look at the watched changes, run a cycle."""
        self._wake.wait(self._sleep())
        self._wake.clear()
        if self.stop.is_set():
            return
        if is_locked(self.paths.lock_file):
            self.stop.wait(0.2)  # a cycle is running: hints are checked once it is done
            self._wake.set()
            return
        hints = self.pushes.before_probes(self.probing)
        tokens: Tokens = {}
        if self.probing.due():
            found, tokens = self.probing.ask_all()
            hints |= found
        hints |= self.pushes.after_probes(self.probing)
        hints |= self.queue.due()
        hints |= self.local.changed(self.queue.take_pending())
        written = self.queue.take_written()
        hints |= written
        if hints:
            self.guard("live sync", functools.partial(self._run, hints, tokens, written))()

    def _sleep(self) -> float:
        now = time.monotonic()
        moments = self.queue.moments()
        probe = self.probing.next_moment()
        if probe is not None:
            moments.append(probe)
        return max(0.0, min([IDLE, *(m - now for m in moments)]))

    # hinted cycles -------------------------------------------------------------------------------

    def _run(self, hints: set[Hint], tokens: Tokens, written: set[Hint] | None = None) -> None:
        config = self.config
        scoped = bool(scoped_config_keys(config.providers))
        hinted = {hint.provider for hint in hints if hint.provider in config.providers}
        if not hinted:
            return
        receivers = receivers_of(config)
        scopes = {hint.scope for hint in hints}
        only_scopes = None if not scoped or None in scopes else {s for s in scopes if s}
        options = SyncOptions(only=sorted(hinted | receivers), lead=sorted(hinted), stop=self.stop)
        why = _named(sorted(hints))
        started = time.monotonic()
        try:
            report = run_sync(
                self.paths,
                config,
                options,
                lock_wait=LOCK_WAIT,
                only_scopes=only_scopes,
                observer=RunObserver(self.local, self.probing, tokens),
                held=self.held,
            )
        except LockHeld:  # a cycle started meanwhile: once it is done, look again
            self._count_not_run("busy")
            local = self.local.providers()
            self.queue.served(written or set())  # served writes stay writes, unchecked
            self.queue.watched({hint for hint in hints if hint.provider in local})
            self.queue.retry_soon({hint for hint in hints if hint.provider not in local}, 0.2)
            self._wake.set()
            return
        except MemsyncError as exc:
            self._count_not_run("failed")
            log.warning("sync for %s failed: %s", why, exc)
            self.queue.back_off(hints, self.config.sync.interval)
            return
        except Exception as exc:  # a bug, not a provider's answer: the hints are kept
            self._count_not_run("failed")
            self.queue.back_off(hints, self.config.sync.interval)
            self._failed(why, exc)
            return
        if self._failing is not None:
            log.info("live sync works again (it had failed %d times)", self._failing[1])
            self._failing = None
        self.cycles += 1
        if self.counter is not None:
            self.counter.cycle_ended(
                report.run_id, per_scope=config.metrics.per_scope, trigger=LIVE
            )
        self._after(hints, report, time.monotonic() - started, why)

    def _count_not_run(self, outcome: str) -> None:
        if self.counter is not None:
            self.counter.cycle_not_run(outcome, trigger=LIVE)

    def _failed(self, why: str, exc: Exception) -> None:
        """Say an unexpected failure once (with its traceback), not at every retry."""
        said = f"{type(exc).__name__}: {exc}"
        if self._failing is not None and self._failing[0] == said:
            self._failing = (said, self._failing[1] + 1)
            log.debug("live sync for %s failed again: %s", why, said)
            return
        self._failing = (said, 1)
        log.error(
            "live sync for %s failed unexpectedly (%s); its changes are kept and tried again, "
            "backing off (said once)",
            why,
            said,
            exc_info=exc,
        )

    def _after(self, hints: set[Hint], report: CycleReport, seconds: float, why: str) -> None:
        scoped = bool(scoped_config_keys(self.config.providers))
        synced = getattr(report, "scopes", None)
        again: set[Hint] = set()
        for hint in hints:
            unsynced = (
                synced is not None and hint.scope is not None and hint.scope.label not in synced
            )
            if scoped and unsynced:
                self.queue.done({hint})
                self.local.not_synced(hint)  # not a scope memsync syncs (not discovered)
                log.debug("%s: changed, but memsync does not sync that scope", hint.label)
                continue
            names = (
                [scoped_name(hint.provider, hint.scope)]
                if scoped and hint.scope is not None
                else [n for n in report.providers if n.split("[", 1)[0] == hint.provider]
            )
            states = {report.providers[n].state for n in names if n in report.providers}
            if states & {ProviderState.BUSY, ProviderState.ERROR, ProviderState.SKIPPED}:
                again.add(hint)
        self.queue.done(hints - again)
        if again:
            self.queue.back_off(again, self.config.sync.interval)
        written = sum(o.written for o in report.providers.values())
        trouble = [
            f"{n} {o.state}"
            for n, o in report.providers.items()
            if o.state not in USABLE and o.state != ProviderState.SKIPPED
        ]
        level = logging.INFO if written or trouble or report.failures else logging.DEBUG
        parts = [f"wrote {written}", *trouble]
        if report.failures:
            parts.append(f"{len(report.failures)} failed")
        unfound = list(incomplete_discoveries(getattr(report, "discovery", {})).values())
        parts += unfound
        if unfound:
            level = logging.INFO
        log.log(
            level,
            "sync #%d %s in %.1fs for %s: %s",
            report.run_id,
            "ok" if report.exit_code == 0 else "needs attention",
            seconds,
            why,
            "; ".join(parts),
        )

    # every cycle's observer (the full pass's included) -------------------------------------------

    def cycle_starting(self, store: StagingStore) -> None:
        self._full = RunObserver(self.local, self.probing, None)
        self._full.cycle_starting(store)

    def scope_done(self, scope: Scope | None, report: CycleReport) -> None:
        if self._full is not None:
            self._full.scope_done(scope, report)

    def released(self, name: str, token: str | None) -> None:
        if self._full is not None:
            self._full.released(name, token)


def _named(hints: list[Hint]) -> str:
    names = [hint.label for hint in hints[:SHOWN]]
    more = f" and {len(hints) - SHOWN} more" if len(hints) > SHOWN else ""
    return "changes in " + ", ".join(names) + more


def receivers_of(config: Config) -> set[str]:
    """The providers a change reaches in one cycle: the active backend, push and both."""
    topology = topology_of(config)
    return {name for name in config.providers if topology.is_receiver(name)}


__all__ = ["Live", "receivers_of"]
