"""Fault points for the crash tests: named places in a cycle where a test can kill memsync.

Disabled unless MEMSYNC_KILL_AT is set (tests only): ``MEMSYNC_KILL_AT=replay:result:17``
sends SIGKILL to this process the 17th time it passes ``replay:result``. Costs one dict
lookup per point when disabled.
"""

from __future__ import annotations

import os
import signal

_TARGET = os.environ.get("MEMSYNC_KILL_AT", "")
_NAME, _, _COUNT = _TARGET.rpartition(":") if _TARGET.count(":") >= 2 else (_TARGET, "", "1")
_SEEN: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Die here, hard, if a test asked for it."""
    if not _TARGET or name != _NAME:
        return
    _SEEN[name] = _SEEN.get(name, 0) + 1
    if _SEEN[name] == int(_COUNT or 1):
        os.kill(os.getpid(), signal.SIGKILL)
