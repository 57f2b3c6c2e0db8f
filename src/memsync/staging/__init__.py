"""The local SQLite staging store: mirror, links, journal, outbox."""

from memsync.staging.store import StagingStore

__all__ = ["StagingStore"]
