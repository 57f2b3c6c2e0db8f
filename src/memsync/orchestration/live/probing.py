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
from collections.abc import Callable
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


class Probing:
    """The configured probes, asked one at a time, and what memsync keeps of their answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asking = threading.Lock()  # one probe at a time (the loop's, a full pass's)
        self.probes: list[ChangeProbe] = []
        self.period = 0.0  # seconds between probes
        self.interval = 0.0  # seconds between full passes, for the log lines
        self._next = 0.0
        self._tokens: Tokens = {}  # what staging holds, mirrored here
        self._expected: Tokens = {}  # what memsync's own writes made of a probed scope
        self._trouble: dict[str, str] = {}  # probes that failed, and why (said once)
        self._distrusted: dict[str, str] = {}  # probes whose answers a listing contradicted
        self._contradicted: dict[str, int] = {}  # contradictions in a row, per probe
        self.own_answers = 0  # probed scopes whose change was memsync's own writes (no cycle)

    def configure(self, probes: list[ChangeProbe], *, period: float, interval: float) -> None:
        """Use these probes from now on, every PERIOD seconds, the first after one PERIOD."""
        with self._lock:
            self.probes, self.period, self.interval = probes, period, interval
            self._trouble.clear()
            self._distrusted.clear()
            self._contradicted.clear()
            self._next = time.monotonic() + period

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
            return self._next if self.probes else None

    def due(self) -> bool:
        with self._lock:
            return bool(self.probes) and time.monotonic() >= self._next

    def ask_all(self) -> tuple[set[Hint], Tokens]:
        """Ask every probe; the hints it gives, and the tokens to keep once listed."""
        with self._lock:
            probes = [p for p in self.probes if p.name not in self._distrusted]
            self._next = time.monotonic() + self.period
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
