"""Whether a process that left a mark (a lock, a temp file, a store it was making) still runs."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def is_alive(pid: int) -> bool:
    """Whether process PID runs: another user's counts; a zombie (killed, not yet reaped by its
    parent) does not, since it will never finish what it left."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True
