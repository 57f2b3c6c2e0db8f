"""The events stores push, turned into hints, and whether they are arriving.

The listener (``webhook_receiver``) queues each event; the live loop takes them when no cycle
runs, so the cycle that wrote a memory has staged it by then:

| event | memory in staging | hint |
|---|---|---|
| delete | yes | its scope, listed in full (an incremental listing cannot see a delete) |
| delete | no | none (memsync never held it, or deleted it itself) |
| add, update | yes, that text | none: memsync's own write (its echo), or an add already listed |
| add, update | yes | its scope |
| add, update | no | the store's probe, at once; one it still cannot place is read by id |

Events are hints, as a probe's answers are: one lost costs latency, never a memory. The probe
goes on, slower while events arrive (``SLOW_PROBE``), and tells what they missed: a change it
finds that no event announced within ``GRACE`` is a miss, and a miss makes the events
"silent": the probe runs at its own period again until they arrive again.

Per provider: ``waiting`` (registered, no event yet), ``arriving``, ``silent``. The daemon notes
this in staging (``staging/webhooks.py``) every ``NOTE_EVERY`` seconds for `status`, the page
and /metrics.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memsync.base.errors import MemsyncError
from memsync.base.records import parse_instant, utc_now_iso
from memsync.base.scopes import Scope, split_scoped_name
from memsync.providers.change_probe import WHOLE
from memsync.providers.pushed import PushedChanges, PushedEvent
from memsync.providers.watched import Hint
from memsync.staging import StagingStore

log = logging.getLogger("memsync.webhooks")

SLOW_PROBE = 60.0  # seconds between probes of a store whose events arrive
GRACE = 30.0  # an event may come this long after the probe saw its change
SILENT_AFTER = 600.0  # a miss this recent makes the events silent
QUIET_HOUR = 3600.0  # the probe found changes and no event came for this long: silent
NOTE_EVERY = 10.0  # seconds between notes of the health in staging
OWN_WRITES = timedelta(minutes=10)  # an event for memsync's own write is this recent
LOOKUPS_A_MINUTE = 50  # reads by id of memories an event named and nothing could place
REMEMBERED = 600.0  # seconds an announced memory is remembered (to judge the probe's finds)


@dataclass
class _Health:
    """What one provider's events did since the last note (counts) and lately (times)."""

    started: float = field(default_factory=time.monotonic)
    last_event: float | None = None  # time.monotonic
    last_event_at: str | None = None  # the same, as a wall-clock instant
    last_miss: float | None = None
    last_change: float | None = None  # the probe last found a change
    events: collections.Counter[str] = field(default_factory=collections.Counter)
    missed: int = 0
    refused: int = 0


class Announcements:
    """Pushed events between the listener and the live loop, and their health."""

    def __init__(self, secret: Callable[[str], str | None]) -> None:
        self.secret = secret  # a provider's webhook secret; None: not registered
        self.grace = GRACE
        self._lock = threading.Lock()
        self._queue: list[tuple[str, PushedEvent]] = []
        self._health: dict[str, _Health] = {}
        self._received: dict[tuple[str, str], float] = {}  # (provider, id) -> when
        self._handled: dict[tuple[str, str], float] = {}  # events turned into a hint or none
        self._unplaced: dict[tuple[str, str], float] = {}  # ids staging did not hold
        self._unseen: dict[tuple[str, str], float] = {}  # probe finds no event announced yet
        self._lookups: collections.deque[float] = collections.deque()
        self._noted = 0.0
        self.pushed: dict[str, PushedChanges] = {}  # provider -> its events and subscription
        self.keys: dict[str, tuple[str, ...]] = {}  # provider -> its wildcard keys
        self.wake: Callable[[], None] = lambda: None

    # the listener's side --------------------------------------------------------------------

    def arrived(self, provider: str, event: PushedEvent) -> None:
        now = time.monotonic()
        with self._lock:
            self._queue.append((provider, event))
            self._received[(provider, event.memory_id)] = now
            self._unseen.pop((provider, event.memory_id), None)
            health = self._health.setdefault(provider, _Health())
            health.last_event, health.last_event_at = now, utc_now_iso()
            health.events[event.kind] += 1
        self.wake()

    def refused(self, provider: str | None, reason: str) -> None:
        log.debug("webhook request refused (%s)", reason)
        if provider is not None:
            with self._lock:
                self._health.setdefault(provider, _Health()).refused += 1

    # the live loop's side -------------------------------------------------------------------

    def waiting(self) -> bool:
        with self._lock:
            return bool(self._queue)

    def take(self, database: Path) -> tuple[set[Hint], set[str], dict[str, list[Scope | None]]]:
        """The events queued since the last turn as hints; the providers to probe at once (an
        event named a memory staging does not hold); the scopes to list in full, by provider."""
        with self._lock:
            queued, self._queue = self._queue, []
        hints: set[Hint] = set()
        soon: set[str] = set()
        full: dict[str, list[Scope | None]] = {}
        if not queued or not database.exists():
            return hints, soon, full
        since = (datetime.now(UTC) - OWN_WRITES).isoformat().replace("+00:00", "Z")
        now = time.monotonic()
        with StagingStore.open(database) as store:
            names = store.providers.scoped_names()
            for provider, event in queued:
                key = (provider, event.memory_id)
                held = store.records.scope_of(_names_of(provider, names), event.memory_id)
                if held is None:
                    if event.kind == "delete":
                        self._handle(key, now)  # memsync never held it, or deleted it itself
                    else:  # not handled: what the probe finds of it is listed
                        soon.add(provider)
                        with self._lock:
                            self._unplaced[key] = now
                    continue
                name, text = held
                scope = _scope_of(provider, name)
                if event.kind == "delete":
                    full.setdefault(provider, []).append(scope)
                    hints.add(Hint(provider, scope))
                elif text == event.text and (
                    event.kind == "add"
                    or store.journal.wrote_recently(name, event.memory_id, since)
                ):
                    pass  # memsync's own write, or an add its listing already holds
                else:
                    hints.add(Hint(provider, scope))
                self._handle(key, now)
        return hints, soon, full

    def _handle(self, key: tuple[str, str], now: float) -> None:
        with self._lock:
            self._handled[key] = now

    def judge(self, provider: str, changed: Mapping[str, set[str]]) -> set[str]:
        """The scopes (labels) a probe of PROVIDER found changed whose every change an event
        announced and the loop handled: no need to list them again. The others' unannounced
        changes are watched for a late event; past ``GRACE`` each is a miss."""
        now = time.monotonic()
        if self.secret(provider) is None:
            return set()
        settled: set[str] = set()
        with self._lock:
            health = self._health.setdefault(provider, _Health())
            for label, ids in changed.items():
                health.last_change = now
                handled = all((provider, i) in self._handled for i in ids)
                for memory_id in ids:
                    self._unplaced.pop((provider, memory_id), None)
                    if (provider, memory_id) not in self._received:
                        self._unseen.setdefault((provider, memory_id), now)
                if handled and ids:
                    settled.add(label)
        return settled

    def unplaced(self, asked: Mapping[str, float]) -> set[Hint]:
        """Memories an event named that neither staging nor a probe since could place: read by
        id (at most ``LOOKUPS_A_MINUTE``), their scopes hinted. ASKED: when each provider's
        probe last asked (``time.monotonic``)."""
        now = time.monotonic()
        with self._lock:
            due = [k for k, at in self._unplaced.items() if at < asked.get(k[0], 0.0)]
        hints: set[Hint] = set()
        for provider, memory_id in due:
            pushed = self.pushed.get(provider)
            while self._lookups and self._lookups[0] < now - 60.0:
                self._lookups.popleft()
            if pushed is None or len(self._lookups) >= LOOKUPS_A_MINUTE:
                break
            self._lookups.append(now)
            with self._lock:
                self._unplaced.pop((provider, memory_id), None)
            try:
                label = pushed.locate(memory_id, self.keys.get(provider, ()))
            except MemsyncError as exc:
                log.debug("%s: memory %s not read by id: %s", provider, memory_id, exc)
                continue
            if label is not None:
                hints.add(Hint(provider, None if label == WHOLE else Scope.parse(label)))
        return hints

    # health ---------------------------------------------------------------------------------

    def resume(self, database: Path) -> None:
        """Take up what the last daemon noted: events that arrived within the last hour
        still count as arriving (a restart does not speed the probe up until the next one)."""
        if not database.exists():
            return
        try:
            with StagingStore.open(database) as store:
                noted = {r.provider: r for r in store.webhooks.all() if r.provider in self.pushed}
        except MemsyncError as exc:
            log.debug("webhook health not read: %s", exc)
            return
        now, wall = time.monotonic(), datetime.now(UTC)
        for name, registration in noted.items():
            last = parse_instant(registration.last_event_at)
            if registration.state != "arriving" or last is None:
                continue
            age = (wall - last).total_seconds()
            if 0 <= age < QUIET_HOUR:
                with self._lock:
                    health = self._health.setdefault(name, _Health())
                    if health.last_event is None:
                        health.last_event = now - age
                        health.last_event_at = registration.last_event_at

    def state(self, provider: str, now: float | None = None) -> str:
        """``off`` (not registered), ``waiting``, ``arriving`` or ``silent``."""
        if self.secret(provider) is None:
            return "off"
        now = time.monotonic() if now is None else now
        with self._lock:
            self._settle_unseen(now)
            health = self._health.get(provider) or _Health()
        if health.last_miss is not None and now - health.last_miss < SILENT_AFTER:
            return "silent"
        if health.last_event is None:
            return "waiting"
        quiet = now - health.last_event
        if (
            quiet > QUIET_HOUR
            and health.last_change is not None
            and health.last_change > (health.last_event)
        ):
            return "silent"
        return "arriving"

    def _settle_unseen(self, now: float) -> None:
        """Changes the probe found that no event announced within GRACE: misses."""
        for key, at in list(self._unseen.items()):
            if now - at < self.grace:
                continue
            del self._unseen[key]
            health = self._health.setdefault(key[0], _Health())
            health.missed += 1
            health.last_miss = now
        horizon = now - REMEMBERED
        for table in (self._received, self._handled):
            for key in [k for k, at in table.items() if at < horizon]:
                del table[key]

    def note(
        self, database: Path, probe_every: Mapping[str, float], *, force: bool = False
    ) -> None:
        """Write each registered provider's health to staging, at most every NOTE_EVERY."""
        now = time.monotonic()
        if not force and now - self._noted < NOTE_EVERY:
            return
        self._noted = now
        rows: list[tuple[str, str, _Health]] = []
        for name in self.pushed:
            state = self.state(name, now)
            if state == "off":
                continue
            with self._lock:
                health = self._health.setdefault(name, _Health())
                taken = _Health(last_event_at=health.last_event_at)
                taken.events.update(health.events)
                taken.missed, taken.refused = health.missed, health.refused
            rows.append((name, state, taken))
        if not rows or not database.exists():
            return
        try:
            with StagingStore.open(database) as store, store.transaction():
                for name, state, taken in rows:
                    store.webhooks.note(
                        name,
                        state=state,
                        last_event_at=taken.last_event_at,
                        events=dict(taken.events),
                        missed=taken.missed,
                        rejected=taken.refused,
                        probe_every=probe_every.get(name, 0.0),
                        now=utc_now_iso(),
                    )
        except MemsyncError as exc:
            log.debug("webhook health not noted: %s", exc)
            return
        with self._lock:  # noted: counted from here on
            for name, _, taken in rows:
                health = self._health[name]
                health.events.subtract(taken.events)
                health.events += collections.Counter()  # drops the zeros
                health.missed -= taken.missed
                health.refused -= taken.refused


def _names_of(provider: str, names: Iterable[str]) -> list[str]:
    """The staging names of PROVIDER: itself, or its scopes' (``name[scope]``)."""
    prefix = f"{provider}["
    return [provider, *(n for n in names if n.startswith(prefix))]


def _scope_of(provider: str, name: str) -> Scope | None:
    split = split_scoped_name(name)
    return split[1] if split is not None and split[0] == provider else None


__all__ = ["SLOW_PROBE", "Announcements"]
