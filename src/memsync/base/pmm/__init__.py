"""PMM v1 (portable memory manifest) codec: JSON and JSONL, streamed in both directions.

Neither reading nor writing holds more than one record in memory, so a million-record backup
costs the same memory as a thousand. ``schema`` holds the header and a record, ``reader`` and
``writer`` the two directions, ``seen_ids`` the duplicate check a million ids can afford.
"""

from memsync.base.pmm.reader import PMMReader, Rejected, open_pmm
from memsync.base.pmm.schema import (
    DEFAULT_MAX_CONTENT_BYTES,
    MEMSYNC_KEY,
    PMM_VERSION,
    Format,
    Header,
    record_from_pmm,
    record_to_pmm,
)
from memsync.base.pmm.seen_ids import SeenIds
from memsync.base.pmm.writer import write_pmm_file, write_pmm_stream

__all__ = [
    "DEFAULT_MAX_CONTENT_BYTES",
    "MEMSYNC_KEY",
    "PMM_VERSION",
    "Format",
    "Header",
    "PMMReader",
    "Rejected",
    "SeenIds",
    "open_pmm",
    "record_from_pmm",
    "record_to_pmm",
    "write_pmm_file",
    "write_pmm_stream",
]
