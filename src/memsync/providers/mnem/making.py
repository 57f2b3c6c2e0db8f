"""Making a mnem store so that a kill inside ``mnem.init`` leaves nothing half-made behind.

mnem's ``init`` writes ``.mnem/`` (config, HEAD, the redb file) in several steps. A process
killed inside it leaves a store that no one can open: in 150 kills timed inside ``init`` here,
71 left "StoreIoError: invalid data" or a missing file, and every later sync, and every agent,
stopped on it until someone removed the directory by hand.

So memsync marks a store it is making: ``.memsync-making`` beside ``.mnem``, holding its pid,
written before ``init`` and removed once ``init`` returned. A mark whose process is gone, on a
store that cannot be opened, names a making that never finished: nothing was ever staged or
committed in that store, so it is removed and made again. A mark on a store that opens is only
cleared (the kill came after ``init``; the store is whole, and someone may have written it).

Nothing here but the standard library and ``memsync.base``: the first sync's writer process
(``stager``) loads it with nothing but ``mnem`` imported.
"""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path
from typing import Any

from memsync.base.mnem_lock import held_elsewhere
from memsync.base.processes import is_alive

MARK = ".memsync-making"


def init_store(sdk: Any, path: Path) -> Any:
    """``sdk.init(PATH)`` under a mark (see the module docstring): the new Store."""
    path.mkdir(parents=True, exist_ok=True)
    if (path / ".mnem").exists():  # someone's store (or a half-made one): init says which
        return sdk.init(str(path))
    mark = path / MARK
    mark.write_text(str(os.getpid()))
    try:
        return sdk.init(str(path))
    finally:  # made, or refused (never a mark on someone else's store); a kill leaves it
        mark.unlink(missing_ok=True)


def clear_unfinished(sdk: Any, path: Path) -> bool:
    """Remove the store at PATH if its making never finished (a mark whose process is gone,
    on a store mnem cannot open); whether it did. A stale mark on a whole store is cleared."""
    mark = path / MARK
    try:
        maker = int(mark.read_text().strip() or 0)
    except (OSError, ValueError):
        return False
    if maker and maker != os.getpid() and is_alive(maker):
        return False  # being made right now
    if _opens(sdk, path):
        mark.unlink(missing_ok=True)
        return False
    shutil.rmtree(path / ".mnem", ignore_errors=True)
    mark.unlink(missing_ok=True)
    return True


def _opens(sdk: Any, path: Path) -> bool:
    """Whether mnem opens the store at PATH (busy counts as whole: someone has it open)."""
    try:
        store = sdk.open(str(path))
    except sdk.MnemError as exc:
        return held_elsewhere(exc, sdk.StoreIoError)
    del store
    gc.collect()
    return True
