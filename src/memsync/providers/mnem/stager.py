"""The writer process of a store staged ahead (``ahead``): it creates the store and stages nodes.

Run as a script (``python -P stager.py STORE_PATH PARENT_PID``), not as part of the package,
so that it starts with nothing but ``mnem`` imported. It reads pickled messages on stdin:
``("stage", [(id, content, content_kind, provenance, event_time), ...])`` stages each node
with ``Store.add`` (the first one creates the store, with ``init``: never a store someone
else made); ``("end",)`` answers ``staged N`` on stdout, lets the store go and exits 0, and so
does SIGTERM, after the node in flight (memsync stops it when it will not commit its work).
It never commits: what it staged is invisible to every reader until memsync, which noted each
node before sending it (``in_flight``), commits what its plan asks for.

Why a process: mnem's ``add`` holds the GIL while redb writes and syncs, so nothing else in
memsync's process can run during it. Here the adds' waits on the disk overlap memsync's own
work (staging the listing, planning, recording) on the other core.

If memsync dies, so does this process (``PR_SET_PDEATHSIG`` on Linux, tied to the thread that
started it: the cycle's; elsewhere at the end of the message it is staging, when stdin
closes), leaving staged what it staged: the note names those nodes, and the next open of the
store unstages them.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import os
import pickle
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

_PR_SET_PDEATHSIG = 1


class _Stopped(Exception):
    """memsync asked the writer to stop (SIGTERM): it does, after the node in flight."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


def _die_with_parent(parent: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(3)


def main() -> int:
    path, parent = sys.argv[1], int(sys.argv[2])
    _die_with_parent(parent)
    signal.signal(signal.SIGTERM, _stop)
    import mnem

    writer = _Writer(mnem, path)
    with contextlib.suppress(_Stopped):
        writer.stage_all(sys.stdin.buffer)
    writer.store = None
    gc.collect()  # mnem lets the store go only once the handle is collected
    sys.stdout.write(f"staged {writer.staged}\n")
    sys.stdout.flush()
    return 0


def _making() -> Any:
    """``making`` (a kill inside ``init`` leaves no half-made store), loaded from beside this
    file: importing it through the package would load memsync into the writer."""
    spec = importlib.util.spec_from_file_location(
        "_memsync_making", Path(__file__).with_name("making.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Writer:
    """Stages every node memsync sends into a store of its own making."""

    def __init__(self, mnem: Any, path: str) -> None:
        self.mnem = mnem
        self.path = path
        self.store: Any = None  # made with the first node: nothing to stage, no store
        self.staged = 0
        self.kill: Callable[[str], None] | None = None
        if os.environ.get("MEMSYNC_KILL_AT", "").startswith("stager:"):  # crash tests' kill
            from memsync.base.faults import fault_point

            self.kill = fault_point

    def stage_all(self, stdin: Any) -> None:
        """Until memsync says "end" (EOFError: it went away without saying so)."""
        provenance_of = self.mnem.Provenance
        while True:
            message = pickle.load(stdin)
            if message[0] == "end":
                return
            if self.store is None:  # only ever a store of its own making: init, never open
                self.store = _making().init_store(self.mnem, Path(self.path))
            for node_id, content, kind, provenance, event_time in message[1]:
                self.store.add(
                    node_id,
                    content,
                    content_kind=kind,
                    provenance=provenance_of(**provenance),
                    event_time=event_time,
                )
                self.staged += 1
                if self.kill is not None:
                    self.kill("stager:add")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # the parent reads the reason on stdout
        sys.stdout.write(f"error {type(exc).__name__}: {exc}\n".replace("\n", " ") + "\n")
        sys.stdout.flush()
        sys.exit(1)
