"""One ``write_many`` call, planned: what each op does to a mnem store, decided before any is
staged (``batch`` stages and commits the plan).

Each op is planned against the batch's own view of the store (what earlier ops of the same call
already staged), so a create, an update and a delete of one node in one call agree. A create
never overwrites a node memsync did not write for the same origin: an id collision with other
content is reported as ``NodeIdCollision``; ``update`` is the overwrite path.

No op reads its node from mnem: in mnem 0.0.7 ``working_node`` costs time in proportion to the
whole store, so a read per op made batches quadratic. What a node holds comes from the batch
itself, from what the provider read or wrote during its hold on the store (``known``: after a
full listing, every node), and for an update or a delete from the record the engine staged for
it (``WriteOp.previous``, exact: memsync holds the store from its listing to its last write).
A create of a node none of these knows is planned ``unverified``: the batch's one diff decides
it before the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from memsync.base.errors import NotFound, ProviderError
from memsync.base.records import Outgoing, Record, Skipped
from memsync.providers.base import WriteOp, require_content
from memsync.providers.mnem.convert import (
    NodeSpec,
    family_of,
    memsync_note,
    node_spec,
    node_version,
    origin_for,
    record_from_node,
)
from memsync.providers.mnem.expiry import forgotten_as_expired
from memsync.providers.mnem.handle import StoreHandle, detached
from memsync.providers.mnem.known import UNKNOWN, KnownNodes, StagedAhead


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
    unverified: bool = False  # a create of a node nobody knew: checked by the batch's diff
    refused: ProviderError | None = None  # changed by an agent since the listing (meanwhile)
    ahead: bool = False  # staged ahead as it is by a writer process (``ahead``): not staged again


@dataclass
class BatchPlan:
    """The ops of one ``write_many`` call on an open store, each planned as a ``Step``."""

    handle: StoreHandle
    known: KnownNodes = field(default_factory=KnownNodes)
    steps: list[Step] = field(default_factory=list)
    view: dict[str, NodeSpec | None] = field(default_factory=dict)  # what this batch leaves

    def plan(self, op: WriteOp) -> Step:
        """What OP does to the store, given what the ops before it in this batch do."""
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
        """What the node holds now: a NodeSpec this batch staged, a Record or Skipped as read
        this hold, None when absent, or UNKNOWN. Never a read from the store."""
        if node_id in self.view:
            return self.view[node_id]
        return self.known.get(node_id)

    def _staged_or_read(self, op: WriteOp, node_id: str) -> tuple[Any, bool]:
        """For an update or a delete of a node this hold has not seen: the record the engine
        staged for it, else (an odd caller's op) the node itself, read once; and whether that
        is exactly what the node holds. A staged record says the node is there, but not always
        how it reads: the mirror keeps an agent's rewrite under the version it replaced until
        memsync writes it back, and keeps memories whose expiry memsync tombstoned."""
        previous = op.previous
        if previous is not None and previous.id == node_id:
            return previous, False
        return self._read(node_id), True

    def _plan_create(self, op: WriteOp, item: Outgoing) -> Step:
        spec = node_spec(item, layout=self.handle.layout)
        current = self._current(spec.id)
        if isinstance(current, StagedAhead) and not current.committed:
            family = family_of(item.origin)
            if current.identity == spec.identity():  # staged as it is: committed, not staged
                record = self._record(spec)
                return Step(
                    op, "add", spec.id, counted="added", family=family, record=record, ahead=True
                )
            return self._stage_add(op, spec, "added", family)
        if current is UNKNOWN:
            step = self._stage_add(op, spec, "added", family_of(item.origin))
            step.unverified = True
            return step
        return self.create_over(op, item, spec, current)

    def create_over(self, op: WriteOp, item: Outgoing, spec: NodeSpec, current: Any) -> Step:
        """A create of SPEC where the store holds CURRENT (None: nothing there)."""
        family = family_of(item.origin)
        if current is None:
            return self._stage_add(op, spec, "added", family)
        if identity_of(current) == spec.identity():
            return Step(op, "none", spec.id, spec=spec, record=self._record(spec))
        if written_for(current, item.origin):
            return self._stage_add(op, spec, "updated", family)
        if isinstance(current, NodeSpec):
            current = self._record(current)
        if isinstance(current, Record) and current.content_hash == item.content_hash:
            return Step(op, "none", spec.id, record=current)  # the same memory there: adopt it
        raise NodeIdCollision(
            f"{self.handle.name}: node {spec.id!r} already exists in {self.handle.path} with "
            "other content that memsync did not write; it is never overwritten: forget or "
            "rename that node in mnem, then sync again"
        )

    def _plan_update(self, op: WriteOp, item: Outgoing) -> Step:
        node_id = op.provider_id or ""
        current, exact = self._current(node_id), True
        if current is UNKNOWN:
            current, exact = self._staged_or_read(op, node_id)
        spec = node_spec(item, node_id=node_id, layout=self.handle.layout)
        if current is None and forgotten_as_expired(self.handle, node_id):
            # memsync tombstoned it when its date passed: the update (date cleared or moved)
            # brings it back, with history holding both.
            return self._stage_add(op, spec, "updated", family_of(item.origin))
        if current is None:
            raise NotFound(f"{self.handle.name}: no node {node_id!r} in {self.handle.path}")
        if exact and identity_of(current) == spec.identity():
            return Step(op, "none", node_id, spec=spec, record=self._record(spec))
        return self._stage_add(op, spec, "updated", family_of(item.origin))

    def _plan_delete(self, op: WriteOp) -> Step:
        node_id = op.provider_id or ""
        current = self._current(node_id)
        if current is UNKNOWN:
            current, _ = self._staged_or_read(op, node_id)
        if current is None:
            return Step(op, "none", node_id)
        self.view[node_id] = None
        origin = current.origin if isinstance(current, NodeSpec | Record) else None
        family = family_of(origin or origin_for(node_id))
        return Step(op, "rm", node_id, counted="forgotten", family=family)

    def _read(self, node_id: str) -> Record | Skipped | None:
        node = self.handle.sdk_call(
            f"read node {node_id!r}", lambda: self.handle.store.working_node(node_id)
        )
        return (
            None
            if node is None
            else record_from_node(node, self.handle.scope_key(), self.handle.layout)
        )

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
        record = record_from_node(
            spec.as_node(self.handle.sdk), self.handle.scope_key(), self.handle.layout
        )
        assert isinstance(record, Record)  # require_content ran before any spec was made
        return record


def identity_of(current: Any) -> str | None:
    """The version token of what a node holds (a staged NodeSpec, a Record, an SDK node)."""
    if isinstance(current, NodeSpec):
        return current.identity()
    if isinstance(current, Record):
        return current.version
    if isinstance(current, Skipped):
        return None
    if isinstance(current, StagedAhead):
        return current.identity
    return node_version(current)


def written_for(current: Any, origin: str) -> bool:
    """Whether memsync wrote this node (or is writing it in this batch) for that origin."""
    if isinstance(current, NodeSpec):
        return current.origin == origin
    if isinstance(current, Record):
        return not current.detached and current.origin == origin
    if isinstance(current, Skipped):
        return False
    if isinstance(current, StagedAhead):
        return current.origin == origin
    note = memsync_note(current)
    return note is not None and note.get("origin") == origin
