"""A store memsync creates in this cycle, staged ahead by a writer process while memsync plans.

A first sync into a new store writes every memory the source lists. mnem's ``add`` holds the
GIL while redb writes and syncs each node, so in one process memsync's own work (staging the
listing, planning, recording) can only follow those waits, never fill them. Here each page the
mirror stages is handed on to a writer process (``stager``), which creates the store and
stages the nodes while memsync goes on planning on the other core.

Staged is not written: a mnem reader sees nothing until a commit. memsync notes every node
(``in_flight``) before the writer stages it. Replay prepares the planned creates against
what was staged (``OnDemandMnemProvider.prepare_writes``) and builds the records of their
outcomes while the writer is still at work; then memsync takes the store over, unstages what
the plan did not ask for, and commits the rest in one commit (``commit_prepared``); staging
records the outcomes after it (``engine/prepared.py``). A memsync killed before that commit
leaves staged nodes its note names, which the next open unstages.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from memsync.base.errors import ProviderError
from memsync.providers.mnem import stager
from memsync.providers.mnem.convert import NodeSpec
from memsync.providers.mnem.in_flight import InFlight
from memsync.providers.mnem.known import Ahead

_END = object()


class StageAhead:
    """The writer process of one store, and what it was given to stage (see module docstring).

    ``offer`` never waits for the writer: a feeder thread notes each page and hands it over
    (a pipe's write releases the GIL), so the writer's pace is the disk's, not memsync's.
    """

    def __init__(self, path: Path, in_flight: InFlight) -> None:
        self.path = path
        self.in_flight = in_flight
        self.offered: Ahead = {}  # node id -> (identity, origin)
        self._process = subprocess.Popen(
            [sys.executable, "-P", stager.__file__, str(path), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._noted = False
        self._feeder = threading.Thread(target=self._feed, name="memsync-stage-ahead", daemon=True)
        self._feeder.start()

    def offer(self, specs: list[NodeSpec]) -> None:
        """Stage these nodes ahead (a node offered before keeps what it was first given)."""
        fresh = [spec for spec in specs if spec.id not in self.offered]
        if not fresh:
            return
        for spec in fresh:
            self.offered[spec.id] = (spec.identity(), spec.origin)
        self._queue.put(
            [(s.id, s.content, s.content_kind, s.provenance, s.event_time) for s in fresh]
        )

    def finish(self) -> Ahead:
        """Wait until the writer staged everything offered and let the store go; what it staged.
        Raises ProviderError when it could not (the note still names what it may have staged)."""
        self._queue.put(_END)
        self._feeder.join()
        assert self._process.stdout is not None
        lines = self._process.stdout.read().decode("utf-8", "replace").splitlines()
        code = self._process.wait()
        said = lines[-1] if lines else ""
        if self._failure is None and code == 0 and said.startswith("staged "):
            return self.offered
        if code < 0:
            why = f"the writer process was killed ({signal.Signals(-code).name})"
        else:
            why = said or (str(self._failure) if self._failure else f"exit {code}")
        raise ProviderError(f"cannot stage ahead into {self.path}: {why}")

    def stop(self) -> None:
        """Stop the writer after the node in flight and wait until it let the store go (what
        it staged stays staged, and noted: the next open of the store unstages it)."""
        if self._process.poll() is None:
            self._process.terminate()
        self._process.wait()
        self._queue.put(_END)
        self._feeder.join()

    def _feed(self) -> None:
        """Note each page, then hand it over; several waiting pages go as one."""
        stdin = self._process.stdin
        assert stdin is not None
        ending = False
        try:
            while not ending:
                pages = [self._queue.get()]
                while not self._queue.empty():
                    pages.append(self._queue.get())
                ending = pages[-1] is _END
                nodes = [node for page in pages if isinstance(page, list) for node in page]
                if nodes:
                    ids = [node[0] for node in nodes]
                    if self._noted:
                        self.in_flight.note_more(ids)
                    else:
                        self.in_flight.note(ids)
                        self._noted = True
                    pickle.dump(("stage", nodes), stdin, protocol=pickle.HIGHEST_PROTOCOL)
                    stdin.flush()
            pickle.dump(("end",), stdin)
            stdin.close()
        except (OSError, ValueError) as exc:  # the writer is gone: finish() says why
            self._failure = exc
            while not ending:
                ending = self._queue.get() is _END
