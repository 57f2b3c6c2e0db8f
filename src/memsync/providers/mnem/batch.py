"""One ``write_many`` call as one mnem commit: every op planned (``batch_plan``), then staged and
committed together.

The commit has author ``memsync``, a message that says what moved, and memsync's clock; what it
wrote is noted with it for ``dates``; none is made when nothing changed. Deletes are
``rm`` (a tombstone; history keeps the node). A failed batch is unstaged, and a memory written
already expired, or one Dream retired, is forgotten right after (see ``expiry``). A create of
a node nobody knew is staged, and one ``diff`` of the staged batch against the head (one pass
over the store, whatever the batch's size) tells which of them named a node that exists; those
are decided as the plan decides a create over a node before the commit, and unstaged when they
must not be written.

A first sync into a store this cycle creates is planned ahead of its commit (``prepare``):
its nodes were staged by a writer process meanwhile (``ahead``), and ``apply`` commits what
the writer staged with what the batch stages itself, in one commit dated when it was planned.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import partial

from memsync.base.errors import ProviderError
from memsync.base.faults import killed_inside
from memsync.base.records import is_expired
from memsync.providers.base import WriteOp, WriteResult
from memsync.providers.mnem.batch_plan import BatchPlan, NodeIdCollision, Step
from memsync.providers.mnem.commits import CommitEntry, now_ms
from memsync.providers.mnem.convert import NodeSpec, iso_from_ms, record_from_node
from memsync.providers.mnem.expiry import forget_expired, forget_retired
from memsync.providers.mnem.handle import AUTHOR, detached

log = logging.getLogger("memsync.mnem")


@dataclass
class BatchWrite(BatchPlan):
    """The ops of one ``write_many`` call on an open store, planned and then applied."""

    time_ms: int | None = None  # the commit's time, when chosen as it was planned (``prepare``)
    ahead_made: dict[str, str] = field(default_factory=dict)  # node -> version, staged ahead
    ahead_families: set[str] = field(default_factory=set)
    failure: ProviderError | None = None  # why the last apply committed nothing

    def run(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Plan every op, report those that failed planning, then stage and commit the rest."""
        for op in ops:
            self.steps.append(self.plan(op))
        yield from (WriteResult(s.op, error=s.error) for s in self.steps if s.error)
        yield from self._apply()

    def prepare(self, ops: list[WriteOp]) -> list[WriteResult]:
        """Plan OPS into the batch that ``apply`` commits: what each leaves once committed (a
        planning error is final), dated by the commit to come, whose time is chosen now. A node
        staged ahead as it is leaves no step (the commit takes it in), only its version: a
        first sync's batch then holds next to nothing of its memories once recorded."""
        if self.time_ms is None:
            self.time_ms = now_ms()
        when = iso_from_ms(self.time_ms)
        results = []
        for op in ops:
            step = self.plan(op)
            if step.action == "add" and step.record is not None:  # made for this step alone
                dated = op.item.updated_at if op.item is not None else None
                step.record.updated_at = dated or when  # (its hashes, kept, do not read it)
            if step.error is not None:
                results.append(WriteResult(op, error=step.error))
            elif step.action in ("add", "none"):
                results.append(WriteResult(op, record=step.record))
            else:
                results.append(WriteResult(op))
            if step.ahead and step.record is not None:
                self.ahead_made[step.node_id] = step.record.version or ""
                self.ahead_families.add(step.family)
            else:
                self.steps.append(step)
        return results

    def apply(self) -> None:
        """Stage and commit every op ``prepare`` planned, with the nodes staged ahead; raise
        ProviderError when the commit failed (then none of them was written)."""
        for _ in self._apply():
            pass
        if self.failure is not None:
            raise self.failure

    def _apply(self) -> Iterator[WriteResult]:
        failure: ProviderError | None = None
        self.committed: list[Step] = []
        self.staged: list[Step] = []
        with self.handle.writing():
            try:
                written = [s.node_id for s in self.steps if s.action in ("add", "rm")]
                if written:  # a kill from here on leaves it recognisable (with those staged
                    self.handle.note_batch(written + self.known.staged_ahead())  # ahead)
                self._stage_and_commit()
            except ProviderError as exc:
                failure = detached(exc)
            self.failure = failure
            if failure is not None:
                ahead = self.known.staged_ahead()
                if self.handle.unstage(sorted({s.node_id for s in self.staged} | {*ahead})):
                    self.handle.in_flight.clear()
                self.known.gone(ahead)
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
            swept = len(self.ahead_made) if self.known.staged_ahead() else 0
            message = commit_message(
                [s for s in self.staged if s.action in ("add", "rm")], swept, self.ahead_families
            )
            time_ms = self.time_ms or now_ms()
            with killed_inside("mnem:commit"):
                commit = handle.sdk_call(
                    "commit the batch",
                    lambda: handle.store.commit(message, author=AUTHOR, time_ms=time_ms),
                )
            handle.meanwhile.wrote(commit)
            self._dated(commit, time_ms)
            self.known.ahead_committed()
        self.committed += self.staged
        self.staged = []

    def _dated(self, commit: str, time_ms: int) -> None:
        """What the commit wrote is noted with it, so that the listings to come date it
        without asking mnem (see ``dates``), and each record written is dated: by its source's
        updated_at when the memory has one (a copy of an edit made elsewhere, or memsync's
        fields written back under an agent's edit, is as old as that edit), else by the commit."""
        made: dict[str, str | None] = {}
        if self.known.staged_ahead():
            made.update(self.ahead_made)
        removed: set[str] = set()
        for step in self.staged:
            if step.action == "add" and step.record is not None:
                item = step.op.item
                when = item.updated_at if item is not None and item.updated_at else None
                step.record = replace(step.record, updated_at=when or iso_from_ms(time_ms))
                made[step.node_id] = step.record.version
            elif step.action == "rm":
                removed.add(step.node_id)
        self.handle.commits.note(CommitEntry(commit, time_ms, made, frozenset(removed)))

    def _verify_unknown_creates(self, staged: list[Step]) -> None:
        """Creates of nodes nobody knew are staged by now (those in STAGED): one diff of the
        staged batch against the head names those that replace a node, each then decided as a
        create over that node is (see ``create_over``), and unstaged unless it may be written."""
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
                decided = self.create_over(step.op, step.op.item, step.spec, existing)
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
        if step.ahead:
            return  # staged as it is by the writer process
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


def commit_message(steps: list[Step], swept: int = 0, swept_from: set[str] | None = None) -> str:
    """'memsync: 12 added, 3 updated, 1 forgotten from mem0' (SWEPT: nodes staged ahead this
    commit adds too, for memories of the families SWEPT_FROM)."""
    counts = {"added": swept, "updated": 0, "forgotten": 0}
    families: set[str] = set(swept_from or ())
    for step in steps:
        if step.counted:
            counts[step.counted] += 1
            families.add(step.family)
    moved = ", ".join(f"{n} {what}" for what, n in counts.items() if n) or "no change"
    source = f" from {', '.join(sorted(families))}" if families else ""
    return f"memsync: {moved}{source}"
