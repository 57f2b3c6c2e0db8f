"""One ``write_many`` call as one mnem commit: every op planned, then staged and committed together.

Each op is planned against the batch's own view of the store (what earlier ops of the same call
already staged), so a create, an update and a delete of one node in one call agree. The
commit has author ``memsync`` and a message that says what moved; none is made when nothing
changed. Deletes are ``rm`` (a tombstone; history keeps the node). A create never overwrites
a node memsync did not write for the same origin: an id collision with other content is
reported as ``NodeIdCollision``; ``update`` is the overwrite path. A failed batch is unstaged,
and a memory written already expired, or one Dream retired, is forgotten right after (see
``expiry``).

No op reads its node from mnem: in mnem 0.0.7 ``working_node`` costs time in proportion to the
whole store, so a read per op made batches quadratic. What a node holds comes from the batch
itself, from what the provider read or wrote during its hold on the store (``known``: after a
full listing, every node), and for an update or a delete from the record the engine staged for
it (``WriteOp.previous``, exact: memsync holds the store from its listing to its last write).
A create of a node none of these knows is staged, and one ``diff`` of the staged batch against
the head (one pass over the store, whatever the batch's size) tells which of them named a node
that exists; those are decided as above before the commit, and unstaged when they must not be
written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from memsync.base.errors import NotFound, ProviderError
from memsync.base.faults import killed_inside
from memsync.base.records import Outgoing, Record, Skipped, is_expired
from memsync.providers.base import WriteOp, WriteResult, require_content
from memsync.providers.mnem.convert import (
    NodeSpec,
    family_of,
    memsync_note,
    node_spec,
    node_version,
    origin_for,
    record_from_node,
)
from memsync.providers.mnem.expiry import forget_expired, forget_retired, forgotten_as_expired
from memsync.providers.mnem.handle import AUTHOR, StoreHandle, detached
from memsync.providers.mnem.known import UNKNOWN, KnownNodes

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
    unverified: bool = False  # a create of a node nobody knew: checked by the batch's diff
    refused: ProviderError | None = None  # changed by an agent since the listing (meanwhile)


@dataclass
class BatchWrite:
    """The ops of one ``write_many`` call on an open store, planned and then applied."""

    handle: StoreHandle
    known: KnownNodes = field(default_factory=KnownNodes)
    steps: list[Step] = field(default_factory=list)
    view: dict[str, NodeSpec | None] = field(default_factory=dict)  # what this batch leaves

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
        if current is UNKNOWN:
            step = self._stage_add(op, spec, "added", family_of(item.origin))
            step.unverified = True
            return step
        return self._create_over(op, item, spec, current)

    def _create_over(self, op: WriteOp, item: Outgoing, spec: NodeSpec, current: Any) -> Step:
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

    def _apply(self) -> Iterator[WriteResult]:
        failure: ProviderError | None = None
        self.committed: list[Step] = []
        self.staged: list[Step] = []
        with self.handle.writing():
            try:
                written = [s.node_id for s in self.steps if s.action in ("add", "rm")]
                if written:
                    self.handle.note_batch(written)  # a kill from here on leaves it recognisable
                self._stage_and_commit()
            except ProviderError as exc:
                failure = detached(exc)
            if failure is not None:
                if self.handle.unstage([step.node_id for step in self.staged]):
                    self.handle.in_flight.clear()
            else:
                self.handle.in_flight.clear()
                self._remember_written()
                expired = [
                    s.node_id
                    for s in self.steps
                    if s.action == "add"
                    and s.spec is not None
                    and is_expired(s.spec.expiration_date)
                ]
                retired = self._retired(set(expired))
                try:
                    forget_expired(self.handle, expired)  # written (history has it), then gone
                    self.known.gone(expired)
                    forget_retired(self.handle, retired)
                    self.known.gone(retired)
                except ProviderError as exc:
                    log.warning("%s; the sweep of the next day forgets them", exc)
        done = {id(step) for step in self.committed}
        for step in self.steps:
            if step.refused is not None:
                yield WriteResult(step.op, error=step.refused)
            elif step.action in ("add", "rm") and failure is not None and id(step) not in done:
                yield WriteResult(step.op, error=failure)
            elif step.action in ("add", "none"):
                yield WriteResult(step.op, record=step.record)
            elif step.action == "rm":
                yield WriteResult(step.op)
            elif step.action == "error" and step.unverified:
                yield WriteResult(step.op, error=step.error)  # found out by the batch's diff

    def _stage_and_commit(self) -> None:
        """Stage every write and commit them. On a store the daemon holds for the agents it
        serves: never over a node an agent changed since the listing (``meanwhile``), and
        when an agent's request waits, what is staged so far is committed and the agent goes
        first (an agent's write waits for one staged node and one commit, not for the whole
        batch; taking the staged part back and staging it again was measured slower than that
        commit, a few milliseconds on a store of thousands of nodes)."""
        writes = [s for s in self.steps if s.action in ("add", "rm")]
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
            if step.action in ("add", "rm") and meanwhile.covers(step.node_id):
                step.refused = meanwhile.refusal(self.handle, step.node_id)
                step.action, step.counted = "error", ""
                self.view.pop(step.node_id, None)

    def _commit_staged(self) -> None:
        """One commit of what this batch staged since its last one (none when nothing is)."""
        self._verify_unknown_creates(self.staged)
        handle = self.handle
        if handle.sdk_call(
            "read staging",
            lambda: bool(handle.store.staged() or handle.store.staged_deletions()),
        ):
            message = commit_message([s for s in self.staged if s.action in ("add", "rm")])
            with killed_inside("mnem:commit"):
                commit = handle.sdk_call(
                    "commit the batch", lambda: handle.store.commit(message, author=AUTHOR)
                )
            handle.meanwhile.wrote(commit)
        self.committed += self.staged
        self.staged = []

    def _verify_unknown_creates(self, staged: list[Step]) -> None:
        """Creates of nodes nobody knew are staged by now (those in STAGED): one diff of the
        staged batch against the head names those that replace a node, each then decided as a
        create over that node is (see ``_create_over``), and unstaged unless it may be written."""
        unverified = {s.node_id: s for s in staged if s.unverified and s.action == "add"}
        if not unverified:
            return
        changes = self.handle.sdk_call("diff the batch", lambda: self.handle.store.diff())
        changed = {change.id for change in changes}
        for node_id, same in unverified.items():
            if node_id not in changed:  # the very node is there already: nothing to write
                self.handle.sdk_call(
                    f"unstage node {node_id!r}", partial(self.handle.store.unstage, node_id)
                )
                same.action, same.counted, same.unverified = "none", "", False
        for change in changes:
            step = unverified.get(change.id)
            if step is None or change.kind != "modified" or change.old is None:
                continue
            assert step.op.item is not None and step.spec is not None
            existing = record_from_node(change.old, self.handle.scope_key(), self.handle.layout)
            try:
                decided = self._create_over(step.op, step.op.item, step.spec, existing)
            except NodeIdCollision as exc:
                decided = Step(step.op, "error", step.node_id, error=detached(exc))
            if decided.action != "add":
                self.view.pop(step.node_id, None)
                self.handle.sdk_call(
                    f"unstage node {step.node_id!r}",
                    partial(self.handle.store.unstage, step.node_id),
                )
            step.action, step.counted = decided.action, decided.counted
            step.record, step.error = decided.record, decided.error
            step.unverified = decided.action == "error"

    def _remember_written(self) -> None:
        """What this batch committed is what the store now holds: known for the next batch."""
        self.known.learn(s.record for s in self.steps if s.action == "add" and s.record)
        self.known.gone(s.node_id for s in self.steps if s.action == "rm")

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

    def _rm(self, node_id: str) -> bool:
        """Stage a node's removal; False when there was no such node (a staged record of a
        node memsync's expiry tombstoned, say): a delete of what is gone is no error."""
        try:
            self.handle.store.rm(node_id)
        except self.handle.sdk.InvalidRefError:
            return False
        return True

    def _stage(self, step: Step) -> None:
        spec = step.spec
        if spec is None:
            if not self.handle.sdk_call(
                f"forget node {step.node_id!r}", lambda: self._rm(step.node_id)
            ):
                step.action, step.counted = "none", ""  # gone already: nothing to forget
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


def identity_of(current: Any) -> str | None:
    """The version token of what a node holds (a staged NodeSpec, a Record, an SDK node)."""
    if isinstance(current, NodeSpec):
        return current.identity()
    if isinstance(current, Record):
        return current.version
    if isinstance(current, Skipped):
        return None
    return node_version(current)


def written_for(current: Any, origin: str) -> bool:
    """Whether memsync wrote this node (or is writing it in this batch) for that origin."""
    if isinstance(current, NodeSpec):
        return current.origin == origin
    if isinstance(current, Record):
        return not current.detached and current.origin == origin
    if isinstance(current, Skipped):
        return False
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
