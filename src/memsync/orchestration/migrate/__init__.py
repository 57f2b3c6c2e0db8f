"""One-shot migration with an honest report: ADR-0024's ``import_mem0``, and provider to provider.

``import_mem0(store, mem0_memory, filters=...)`` copies the current state of one Mem0 scope
into a mnem store, with ADR-0024's semantics exactly:

- paging is a real loop: ``Memory.get_all`` is asked with a growing ``top_k`` until a call
  comes back short (``mem0.paging``); a ``MemoryClient`` is paged with ``page``/``page_size``
  until ``next`` is empty and the total matches ``count``. Nothing is dropped past a cap; a
  listing that cannot be proven whole says so in the report (``complete=False``);
- a memory with empty content is skipped, logged by its Mem0 id and reported, and the import
  goes on; nothing empty is ever written;
- an expired memory (Mem0 hides it) is imported with its ``expiration_date``: mnem, which has
  no expiry, gets it in a commit and then forgets it in a tombstone commit, so its history
  keeps it (see ``providers/mnem/``); a Mem0 target gets the date natively;
- node ids are ``mem0:{memory_id}``; provenance maps as every adapter's does (actor_id, else
  role, as source; created_at kept; the rest kept, see ``providers/mnem/``);
- errors are memsync's typed errors; a per-record skip is a result, not an error;
- it is idempotent: a memory already imported with the same content is counted as already
  present, never written twice; one imported before and changed in Mem0 since is reported
  as skipped (``memsync sync`` carries changes, a one-shot import does not overwrite);
- a memory the target already holds under another id (the same text in the same scope, as
  ``memsync.base.sameness`` defines it, one copy for one copy) is already present too: a second
  run against a store that another tool filled imports nothing;
- writes go in batched commits (one commit per batch). A target whose every commit costs in
  proportion to the whole store (mnem) gets batches as large as what it already holds, up to
  ``STORE_SIZED_BATCH``: a copy of N memories then commits about twice N nodes' worth in all,
  where batches of a fixed size would commit N²/size (quadratic); others get ``DEFAULT_BATCH``.

Mem0's per-memory edit history is not ported, only the current state: Mem0 keeps history per
memory id, with no store-wide event log to replay.

``migrate(source, target)`` is the same pass between any two configured providers (the CLI's
``memsync migrate --from NAME --to NAME [--dry-run]``).

``one_shot`` holds the pass and its report, ``mem0_source`` the Mem0 object as a source.
"""

from memsync.orchestration.migrate.one_shot import (
    DEFAULT_BATCH,
    STORE_SIZED_BATCH,
    MigrationReport,
    import_mem0,
    migrate,
)
from memsync.providers.mem0.object_source import Mem0Source

__all__ = [
    "DEFAULT_BATCH",
    "STORE_SIZED_BATCH",
    "Mem0Source",
    "MigrationReport",
    "import_mem0",
    "migrate",
]
