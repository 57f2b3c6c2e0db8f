"""Remote stores, probed: the daemon's probes, the tokens it keeps, the answers it distrusts.

Every ``[sync] probe`` seconds each remote store that offers one (``change_probe`` beside its
``build``: ``providers/change_probe.py``) is asked which scopes moved since memsync last listed
them, against the token memsync kept for each scope when it listed it (in staging, so a restart
keeps them). A probe that fails, or whose answer cannot be trusted, lists its provider in full,
said once; a probe whose answers a complete listing contradicts twice in a row is not used
again until the config is reloaded. A scope whose answer is what memsync's own writes made of
it (``ChangeProbe.expected``) is kept as listed, not listed again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from memsync.base.errors import MemsyncError
from memsync.base.records import utc_now_iso
from memsync.base.scopes import Scope, scoped_name
from memsync.config import Config
from memsync.engine.report import USABLE, CycleReport
from memsync.providers import change_probe
from memsync.providers.base import Provider
from memsync.providers.change_probe import WHOLE, ChangeProbe, Flags, ProbeUnsure
from memsync.providers.watched import Hint
from memsync.staging import StagingStore

log = logging.getLogger("memsync.live")
setup_log = logging.getLogger("memsync.probe")

Tokens = dict[str, dict[str, str]]  # provider -> scope label -> token


def probes_for(config: Config, build: Callable[[str], Provider]) -> list[ChangeProbe]:
    """A probe for every configured provider that offers a cheap and sure one; a provider
    that cannot be built here is not probed (said once: its full pass says the rest)."""
    probes: list[ChangeProbe] = []
    for name, entry in config.providers.items():
        make = change_probe(name, entry)
        if make is None:
            continue
        try:
            provider = build(name)
        except MemsyncError as exc:
            setup_log.warning(
                "not probing %s: %s; its changes are found by the full pass", name, exc
            )
            continue
        probes.append(make(provider))
    return probes


class StagedCounts:
    """What staging holds of a probed provider, for a probe that compares counts (a fresh
    connection each time: a probe's thread is not a cycle's)."""

    def __init__(self, database: Path) -> None:
        self.database = database

    def labels(self, provider: str) -> list[str]:
        with StagingStore.open(self.database) as store:
            names = store.providers.scoped_names()
        prefix = f"{provider}["
        return [n[len(prefix) : -1] for n in names if n.startswith(prefix) and n.endswith("]")]

    def count(self, provider: str, labels: Sequence[str] | None, created_by: str) -> int:
        with StagingStore.open(self.database) as store:
            if labels is None:
                prefix = f"{provider}["
                names = [n for n in store.providers.scoped_names() if n.startswith(prefix)]
            else:
                names = [f"{provider}[{label}]" for label in labels]
            return store.records.count_created_by(names, created_by)


class Probing:
    """The configured probes, asked one at a time, and what memsync keeps of their answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asking = threading.Lock()  # one probe at a time (the loop's, a full pass's)
        self.probes: list[ChangeProbe] = []
        self.period = 0.0  # seconds between probes
        self.interval = 0.0  # seconds between full passes, for the log lines
        self._next: dict[str, float] = {}  # when each probe is due (time.monotonic)
        self.slower: dict[str, float] = {}  # probes asked less often (events arrive), period
        self.asked_at: dict[str, float] = {}  # when each probe last asked (time.monotonic)
        self.database: Path | None = None
        # Which flagged scopes a store's pushed events already announced (live/pushes.py).
        self.judge: Callable[[str, Mapping[str, set[str]]], set[str]] | None = None
        self._tokens: Tokens = {}  # what staging holds, mirrored here
        self._expected: Tokens = {}  # what memsync's own writes made of a probed scope
        self._trouble: dict[str, str] = {}  # probes that failed, and why (said once)
        self._distrusted: dict[str, str] = {}  # probes whose answers a listing contradicted
        self._contradicted: dict[str, int] = {}  # contradictions in a row, per probe
        self.own_answers = 0  # probed scopes whose change was memsync's own writes (no cycle)

    def configure(
        self,
        probes: list[ChangeProbe],
        *,
        period: float,
        interval: float,
        database: Path | None = None,
    ) -> None:
        """Use these probes from now on, every PERIOD seconds, the first after one PERIOD;
        DATABASE: the staging store a probe that compares counts reads."""
        with self._lock:
            self.probes, self.period, self.interval = probes, period, interval
            self.database = database
            self._trouble.clear()
            self._distrusted.clear()
            self._contradicted.clear()
            first = time.monotonic() + period
            self._next = {probe.name: first for probe in probes}
        for probe in probes:
            probe.staged = StagedCounts(database) if database is not None else None

    def period_of(self, name: str) -> float:
        """Seconds between two probes of NAME: ``period``, or longer while its store's events
        arrive (``slower``)."""
        return max(self.period, self.slower.get(name, 0.0))

    def soon(self, name: str) -> None:
        """Probe NAME at the loop's next turn (an event named a memory staging does not hold)."""
        with self._lock:
            if name in self._next:
                self._next[name] = 0.0

    def close(self) -> None:
        """Stop probing: each probe's client is closed once a probe in flight has finished."""
        with self._lock:
            probes, self.probes = self.probes, []
        with self._asking:
            for probe in probes:
                try:
                    probe.close()
                except Exception as exc:  # closing an HTTP client: nothing left to lose
                    log.debug("closing the probe of %s: %s", probe.name, exc)

    def load_tokens(self, database: Path) -> None:
        """The tokens staging kept from the last listings (none: the first probe lists all)."""
        if not self.probes or not database.exists():
            return
        try:
            with StagingStore.open(database) as store:
                tokens = {probe.name: store.probe_tokens.of(probe.name) for probe in self.probes}
        except MemsyncError as exc:
            log.warning("probe tokens not read (%s); the first probe lists every scope", exc)
            return
        with self._lock:
            self._tokens.update(tokens)

    def next_moment(self) -> float | None:
        """When the next probe is due (``time.monotonic``); None when nothing is probed."""
        with self._lock:
            return min(self._next.values()) if self.probes and self._next else None

    def due(self) -> bool:
        moment = self.next_moment()
        return moment is not None and time.monotonic() >= moment

    def ask_all(self) -> tuple[set[Hint], Tokens]:
        """Ask every probe that is due; the hints they give, and the tokens to keep once
        listed. A scope a probe finds lost memories in is listed in full."""
        now = time.monotonic()
        with self._lock:
            due = [p for p in self.probes if self._next.get(p.name, 0.0) <= now]
            for probe in due:
                self._next[probe.name] = now + self.period_of(probe.name)
                self.asked_at[probe.name] = now
            probes = [p for p in due if p.name not in self._distrusted]
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
                        self.interval,
                    )
                    hints.add(Hint(probe.name))
                continue
            if flags is None:
                continue  # closed meanwhile (a reload, a stop)
            if self._trouble.pop(probe.name, None) is not None:
                log.info("probe of %s answers again", probe.name)
            self._drop_own_answers(probe.name, flags)
            if self.judge is not None and flags.changed:
                flags.scopes -= self.judge(probe.name, flags.changed)
            tokens[probe.name] = flags.tokens
            if flags.everything:
                log.info("probe of %s: %s; listing every scope", probe.name, flags.everything)
                hints.add(Hint(probe.name))
                continue
            for label in flags.scopes:
                hints.add(Hint(probe.name, None if label == WHOLE else Scope.parse(label)))
            hints |= self._deletions(probe)
        return hints, tokens

    def _deletions(self, probe: ChangeProbe) -> set[Hint]:
        """The scopes PROBE finds lost memories in, each to be listed in full next cycle."""
        try:
            with self._asking:
                lost = probe.deletions() if probe in self.probes else set()
        except Exception as exc:  # a hint: the full pass finds deletes anyway
            log.debug("deletions of %s: %s", probe.name, exc)
            return set()
        if not lost:
            return set()
        scopes = [None if label == WHOLE else Scope.parse(label) for label in sorted(lost)]
        self.list_in_full(probe.name, scopes)
        log.info(
            "probe of %s: %d scope(s) lost memories (%s); listing them in full",
            probe.name,
            len(scopes),
            ", ".join(sorted(lost)[:3]) + (" ..." if len(lost) > 3 else ""),
        )
        return {Hint(probe.name, scope) for scope in scopes}

    def list_in_full(self, provider: str, scopes: Iterable[Scope | None]) -> None:
        """The next listing of each scope of PROVIDER is a full one (it sees deletes), however
        recent its last full listing: kept in staging, so a restart keeps it too."""
        if self.database is None or not self.database.exists():
            return
        with StagingStore.open(self.database) as store, store.transaction():
            for scope in scopes:
                name = provider if scope is None else scoped_name(provider, scope)
                store.providers.forget_full_scan(name)

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

    def tokens_before_full_pass(self) -> Tokens:
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

    def _ask(self, probe: ChangeProbe) -> Flags | None:
        """PROBE's answer against the tokens kept for it; None if it closed meanwhile."""
        with self._lock:
            known = dict(self._tokens.get(probe.name, {}))
        with self._asking:
            if probe not in self.probes:
                return None  # closed meanwhile (a reload, a stop)
            return probe.ask(known)

    def keep_tokens(
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

    def expect_own_writes(
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
            self.interval,
        )


__all__ = ["Probing", "Tokens", "probes_for"]
