"""memsync's own half-written batch, told apart from another writer's staged changes.

mnem stages every ``add`` and ``rm`` on disk, each in a transaction of its own, and a commit
takes everything staged in one atomic transaction. A memsync killed after its first ``add``
and before its commit ended leaves its batch staged: the store holds none of it, but its
staging does, and memsync never commits staged changes it cannot prove are its own (any
commit sweeps in everything staged). So before it stages a batch memsync notes the node ids
it is about to stage, in a file of its own (its state directory, one file per store, written
whole and fsynced), and removes the note once the batch is committed or unstaged. A batch
staged a part at a time (a first sync staged ahead by a writer process while memsync plans,
``ahead``) is noted a part at a time: one line each, appended and fsynced before that part is
staged.

When memsync opens the store again and every staged change is named in its note, they are
memsync's own: it unstages them, and the next plan writes them again from its outbox, once.
A staged change the note does not name belongs to another writer, and then memsync leaves all
of staging alone, as it does without a note. (The note names nodes, not versions: an agent that
staged one of those very nodes after memsync died, and left it uncommitted, would see that
uncommitted change unstaged with memsync's.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memsync.base.paths import make_private_dir, resolve_paths

log = logging.getLogger("memsync.mnem")


class InFlight:
    """The note of the batch memsync is staging into one store (see the module docstring)."""

    def __init__(self, store_identity: str, directory: Path | None = None) -> None:
        self.store_identity = store_identity
        self._directory = directory
        digest = hashlib.sha256(store_identity.encode("utf-8")).hexdigest()[:24]
        self._name = f"{digest}.json"

    @property
    def path(self) -> Path:
        directory = self._directory or resolve_paths().state_dir / "mnem-batches"
        return directory / self._name

    def note(self, node_ids: Iterable[str]) -> None:
        """Say, durably, that these nodes are about to be staged by memsync."""
        path = self.path
        make_private_dir(path.parent)
        scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(descriptor, self._line(node_ids))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(scratch, path)

    def note_more(self, node_ids: Iterable[str]) -> None:
        """Say, durably, that these nodes too are about to be staged (a batch staged a part at
        a time): one line more in the note, never a rewrite of what it holds."""
        path = self.path
        make_private_dir(path.parent)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(descriptor, self._line(node_ids))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _line(self, node_ids: Iterable[str]) -> bytes:
        body = json.dumps({"store": self.store_identity, "nodes": sorted(set(node_ids))})
        return (body + "\n").encode("utf-8")

    def noted(self) -> set[str] | None:
        """The node ids of a batch memsync staged and never finished, or None.

        One line per part (``note``, then ``note_more``). A line a crash cut short named nodes
        whose staging had not begun: it ends the note."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        found: set[str] | None = None
        for line in text.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                break
            if not isinstance(data, dict) or data.get("store") != self.store_identity:
                return None
            nodes = data.get("nodes")
            if not isinstance(nodes, list):
                return None
            found = (found or set()) | {n for n in nodes if isinstance(n, str)}
        return found

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def store_identity(root: Path, branch: str | None = None) -> str:
    """What names a mnem store in memsync's notes: its resolved directory, and its branch."""
    return f"mnem:{root}" + (f"@{branch}" if branch else "")


def unstage_left_behind(
    store: Any, note: InFlight, *, label: str, unstage: Callable[[list[str]], bool] | None = None
) -> set[str]:
    """Unstage memsync's own batch a kill cut short from the open STORE, when every change
    staged there is named in its NOTE; what is still staged afterwards (another writer's).

    ``unstage`` undoes a list of staged changes (True when all went); by default the SDK's own
    ``unstage``, one node at a time. Whoever opens a store first runs this: a cycle's provider,
    or the daemon leasing it to an agent (so an agent's commit never sweeps the batch in)."""
    if unstage is None:
        unstage = lambda ids: all(store.unstage(node_id) for node_id in ids)  # noqa: E731
    pending = _staged(store)
    noted = note.noted()
    if pending and noted is not None and pending <= noted:
        log.warning(
            "%s: %d change(s) memsync staged were never committed (memsync was stopped in the "
            "middle of a batch); unstaged, they are written again from memsync's outbox",
            label,
            len(pending),
        )
        if unstage(sorted(pending)):
            note.clear()
        pending = _staged(store)
    elif not pending and noted is not None:
        note.clear()  # committed after all (memsync stopped after its commit)
    return pending


def _staged(store: Any) -> set[str]:
    return {node_id for node_id, _ in store.staged()} | set(store.staged_deletions())
