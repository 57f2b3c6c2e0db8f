"""Registering for a store's pushed changes: `memsync webhook register`, `list` and `remove`.

``register`` makes the provider's secret (256 random bits, a private file in the state
directory), registers ``[webhooks] public_url + /hooks/<provider>/<secret>`` through the store's
own API (the Platform's ``POST /api/v1/webhooks/projects/{project}/``, as ``MemoryClient``
calls it) for the memory added, updated and deleted events, and keeps the registration (the
URL masked) in staging. It is idempotent: a registration already pointing there is kept, one
pointing elsewhere (an older secret, another public URL) is moved. ``remove`` deletes the
registration and forgets the secret; ``list`` shows what the store holds, memsync's own marked,
beside what the daemon saw arrive.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memsync.base.errors import ConfigError
from memsync.base.paths import Paths, make_private_dir
from memsync.base.records import utc_now_iso
from memsync.config import Config
from memsync.providers import build_provider, pushed_changes
from memsync.providers.base import Provider
from memsync.providers.pushed import PushedChanges, Subscription
from memsync.staging import StagingStore
from memsync.staging.webhooks import Registration

SECRET_FILE = "webhook-secret-{provider}"
ROUTE = "/hooks/{provider}/{secret}"
MASK = "****"


def secret_path(paths: Paths, provider: str) -> Path:
    return paths.state_dir / SECRET_FILE.format(provider=provider)


def read_secret(paths: Paths, provider: str) -> str | None:
    """PROVIDER's webhook secret; None when it has none (not registered)."""
    try:
        secret = secret_path(paths, provider).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return secret if len(secret) >= 32 else None


def new_secret(paths: Paths, provider: str) -> str:
    """A fresh secret for PROVIDER, in place of any it had (0600, written whole or not at all)."""
    path = secret_path(paths, provider)
    make_private_dir(path.parent)
    secret = secrets.token_urlsafe(32)
    scratch = path.with_name(path.name + ".new")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secret + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    scratch.replace(path)
    return secret


def masked(url: str) -> str:
    """A webhook URL as shown anywhere: its secret (the last segment) masked."""
    head, sep, _ = url.rstrip("/").rpartition("/")
    return f"{head}{sep}{MASK}" if sep else url


@dataclass(frozen=True)
class Registered:
    """What ``register`` did: the subscription, where, to which URL (masked), and how."""

    subscription: Subscription
    place: str
    url: str
    how: str  # "registered", "kept" or "moved"


@dataclass(frozen=True)
class Listed:
    """A provider's subscriptions as its store lists them, and what staging keeps of its own."""

    provider: str
    place: str
    subscriptions: list[Subscription]
    ours: Registration | None


class WebhookSetup:
    """The webhook commands of one memsync instance (its paths and config)."""

    def __init__(
        self,
        paths: Paths,
        config: Config,
        build: Callable[[str, Config], Provider] = build_provider,
    ) -> None:
        self.paths = paths
        self.config = config
        self.build = build

    def _pushed(self, name: str) -> PushedChanges:
        entry = self.config.provider(name)
        maker = pushed_changes(name, entry)
        if maker is None:
            raise ConfigError(
                f"providers.{name} ({entry.type}) pushes no changes memsync can receive; "
                "only mem0-platform does (its webhooks)"
            )
        return maker(self.build(name, self.config))

    def _public_url(self, given: str | None) -> str:
        settings = self.config.webhooks
        url = (given or settings.public_url or "").rstrip("/")
        if not url:
            raise ConfigError(
                "set [webhooks] public_url (the HTTPS address your proxy or tunnel forwards to "
                "[webhooks] listen), or pass --public-url"
            )
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"public URL {url!r}: expected an https:// URL")
        if url.startswith("http://") and not settings.allow_insecure_http:
            raise ConfigError(
                f"public URL {url!r} is plain HTTP: the events would carry memsync's secret in "
                "the clear; use https:// (or [webhooks] allow_insecure_http = true for a test)"
            )
        if settings.listen is None:
            raise ConfigError(
                'set [webhooks] listen (e.g. "127.0.0.1:8768"): the daemon receives the '
                "events there, behind your proxy or tunnel"
            )
        return url

    def register(
        self,
        name: str,
        *,
        public_url: str | None = None,
        label: str | None = None,
        rotate: bool = False,
    ) -> Registered:
        """Register NAME's events to this instance's public URL (module docstring)."""
        public = self._public_url(public_url)
        pushed = self._pushed(name)
        try:
            secret = None if rotate else read_secret(self.paths, name)
            secret = secret or new_secret(self.paths, name)
            url = public + ROUTE.format(provider=name, secret=secret)
            ours = self._registration(name)
            existing = {s.id: s for s in pushed.subscriptions()}
            same = [s for s in existing.values() if s.url == url]
            if same:
                subscription, how = same[0], "kept"
            elif ours is not None and ours.subscription_id in existing:
                pushed.move(ours.subscription_id, url)
                subscription, how = existing[ours.subscription_id], "moved"
            else:
                subscription = pushed.subscribe(url, label or f"memsync@{socket.gethostname()}")
                how = "registered"
            place = pushed.where()
        finally:
            pushed.close()
        with StagingStore.open(self.paths.database) as store, store.transaction():
            store.webhooks.register(name, subscription.id, place, masked(url), utc_now_iso())
        return Registered(subscription, place, masked(url), how)

    def remove(self, name: str) -> tuple[str | None, bool]:
        """Unregister NAME's events and forget its secret: the subscription id (None: none
        known) and whether the store still had it."""
        ours = self._registration(name)
        secret = read_secret(self.paths, name)
        pushed = self._pushed(name)
        removed: str | None = None
        had = False
        try:
            known = pushed.subscriptions()
            mine = [s for s in known if secret and s.url.endswith(f"/{secret}")]
            if ours is not None:
                mine += [s for s in known if s.id == ours.subscription_id and s not in mine]
            for subscription in mine:
                had = pushed.unsubscribe(subscription.id) or had
                removed = subscription.id
            if removed is None and ours is not None:
                removed = ours.subscription_id
        finally:
            pushed.close()
        with StagingStore.open(self.paths.database) as store, store.transaction():
            store.webhooks.forget(name)
        secret_path(self.paths, name).unlink(missing_ok=True)
        return removed, had

    def listed(self, name: str) -> Listed:
        pushed = self._pushed(name)
        try:
            subscriptions = pushed.subscriptions()
            place = pushed.where()
        finally:
            pushed.close()
        return Listed(name, place, subscriptions, self._registration(name))

    def webhook_providers(self) -> list[str]:
        """The configured providers whose stores push changes."""
        return [
            name
            for name, entry in self.config.providers.items()
            if pushed_changes(name, entry) is not None
        ]

    def _registration(self, name: str) -> Registration | None:
        if not self.paths.database.exists():
            return None
        with StagingStore.open(self.paths.database) as store:
            return store.webhooks.of(name)


__all__ = [
    "Listed",
    "Registered",
    "WebhookSetup",
    "masked",
    "new_secret",
    "read_secret",
    "secret_path",
]
