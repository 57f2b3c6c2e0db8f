"""A first sync's creates, offered ahead: each page the mirror stages is told to the stores that
will receive it, while the cycle goes on to mirror and plan.

In a first sync into a store this cycle creates, every memory another provider lists is
planned as a create there. A provider that stages ahead (``Provider.stages_ahead``: mnem, whose
every write waits on the disk with Python's GIL held, so only another process can overlap it)
is told each page's new memories as the mirror stages them (``expect_creates``), and, once the
plan is recorded, which creates the plan asks of it (``planned_creates``). What it stages
meanwhile is invisible: replay still decides every write (``prepared``), and staging records
each outcome only after the write it records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memsync.base.errors import MemsyncError
from memsync.base.records import Outgoing, Record
from memsync.engine.plan import Topology
from memsync.providers.base import Provider
from memsync.staging.store import StagingStore

Added = Callable[[list[tuple[str, Record]]], None]  # (link id, record) of a page's new records


class WritesAhead:
    """The cycle's receivers that stage their first sync's creates ahead (often none)."""

    def __init__(self, targets: Mapping[str, Provider], topology: Topology) -> None:
        self.targets = dict(targets)
        self.topology = topology

    @classmethod
    def for_cycle(
        cls,
        store: StagingStore,
        providers: Mapping[str, Provider],
        topology: Topology,
        selected: set[str],
        use: Callable[[Provider], Provider],
    ) -> WritesAhead:
        """The receivers staging holds nothing of (a first sync) that stage ahead, opened now
        (``use``), before the other providers are listed."""
        targets: dict[str, Provider] = {}
        for name, provider in providers.items():
            if name not in selected or not topology.is_receiver(name):
                continue
            if not provider.stages_ahead() or store.count_records(name):
                continue
            try:
                use(provider)
            except MemsyncError:
                continue  # its own mirror meets the same error and reports it
            if _begins_with_history(name, provider, providers, topology):
                continue  # the history import writes its HEAD (engine.history): nothing to stage
            if provider.stages_ahead():
                targets[name] = provider
        return cls(targets, topology)

    def on_added(self, source: str) -> Added | None:
        """What the mirror of SOURCE calls with each page's new records (None: nobody)."""
        receivers = [p for name, p in self.targets.items() if name != source]
        if not receivers or not self.topology.is_source(source):
            return None

        def offer(added: list[tuple[str, Record]]) -> None:
            items = [Outgoing.from_record(record, link_id) for link_id, record in added]
            for provider in receivers:
                provider.expect_creates(items)

        return offer

    def planned(self, store: StagingStore, run_id: int) -> None:
        """Tell each receiver which creates the recorded plan asks of it."""
        for name, provider in self.targets.items():
            provider.planned_creates(store.outbox.pending_creates(run_id, name))


def _begins_with_history(
    name: str, provider: Provider, providers: Mapping[str, Provider], topology: Topology
) -> bool:
    """Whether NAME may begin with a source's past this cycle (``bring_history``): its history
    import writes every memory, and a store a writer process holds could not take it."""
    return provider.takes_history() and any(
        other != name and source.capabilities.history and topology.is_source(other)
        for other, source in providers.items()
    )
