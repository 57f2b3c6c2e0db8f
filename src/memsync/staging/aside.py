"""Setting a staging database aside, so that `memsync repair` can rebuild it from the providers.

The old file is kept, never deleted: it may still hold the journal a user wants back.
"""

from __future__ import annotations

from pathlib import Path

from memsync.base.records import utc_now_iso

_SIDE_FILES = ("", "-wal", "-shm")  # SQLite's database file and its WAL companions


def set_aside(database: Path) -> Path | None:
    """Rename the database (and its WAL files) to ``NAME.corrupt-TIME``; None if there was none."""
    if not database.exists():
        return None
    stamp = utc_now_iso().replace(":", "").replace(".", "")
    aside = database.with_name(f"{database.name}.corrupt-{stamp}")
    for suffix in _SIDE_FILES:
        source = Path(f"{database}{suffix}")
        if source.exists():
            source.rename(Path(f"{aside}{suffix}"))
    return aside
