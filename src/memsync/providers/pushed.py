"""A remote store that pushes its changes: the events it POSTs to a URL, and how to subscribe.

The Mem0 Platform sends an HTTP POST for each memory added, updated or deleted in a project,
to each webhook registered there (``docs/platform/features/webhooks.mdx``). A type that can do
this offers ``pushed_changes(name, entry)`` beside its ``build`` (found by the registry): given
the built provider, an object that reads one event's body and registers, lists and removes the
subscription through the store's own API. An event only hints, as a probe does: it makes a
scope listed sooner; what is in the scope is still what its listing says.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from memsync.providers.base import Provider

EventKind = Literal["add", "update", "delete"]


class NotAnEvent(ValueError):
    """A body that is not an event of the documented shape (or one memsync does not use)."""


@dataclass(frozen=True)
class PushedEvent:
    """One change a store announced: what happened, to which memory, and its text then."""

    kind: EventKind
    memory_id: str
    text: str | None


@dataclass(frozen=True)
class Subscription:
    """A URL registered with a store for its events."""

    id: str
    url: str
    events: tuple[str, ...]
    active: bool
    project: str | None = None


class PushedChanges(ABC):
    """The events of one configured provider, and its subscription (module docstring)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    @abstractmethod
    def parse(self, body: bytes) -> PushedEvent:
        """The event a POST carried; raises NotAnEvent for anything else."""

    @abstractmethod
    def where(self) -> str:
        """What the subscriptions belong to, to say (a Platform project)."""

    @abstractmethod
    def subscriptions(self) -> list[Subscription]:
        """Every URL registered for events where this provider's memories are."""

    @abstractmethod
    def subscribe(self, url: str, name: str) -> Subscription:
        """Register URL for the events memsync uses (added, updated, deleted)."""

    @abstractmethod
    def move(self, subscription_id: str, url: str) -> None:
        """Point a subscription at a new URL (a new token)."""

    @abstractmethod
    def unsubscribe(self, subscription_id: str) -> bool:
        """Remove a subscription; False when it was gone already."""

    @abstractmethod
    def locate(self, memory_id: str, keys: tuple[str, ...]) -> str | None:
        """The scope (label over KEYS) of a memory the event named and staging does not hold;
        None when the store no longer has it or it lies outside the configured scope."""

    def close(self) -> None:
        self.provider.close()


# A configured provider's pushed changes, given the provider built for it.
PushMaker = Callable[[Provider], PushedChanges]


__all__ = [
    "EventKind",
    "NotAnEvent",
    "PushMaker",
    "PushedChanges",
    "PushedEvent",
    "Subscription",
]
