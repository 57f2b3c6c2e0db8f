"""One ``write_many`` call as one mnem commit: every op planned, then staged and committed together.

Each op is planned against the batch's own view of the store (what earlier ops of the same call
already staged), so a create, an update and a delete of one node in one call agree. The
commit has author ``memsync`` and a message that says what moved; none is made when nothing
changed. Deletes are ``rm`` (a tombstone; history keeps the node). A create never overwrites
a node memsync did not write for the same origin: an id collision with other content is
reported as ``NodeIdCollision``; ``update`` is the overwrite path. A failed batch is unstaged,
and a memory written already expired, or one Dream retired, is forgotten right after (see
``expiry``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from memsync.errors import NotFound, ProviderError
from memsync.providers.base import WriteOp, WriteResult, require_content
from memsync.providers.mnem.convert import (
    NodeSpec,
    content_text,
    family_of,
    memsync_note,
    node_spec,
    node_version,
    origin_for,
    record_from_node,
)
from memsync.providers.mnem.expiry import forget_expired, forget_retired, forgotten_as_expired
from memsync.providers.mnem.handle import AUTHOR, StoreHandle, detached
from memsync.records import Outgoing, Record, content_hash, is_expired

log = logging.getLogger("memsync.mnem")


class NodeIdCollision(ProviderError):
    """A create named a node that holds other content memsync did not write: never overwritten."""


@dataclass
class Step:
    """What one op does to the store: add (or replace) a node, rm it, nothing, or fail."""

    op: WriteOp
    action: Literal["add", "rm", "none", "error"]
    node_id: str = ""
    spec: NodeSpec | None = None
    counted: Literal["added", "updated", "forgotten", ""] = ""
    record: Record | None = None
    error: Exception | None = None
    family: str = ""
    refused: ProviderError | None = None  # changed by an agent since the listing (meanwhile)


@dataclass
class BatchWrite:
    """The ops of one ``write_many`` call on an open store, planned and then applied."""

    handle: StoreHandle
    steps: list[Step] = field(default_factory=list)
    view: dict[str, Any] = field(default_factory=dict)  # node id -> node or NodeSpec or None

    def run(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Plan every op, report those that failed planning, then stage and commit the rest."""
        for op in ops:
            self.steps.append(self._plan(op))
        yield from (WriteResult(s.op, error=s.error) for s in self.steps if s.error)
        yield from self._apply()

    def _plan(self, op: WriteOp) -> Step:
        error: ProviderError
        try:
            if op.kind == "delete":
                return self._plan_delete(op)
            assert op.item is not None
            require_content(self.handle.name, op.item)
            if op.kind == "create":
                return self._plan_create(op, op.item)
            return self._plan_update(op, op.item)
        except ProviderError as exc:
            error = detached(exc)
        return Step(op, "error", error=error)

    def _current(self, node_id: str) -> Any:
        if node_id not in self.view:
            self.view[node_id] = self.handle.sdk_call(
                f"read node {node_id!r}", lambda: self.handle.store.working_node(node_id)
            )
        return self.view[node_id]

    def _plan_create(self, op: WriteOp, item: Outgoing) -> Step:
        spec = node_spec(item)
        current = self._current(spec.id)
        family = family_of(item.origin)
        if current is None:
            return self._stage_add(op, spec, "added", family)
        if identity_of(current) == spec.identity():
            return Step(op, "none", spec.id, spec=spec, record=self._record(spec))
        if written_for(current, item.origin):
            return self._stage_add(op, spec, "updated", family)
        existing = current.as_node(self.handle.sdk) if isinstance(current, NodeSpec) else current
        text, _ = content_text(existing.content)
        if content_hash(text) == item.content_hash:  # the same memory already there: adopt it
            record = record_from_node(existing, self.handle.scope_key())
            return Step(op, "none", spec.id, record=record if isinstance(record, Record) else None)
        raise NodeIdCollision(
            f"{self.handle.name}: node {spec.id!r} already exists in {self.handle.path} with "
            "other content that memsync did not write; it is never overwritten: forget or "
            "rename that node in mnem, then sync again"
        )

    def _plan_update(self, op: WriteOp, item: Outgoing) -> Step:
        node_id = op.provider_id or ""
        current = self._current(node_id)
        spec = node_spec(item, node_id=node_id)
        if current is None and forgotten_as_expired(self.handle, node_id):
            # memsync tombstoned it when its date passed: the update (date cleared or moved)
            # brings it back, with history holding both.
            return self._stage_add(op, spec, "updated", family_of(item.origin))
        if current is None:
            raise NotFound(f"{self.handle.name}: no node {node_id!r} in {self.handle.path}")
        if identity_of(current) == spec.identity():
            return Step(op, "none", node_id, spec=spec, record=self._record(spec))
        return self._stage_add(op, spec, "updated", family_of(item.origin))

    def _plan_delete(self, op: WriteOp) -> Step:
        node_id = op.provider_id or ""
        current = self._current(node_id)
        if current is None:
            return Step(op, "none", node_id)
        self.view[node_id] = None
        origin = (
            current.origin
            if isinstance(current, NodeSpec)
            else origin_for(node_id, (memsync_note(current) or {}).get("origin"))
        )
        return Step(op, "rm", node_id, counted="forgotten", family=family_of(origin))

    def _stage_add(
        self,
        op: WriteOp,
        spec: NodeSpec,
        counted: Literal["added", "updated"],
        family: str,
    ) -> Step:
        self.view[spec.id] = spec
        record = self._record(spec)
        return Step(op, "add", spec.id, spec=spec, counted=counted, family=family, record=record)

    def _record(self, spec: NodeSpec) -> Record:
        record = record_from_node(spec.as_node(self.handle.sdk), self.handle.scope_key())
        assert isinstance(record, Record)  # require_content ran before any spec was made
        return record

    def _apply(self) -> Iterator[WriteResult]:
        writes = [s for s in self.steps if s.action in ("add", "rm")]
        failure: ProviderError | None = None
        self.committed: list[Step] = []
        self.staged: list[Step] = []
        with self.handle.writing():
            try:
                self._stage_and_commit(writes)
            except ProviderError as exc:
                failure = detached(exc)
            if failure is not None:
                self.handle.unstage([step.node_id for step in self.staged])
            else:
                expired = [
                    s.node_id
                    for s in self.committed
                    if s.spec is not None and is_expired(s.spec.expiration_date)
                ]
                try:
                    forget_expired(self.handle, expired)  # written (history has it), then gone
                    forget_retired(self.handle, self._retired(set(expired)))
                except ProviderError as exc:
                    log.warning("%s; the sweep of the next day forgets them", exc)
        done = {id(step) for step in self.committed}
        for step in self.steps:
            if step.refused is not None:
                yield WriteResult(step.op, error=step.refused)
            elif step.action in ("add", "rm") and id(step) not in done:
                yield WriteResult(step.op, error=failure)
            elif step.action in ("add", "none"):
                yield WriteResult(step.op, record=step.record)
            elif step.action == "rm":
                yield WriteResult(step.op)

    def _stage_and_commit(self, writes: list[Step]) -> None:
        """Stage every write and commit them. On a store the daemon shares with the agents it
        serves: never over a node an agent changed since the listing (``meanwhile``), and
        when an agent's request waits, what is staged so far is committed and the agent goes
        first (an agent's write waits for one staged node and one commit, not for the whole
        batch; taking the staged part back and staging it again was measured slower than
        that commit, a few milliseconds on a store of thousands of nodes)."""
        self._refuse_changed_meanwhile(writes)
        for number, step in enumerate(writes):
            if step.refused is not None:
                continue
            self.staged.append(step)
            self._stage(step)
            if self.handle.agents_waiting() and number + 1 < len(writes):
                self._commit_staged()
                self.handle.yield_to_agents()
                self._refuse_changed_meanwhile(writes[number + 1 :])
        self._commit_staged()

    def _refuse_changed_meanwhile(self, steps: list[Step]) -> None:
        meanwhile = self.handle.meanwhile
        meanwhile.catch_up(self.handle)
        for step in steps:
            if meanwhile.covers(step.node_id):
                step.refused = meanwhile.refusal(self.handle, step.node_id)

    def _commit_staged(self) -> None:
        """One commit of what this batch staged since its last one (none when nothing is)."""
        handle = self.handle
        if handle.sdk_call(
            "read staging",
            lambda: bool(handle.store.staged() or handle.store.staged_deletions()),
        ):
            message = commit_message(self.staged)
            commit = handle.sdk_call(
                "commit the batch", lambda: handle.store.commit(message, author=AUTHOR)
            )
            handle.meanwhile.wrote(commit)
        self.committed += self.staged
        self.staged = []

    def _retired(self, forgotten: set[str]) -> list[str]:
        """Nodes this batch wrote (or found as written) for memories Dream retired, still
        served: each is forgotten once, after the batch's own commit."""
        last: dict[str, NodeSpec] = {}  # node id -> what the batch's last op left it as
        for step in self.steps:
            if step.action in ("add", "none") and step.spec is not None:
                last[step.spec.id] = step.spec
        return [
            node_id
            for node_id, spec in last.items()
            if spec.retired and node_id not in forgotten and self.view.get(node_id) is not None
        ]

    def _stage(self, step: Step) -> None:
        spec = step.spec
        if spec is None:
            self.handle.sdk_call(
                f"forget node {step.node_id!r}", lambda: self.handle.store.rm(step.node_id)
            )
            return
        self.handle.sdk_call(
            f"stage node {spec.id!r}",
            lambda: self.handle.store.add(
                spec.id,
                spec.content,
                content_kind=spec.content_kind,
                provenance=self.handle.sdk.Provenance(**spec.provenance),
                event_time=spec.event_time,
            ),
            bad_input=True,
        )


def identity_of(current: Any) -> str:
    return current.identity() if isinstance(current, NodeSpec) else node_version(current)


def written_for(current: Any, origin: str) -> bool:
    """Whether memsync wrote this node (or is writing it in this batch) for that origin."""
    if isinstance(current, NodeSpec):
        return current.origin == origin
    note = memsync_note(current)
    return note is not None and note.get("origin") == origin


def commit_message(steps: list[Step]) -> str:
    """'memsync: 12 added, 3 updated, 1 forgotten from mem0'."""
    counts = {"added": 0, "updated": 0, "forgotten": 0}
    families: set[str] = set()
    for step in steps:
        if step.counted:
            counts[step.counted] += 1
            families.add(step.family)
    moved = ", ".join(f"{n} {what}" for what, n in counts.items() if n) or "no change"
    source = f" from {', '.join(sorted(families))}" if families else ""
    return f"memsync: {moved}{source}"
