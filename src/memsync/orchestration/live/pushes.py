"""The stores that push their changes, on the daemon's live side: the listener, the events it
queues (``announcements``), and the probes they slow down.

Configured from ``[webhooks] listen`` and the providers whose type pushes changes
(``pushed_changes`` beside its ``build``: the Mem0 Platform). Each live turn, before the probes,
the events become hints (a delete's scope is first marked to be listed in full, in staging);
after them, what the probes found is judged against the events (a change every event already
announced is not listed again; one none announced is a miss), the memories no one could place
are read by id, and each store's probe runs every ``SLOW_PROBE`` seconds while its events
arrive, at ``[sync] probe`` otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths
from memsync.config import Config
from memsync.config.address import parse_listen
from memsync.config.scoping import wildcard_keys
from memsync.orchestration.live.announcements import SLOW_PROBE, Announcements
from memsync.orchestration.live.probing import Probing
from memsync.orchestration.live.webhook_receiver import WebhookReceiver
from memsync.orchestration.live.webhook_setup import read_secret
from memsync.providers import pushed_changes
from memsync.providers.base import Provider
from memsync.providers.pushed import PushedChanges
from memsync.providers.watched import Hint

log = logging.getLogger("memsync.webhooks")


class Pushes:
    """One daemon's pushed changes (module docstring)."""

    def __init__(self, paths: Paths, wake: Callable[[], None]) -> None:
        self.paths = paths
        self.announcements = Announcements(lambda name: read_secret(paths, name))
        self.announcements.wake = wake
        self.receiver: WebhookReceiver | None = None
        self.slow_probe = SLOW_PROBE
        self._listen: str | None = None
        self._said: dict[str, str] = {}

    @property
    def database(self) -> Path:
        return self.paths.database

    def configure(
        self, config: Config, build: Callable[[str, Config], Provider], probing: Probing
    ) -> None:
        """Receive the events of CONFIG's pushing providers, as its [webhooks] says."""
        self._close_pushed()
        pushed: dict[str, PushedChanges] = {}
        for name, entry in config.providers.items():
            make = pushed_changes(name, entry)
            if make is None:
                continue
            try:
                pushed[name] = make(build(name, config))
            except MemsyncError as exc:
                log.warning("not receiving the events of %s: %s", name, exc)
                continue
            self.announcements.keys[name] = wildcard_keys(entry)
        self.announcements.pushed = pushed
        self.announcements.resume(self.database)
        probing.judge = self.announcements.judge
        listen = config.webhooks.listen if pushed else None
        if listen != self._listen:
            self._stop_listening()
            if listen is not None:
                self._start_listening(listen, pushed)
        elif self.receiver is not None:
            self.receiver.routes = pushed

    def _start_listening(self, listen: str, pushed: dict[str, PushedChanges]) -> None:
        host, port = parse_listen(listen)
        announcements = self.announcements
        try:
            self.receiver = WebhookReceiver(
                host,
                port,
                routes=pushed,
                secret=announcements.secret,
                on_event=announcements.arrived,
                on_refused=announcements.refused,
            )
        except MemsyncError as exc:
            log.error("%s; events are not received, the probes find the changes", exc)
            return
        self.receiver.start_in_thread()
        self._listen = listen
        registered = [name for name in pushed if announcements.secret(name) is not None]
        log.info(
            "webhooks: listening on %s for %s%s",
            self.receiver.base_url,
            ", ".join(pushed),
            "" if registered else " (none registered yet: `memsync webhook register NAME`)",
        )

    def _stop_listening(self) -> None:
        if self.receiver is not None:
            self.receiver.stop()
            self.receiver = None
        self._listen = None

    def _close_pushed(self) -> None:
        for pushed in self.announcements.pushed.values():
            try:
                pushed.close()
            except Exception as exc:  # closing an HTTP client: nothing left to lose
                log.debug("closing the events of %s: %s", pushed.provider.name, exc)
        self.announcements.pushed = {}

    def close(self) -> None:
        self._stop_listening()
        self._close_pushed()

    # each live turn ------------------------------------------------------------------------

    def before_probes(self, probing: Probing) -> set[Hint]:
        """The events queued since the last turn, as hints (a delete's scope listed in full;
        a memory staging does not hold has its store probed at once)."""
        if not self.announcements.pushed:
            return set()
        hints, soon, full = self.announcements.take(self.database)
        for provider, scopes in full.items():
            probing.list_in_full(provider, scopes)
        for provider in soon:
            probing.soon(provider)
        return hints

    def after_probes(self, probing: Probing) -> set[Hint]:
        """Memories no probe could place, read by id; then each store's probe period set by
        whether its events arrive, and the health noted for `status`."""
        if not self.announcements.pushed:
            return set()
        hints = self.announcements.unplaced(probing.asked_at)
        for name in self.announcements.pushed:
            state = self.announcements.state(name)
            slow = state == "arriving"
            was = name in probing.slower
            if slow:
                probing.slower[name] = self.slow_probe
            else:
                probing.slower.pop(name, None)
            if slow != was and self._said.get(name) != state:
                self._said[name] = state
                self._say(name, state, probing)
        periods = {name: probing.period_of(name) for name in self.announcements.pushed}
        self.announcements.note(self.database, periods)
        return hints

    def _say(self, name: str, state: str, probing: Probing) -> None:
        if state == "arriving":
            log.info(
                "webhooks of %s: events arrive; probing every %gs", name, probing.period_of(name)
            )
        elif state == "silent":
            log.warning(
                "webhooks of %s: changes arrived without an event; probing every %gs again "
                "(is its public URL reachable? `memsync webhook list %s`)",
                name,
                probing.period_of(name),
                name,
            )


__all__ = ["Pushes"]
