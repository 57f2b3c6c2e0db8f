"""The daemon's live side: changes found by watching and probing start cycles for only the
providers and scopes they touch.

Three ways a change is found, from cheapest to surest (docs/daemon.md):

- **watch** (``scopes/watch.py``): a local store's files changed (mnem, pmm-dir, a Mem0
  library's local store); the hint is checked against what memsync left there, so memsync's
  own writes never start a cycle;
- **probe** (``scopes/probes.py``): every ``[sync] probe`` seconds one cheap request per
  remote store says which scopes moved since memsync last listed them;
- **full pass**: every ``[sync] interval`` the daemon lists everything, whatever the hints
  said, so nothing relies on a hint being right.

A hint starts a cycle (``run_sync`` with ``only`` and ``only_scopes``) for the hinted
provider and every provider that receives its changes (the active backend and the ``push`` and
``both`` providers), in the hinted scopes only; hints that arrive meanwhile wait for the next
one. Every cycle, full or hinted, reports back as a ``CycleObserver``: as each scope's cycle
ends, memsync notes each local store's files as it left them, and each probed store's token
as it was before the listing. A hinted cycle that could not reach its store (busy, down) is
tried again, backing off; a probe that fails lists its provider in full, said once.

memsync's own writes start nothing, in either kind of store: a local store's files are
compared with what memsync left; a probed store's answer, where the probe can tell it from
memsync's mirror (``Probe.expected``), with what memsync's writes made of the scope. A scope
that answers exactly that is memsync's own write, not a change to list again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memsync.base.errors import LockHeld, MemsyncError
from memsync.base.lock import is_locked
from memsync.base.paths import Paths
from memsync.base.records import utc_now_iso
from memsync.base.scopes import Scope, scoped_name, split_scoped_name
from memsync.config import Config
from memsync.config.scoping import scoped_config_keys
from memsync.engine.from_config import topology_of
from memsync.engine.report import USABLE, CycleReport, ProviderState, SyncOptions
from memsync.orchestration.live.probes import WHOLE, Flags, Probe, ProbeUnsure, probes_for
from memsync.orchestration.live.watch import (
    Hint,
    LocalStore,
    Mem0LocalStore,
    MnemStore,
    Signature,
    Watcher,
    local_stores,
)
from memsync.orchestration.runner import run_sync
from memsync.orchestration.scopes.report import incomplete_discoveries
from memsync.providers import build_provider
from memsync.providers.base import Provider
from memsync.providers.mnem.held import HeldStores
from memsync.staging import StagingStore

log = logging.getLogger("memsync.live")

Guard = Callable[[str, Callable[[], None]], Callable[[], None]]
Tokens = dict[str, dict[str, str]]  # provider -> scope label -> token

LOCK_WAIT = 0.5  # a hinted cycle waits this long for the cycle lock, then tries again later
IDLE = 1.0  # the longest the loop sleeps without a reason to wake
RETRY_FIRST = 5.0  # a hinted cycle that could not reach its store is retried after this,
RETRY_MAX = 300.0  # ...doubling up to this (or the interval, when shorter)
SHOWN = 3  # hints named in a log line


@dataclass
class _Retry:
    due: float
    delay: float


@dataclass(frozen=True)
class _Left:
    """A local store as a cycle let it go: its files, and what it held (``left_token``)."""

    files: Signature
    token: str | None = None


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
    ) -> None:
        self.paths = paths
        self.config = config
        self.stop = stop
        self.guard: Guard = guard or (lambda _name, job: job)
        self.build = build
        self.watch_function = watch
        self.held = held  # the daemon's held stores: its hinted cycles borrow mnem stores there
        self._lock = threading.Lock()
        self._asking = threading.Lock()  # one probe at a time (the loop's, a full pass's)
        self._wake = threading.Event()
        self._pending: set[Hint] = set()  # watched changes not yet checked
        self._written: set[Hint] = set()  # writes the daemon served: changes, nothing to check
        self._retry: dict[Hint, _Retry] = {}
        self._left: dict[Hint, _Left] = {}  # each local store as memsync left it
        self._held: dict[Hint, _Left] = {}  # ...as a cycle released it, until it is kept
        self._tokens: Tokens = {}  # what staging holds, mirrored here
        self._expected: Tokens = {}  # what memsync's own writes made of a probed scope
        self._trouble: dict[str, str] = {}  # probes that failed, and why (said once)
        self._distrusted: dict[str, str] = {}  # probes whose answers a listing contradicted
        self._contradicted: dict[str, int] = {}  # contradictions in a row, per probe
        self._full: _RunObserver | None = None
        self.stores: list[LocalStore] = []
        self.watcher: Watcher | None = None
        self.probes: list[Probe] = []
        self._next_probe = 0.0
        self._thread: threading.Thread | None = None
        self.cycles = 0  # hinted cycles run
        self.own_changes = 0  # watched changes that were memsync's own writes (no cycle)
        self.own_answers = 0  # probed scopes whose change was memsync's own writes (no cycle)

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
        self._wake.set()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
        if self.watcher is not None:
            self.watcher.join(timeout)

    def _configure(self, config: Config) -> None:
        sync = config.sync
        stores = local_stores(config, self.held) if sync.watch else []
        probes: list[Probe] = []
        if sync.probe is not None:
            probes = probes_for(config, lambda name: self.build(name, config))
        with self._lock:
            self.stores, self.probes = stores, probes
            self._trouble.clear()
            self._distrusted.clear()
            self._contradicted.clear()
            self._next_probe = time.monotonic() + (sync.probe or 0.0)
        self._load_tokens()
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
        with self._lock:
            probes, self.probes = self.probes, []
        with self._asking:  # a probe in flight finishes before its client is closed
            for probe in probes:
                try:
                    probe.close()
                except Exception as exc:  # closing an HTTP client: nothing left to lose
                    log.debug("closing the probe of %s: %s", probe.name, exc)

    def _load_tokens(self) -> None:
        if not self.probes or not self.paths.database.exists():
            return
        try:
            with StagingStore.open(self.paths.database) as store:
                tokens = {probe.name: store.probe_tokens.of(probe.name) for probe in self.probes}
        except MemsyncError as exc:
            log.warning("probe tokens not read (%s); the first probe lists every scope", exc)
            return
        with self._lock:
            self._tokens.update(tokens)

    # hints -------------------------------------------------------------------------------------

    def _on_hints(self, hints: set[Hint]) -> None:
        with self._lock:
            self._pending |= hints
        self._wake.set()

    def changed(self, hints: set[Hint]) -> None:
        """Stores an agent wrote through the daemon (``orchestration/serve``): a cycle for them at
        once, with no watching or comparing of files involved."""
        with self._lock:
            self._written |= hints
        self._wake.set()

    def _look_again(self, roots: list[Path]) -> None:
        """Compare every store under ROOTS with what memsync left there (a watch just began)."""
        with self._lock:
            providers = {store.provider for store in self.stores if store.root in roots}
            self._pending |= {hint for hint in self._left if hint.provider in providers}
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
        hints: set[Hint] = set()
        tokens: Tokens = {}
        if self._probe_due():
            found, tokens = self._probe()
            hints |= found
        hints |= self._due_retries()
        hints |= self._changed_stores()
        with self._lock:
            written, self._written = self._written, set()
        hints |= written
        if hints:
            self.guard("live sync", functools.partial(self._run, hints, tokens, written))()

    def _sleep(self) -> float:
        now = time.monotonic()
        with self._lock:
            moments = [r.due for r in self._retry.values()]
            if self.probes and self.config.sync.probe is not None:
                moments.append(self._next_probe)
        return max(0.0, min([IDLE, *(m - now for m in moments)]))

    def _probe_due(self) -> bool:
        with self._lock:
            return bool(self.probes) and time.monotonic() >= self._next_probe

    def _due_retries(self) -> set[Hint]:
        now = time.monotonic()
        with self._lock:
            due = {hint for hint, retry in self._retry.items() if retry.due <= now}
        return due

    def _changed_stores(self) -> set[Hint]:
        """The watched changes whose store differs from what memsync left: another program's."""
        with self._lock:
            pending, self._pending = self._pending, set()
            stores = {store.provider: store for store in self.stores}
            left = dict(self._left)
        changed = set()
        for hint in pending:
            store = stores.get(hint.provider)
            if store is None:
                continue
            if hint in left and self._unchanged(store, hint, left[hint]):
                log.debug("%s: changed by memsync itself; no cycle", hint.label)
                self.own_changes += 1
                continue
            changed.add(hint)
        return changed

    def _unchanged(self, store: LocalStore, hint: Hint, note: _Left) -> bool:
        """Whether the store still holds what memsync left: the same files, or files that moved
        over the same content (a mnem handle closed on it), noted from then on."""
        if store.signature(hint.scope) == note.files:
            return True
        if note.token is None:
            return False
        files = store.settled(hint.scope, note.token)
        if files is None:
            return False
        with self._lock:
            if self._left.get(hint) == note:
                self._left[hint] = _Left(files, note.token)
        return True

    # probes ------------------------------------------------------------------------------------

    def _probe(self) -> tuple[set[Hint], Tokens]:
        """Ask every probe; the hints it gives, and the tokens to keep once listed."""
        with self._lock:
            probes = [p for p in self.probes if p.name not in self._distrusted]
            self._next_probe = time.monotonic() + (self.config.sync.probe or IDLE)
        hints: set[Hint] = set()
        tokens: Tokens = {}
        for probe in probes:
            try:
                flags = self._ask(probe)
            except Exception as exc:  # a provider error, or one nothing describes: both fall back
                if probe.name not in self._trouble:
                    self._trouble[probe.name] = str(exc)
                    kind = "cannot be trusted" if isinstance(exc, ProbeUnsure) else "failed"
                    log.warning(
                        "probe of %s %s (%s); listing it in full now, and at the sync every %gs "
                        "until the probe answers again",
                        probe.name,
                        kind,
                        exc,
                        self.config.sync.interval,
                    )
                    hints.add(Hint(probe.name))
                continue
            if flags is None:
                continue  # closed meanwhile (a reload, a stop)
            if self._trouble.pop(probe.name, None) is not None:
                log.info("probe of %s answers again", probe.name)
            self._drop_own_answers(probe.name, flags)
            tokens[probe.name] = flags.tokens
            if flags.everything:
                log.info("probe of %s: %s; listing every scope", probe.name, flags.everything)
                hints.add(Hint(probe.name))
                continue
            for label in flags.scopes:
                hints.add(Hint(probe.name, None if label == WHOLE else Scope.parse(label)))
        return hints, tokens

    def _drop_own_answers(self, provider: str, flags: Flags) -> None:
        """Scopes the probe flagged that answer what memsync's own writes made of them: kept as
        listed (the token memsync would have kept had it listed them), not listed again."""
        with self._lock:
            expected = self._expected.get(provider, {})
            own = {
                label
                for label in flags.scopes
                if label in expected and flags.tokens.get(label) == expected[label]
            }
            for label in own:
                self._tokens.setdefault(provider, {})[label] = expected.pop(label)
        if own:
            flags.scopes -= own
            self.own_answers += len(own)
            log.debug("%s: %d scope(s) changed by memsync itself; no cycle", provider, len(own))

    def _probe_tokens(self) -> Tokens:
        """The tokens before a full pass lists everything (a probe that fails gives none)."""
        with self._lock:
            probes = [
                p for p in self.probes if p.name not in self._trouble | self._distrusted.keys()
            ]
        tokens: Tokens = {}
        for probe in probes:
            try:
                flags = self._ask(probe)
            except Exception as exc:  # a hint: never the reason a full pass fails
                log.debug("probe of %s before the full pass: %s", probe.name, exc)
                continue
            if flags is not None:
                tokens[probe.name] = flags.tokens
        return tokens

    def _ask(self, probe: Probe) -> Flags | None:
        """PROBE's answer against the tokens kept for it; None if it closed meanwhile."""
        with self._lock:
            known = dict(self._tokens.get(probe.name, {}))
        with self._asking:
            if probe not in self.probes:
                return None  # closed meanwhile (a reload, a stop)
            return probe.ask(known)

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
                observer=_RunObserver(self, tokens),
                held=self.held,
            )
        except LockHeld:  # a cycle started meanwhile: once it is done, look again
            with self._lock:
                local = {store.provider for store in self.stores}
                self._written |= written or set()  # served writes stay writes, unchecked
                self._pending |= {hint for hint in hints if hint.provider in local}
            self._retry_soon({hint for hint in hints if hint.provider not in local}, 0.2)
            self._wake.set()
            return
        except MemsyncError as exc:
            log.warning("sync for %s failed: %s", why, exc)
            self._back_off(hints)
            return
        self.cycles += 1
        self._after(hints, report, time.monotonic() - started, why)

    def _after(self, hints: set[Hint], report: CycleReport, seconds: float, why: str) -> None:
        scoped = bool(scoped_config_keys(self.config.providers))
        synced = getattr(report, "scopes", None)
        again: set[Hint] = set()
        for hint in hints:
            unsynced = (
                synced is not None and hint.scope is not None and hint.scope.label not in synced
            )
            if scoped and unsynced:
                self._note_unsynced(hint)  # not a scope memsync syncs (not discovered)
                continue
            names = (
                [scoped_name(hint.provider, hint.scope)]
                if scoped and hint.scope is not None
                else [n for n in report.providers if n.split("[", 1)[0] == hint.provider]
            )
            states = {report.providers[n].state for n in names if n in report.providers}
            if states & {ProviderState.BUSY, ProviderState.ERROR, ProviderState.SKIPPED}:
                again.add(hint)
        with self._lock:
            for hint in hints - again:
                self._retry.pop(hint, None)
        if again:
            self._back_off(again)
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

    def _note_unsynced(self, hint: Hint) -> None:
        with self._lock:
            store = next((s for s in self.stores if s.provider == hint.provider), None)
            self._retry.pop(hint, None)
        if store is not None:
            note = _Left(store.signature(hint.scope))
            with self._lock:
                self._left[hint] = note
        log.debug("%s: changed, but memsync does not sync that scope", hint.label)

    def _retry_soon(self, hints: Iterable[Hint], delay: float) -> None:
        due = time.monotonic() + delay
        with self._lock:
            for hint in hints:
                retry = self._retry.get(hint)
                self._retry[hint] = _Retry(due, retry.delay if retry else 0.0)

    def _back_off(self, hints: Iterable[Hint]) -> None:
        cap = min(RETRY_MAX, self.config.sync.interval)
        now = time.monotonic()
        with self._lock:
            for hint in hints:
                retry = self._retry.get(hint)
                delay = min(cap, (retry.delay * 2 if retry and retry.delay else RETRY_FIRST))
                self._retry[hint] = _Retry(now + delay, delay)

    # every cycle's observer (the full pass's included) -------------------------------------------

    def cycle_starting(self, store: StagingStore) -> None:
        self._full = _RunObserver(self, None)
        self._full.cycle_starting(store)

    def scope_done(self, scope: Scope | None, report: CycleReport) -> None:
        if self._full is not None:
            self._full.scope_done(scope, report)

    def released(self, name: str, token: str | None) -> None:
        if self._full is not None:
            self._full.released(name, token)

    def _note_release(self, name: str, token: str | None) -> None:
        """A cycle released provider NAME: its store's files as memsync left them, and TOKEN.

        Noted just after the close (closing a mnem handle rewrites its file), and kept once
        the scope's cycle says the provider was read (``_note_left``). A program that writes
        the moment memsync lets go changes the files again once it commits and closes, and
        its new head does not match TOKEN: a change, as it should be.
        """
        split = split_scoped_name(name)
        provider, scope = split if split is not None else (name, None)
        with self._lock:
            store = next((s for s in self.stores if s.provider == provider), None)
        if store is None or (isinstance(store, Mem0LocalStore) and scope is not None):
            return  # a Mem0 library store stays open for the whole run: noted per scope
        hint = Hint(provider, scope)
        note = _Left(store.signature(scope), token)
        with self._lock:
            self._held[hint] = note

    def _note_left(self, scope: Scope | None, report: CycleReport) -> None:
        """What memsync left in each local store it read for SCOPE, as that scope's cycle ended."""
        with self._lock:
            stores = list(self.stores)
        for store in stores:
            name = store.provider if scope is None else scoped_name(store.provider, scope)
            outcome = report.providers.get(name)
            # A store every scope shares, which the run holds for all of them: a Mem0 library's,
            # or one mnem store holding every scope in its namespaces (a LangGraph layout).
            whole = isinstance(store, Mem0LocalStore) or (
                isinstance(store, MnemStore) and scope is not None
            )
            hint = Hint(store.provider, None if whole else scope)
            with self._lock:
                held = self._held.pop(Hint(store.provider, scope), None)
            if outcome is None or outcome.state not in USABLE:
                continue  # not read this cycle (skipped, busy): another program's changes stand
            if whole and scope is not None:
                # Still held by the run: its files move when it lets go, over the same head.
                held = _Left(store.signature(None), held.token if held is not None else None)
            if held is None:
                continue
            with self._lock:
                self._left[hint] = held

    def _keep_tokens(
        self, store: StagingStore, tokens: Tokens, scope: Scope | None, report: CycleReport
    ) -> None:
        """Keep each probed provider's token for SCOPE once the scope was listed there."""
        label = WHOLE if scope is None else scope.label
        with self._lock:
            probes = {probe.name: probe for probe in self.probes}
        for provider, answered in tokens.items():
            probe = probes.get(provider)
            if probe is None or provider in self._distrusted:
                continue
            token = answered[label] if label in answered else probe.unseen(label)
            if token is None:
                continue
            name = provider if scope is None else scoped_name(provider, scope)
            outcome = report.providers.get(name)
            if outcome is None or outcome.state not in USABLE:
                continue
            mirror = outcome.mirror
            why = (
                probe.credible(label, token, mirror.listed) if mirror and mirror.complete else None
            )
            if why is not None:
                self._contradict(provider, why)
                continue
            self._contradicted.pop(provider, None)
            with store.transaction():
                store.probe_tokens.save(provider, {label: token}, utc_now_iso())
            with self._lock:
                self._tokens.setdefault(provider, {})[label] = token

    def _expect_own_writes(
        self, store: StagingStore, scope: Scope | None, report: CycleReport
    ) -> None:
        """What each probed provider will answer for SCOPE now that memsync wrote into it this
        cycle (when its probe can tell, from the mirror its writes updated)."""
        label = WHOLE if scope is None else scope.label
        with self._lock:
            probes = list(self.probes)
        for probe in probes:
            name = probe.name if scope is None else scoped_name(probe.name, scope)
            outcome = report.providers.get(name)
            if outcome is None:
                continue  # not in this cycle: what was expected of it still stands
            wrote = outcome.written and outcome.state in USABLE
            own = probe.expected(label, store.iter_records(name)) if wrote else None
            with self._lock:
                if own is None:
                    self._expected.get(probe.name, {}).pop(label, None)
                else:
                    self._expected.setdefault(probe.name, {})[label] = own

    def _contradict(self, provider: str, why: str) -> None:
        """A listing contradicted the probe's answer; twice in a row, the probe is not used."""
        count = self._contradicted.get(provider, 0) + 1
        self._contradicted[provider] = count
        if count < 2:  # once may be a write between the probe and the listing
            return
        self._distrusted[provider] = why
        log.warning(
            "probe of %s cannot be trusted (%s); its changes are found by the sync every %gs",
            provider,
            why,
            self.config.sync.interval,
        )


class _RunObserver:
    """One run's notes: its tokens (taken before it lists), handed to ``Live`` per scope."""

    def __init__(self, live: Live, tokens: Tokens | None) -> None:
        self.live = live
        self.tokens = tokens
        self.store: StagingStore | None = None

    def cycle_starting(self, store: StagingStore) -> None:
        self.store = store
        if self.tokens is None:
            self.tokens = self.live._probe_tokens()

    def released(self, name: str, token: str | None) -> None:
        self.live._note_release(name, token)

    def scope_done(self, scope: Scope | None, report: CycleReport) -> None:
        self.live._note_left(scope, report)
        if self.store is not None and self.tokens:
            self.live._keep_tokens(self.store, self.tokens, scope, report)
        if self.store is not None:
            self.live._expect_own_writes(self.store, scope, report)


def _named(hints: list[Hint]) -> str:
    names = [hint.label for hint in hints[:SHOWN]]
    more = f" and {len(hints) - SHOWN} more" if len(hints) > SHOWN else ""
    return "changes in " + ", ".join(names) + more


def receivers_of(config: Config) -> set[str]:
    """The providers a change reaches in one cycle: the active backend, push and both."""
    topology = topology_of(config)
    return {name for name in config.providers if topology.is_receiver(name)}


__all__ = ["Live", "receivers_of"]
