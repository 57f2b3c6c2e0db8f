"""An agent's write the daemon was making when it died is never left half-staged.

mnem stages on disk: a process killed between an ``add`` and its ``commit`` leaves the node
staged, and the next commit by anyone would sweep it in (memsync itself refuses to write over
another writer's staged changes). The agent whose write it was was told it failed (its
connection broke before the answer), so the staged part must go. Before it stages an agent's
write the daemon notes the nodes it is about to stage (``begin``), and drops the note once mnem
committed (``end``); whoever opens the store next (the restarted daemon, or the client taking
the store back) unstages what a note left behind names (``recover``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from memsync.base.paths import Paths, make_private_dir

log = logging.getLogger("memsync.serve")


class Intents:
    """The notes of agents' writes in flight, one file per store, in memsync's state dir."""

    def __init__(self, paths: Paths) -> None:
        self.directory = paths.state_dir / "serving"

    def _file(self, root: Path) -> Path:
        digest = hashlib.sha256(os.fsencode(str(root))).hexdigest()[:24]
        return self.directory / f"{digest}.json"

    def begin(self, root: Path, nodes: list[str]) -> None:
        """Note that NODES are about to be staged in the store at ROOT."""
        make_private_dir(self.directory)
        target = self._file(root)
        scratch = target.with_suffix(".tmp")
        scratch.write_text(json.dumps({"root": str(root), "nodes": nodes, "pid": os.getpid()}))
        os.replace(scratch, target)

    def end(self, root: Path) -> None:
        """The write was committed (or unstaged after a failure): nothing to recover."""
        self._file(root).unlink(missing_ok=True)

    def recover(self, store: Any, root: Path) -> list[str]:
        """Unstage what a write cut short left staged in STORE (open, at ROOT); their ids."""
        note = self._file(root)
        try:
            nodes = [str(n) for n in json.loads(note.read_text()).get("nodes", [])]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("unreadable note of an interrupted write %s (%s); removed", note, exc)
            note.unlink(missing_ok=True)
            return []
        staged = {node_id for node_id, _ in store.staged()} | set(store.staged_deletions())
        dropped = [node_id for node_id in nodes if node_id in staged and store.unstage(node_id)]
        note.unlink(missing_ok=True)
        if dropped:
            log.warning(
                "%s: unstaged %s, left staged by an agent's write that was cut short (the agent "
                "was told it failed)",
                root,
                ", ".join(dropped),
            )
        return dropped
