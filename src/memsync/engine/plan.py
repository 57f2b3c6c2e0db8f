"""The planner: what to do with one logical memory, as a pure function of what is known.

A three-way merge per memory, in the manner of vdirsyncer's sync and of unison: each provider
holds a *current* version (from this cycle's mirror) and a *base* (what it held when memsync
last reconciled it); the link holds the *agreed* version. A side changed when current differs
from base. Changes flow along the star around the active backend:

- sources (the active backend, ``pull`` and ``both`` providers) contribute their changes;
- receivers (the active backend, ``push`` and ``both`` providers) are brought to the winner;
- a receiver whose base lags the agreed version is behind (an earlier write failed) and is
  brought up to date even when nothing changed this cycle.

Equal fingerprints are never a conflict; modify beats delete; two different changes are a
conflict settled by the configured policy. No I/O here: the engine gathers the views and
carries out the decision, so this module can be tested exhaustively.

A side the mirror found **rolled back** (its store went back to an older version than one
memsync had seen there, or lost the memory along with such a version) is no change: nothing
moves for that memory, whatever the policy, and it is an open conflict "rolled back in NAME"
until the user keeps one side (``forced_winner``). Keeping NAME takes its older version (or
its loss) everywhere; keeping another side writes the agreed version back into NAME.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from memsync.base.records import parse_instant
from memsync.base.write_kind import WriteKind

Direction = Literal["pull", "push", "both"]
Policy = Literal["error", "active", "newest", "keep-both"]
ChangeKind = Literal["added", "changed", "deleted"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Version:
    """One provider's current copy of a memory, as the planner needs to see it."""

    provider_id: str
    fingerprint: str
    updated_at: str | None = None


@dataclass(frozen=True)
class Side:
    """One provider's view of one logical memory."""

    current: Version | None  # None: not in this provider's listing
    base: str | None  # fingerprint when last reconciled; None: never reconciled here
    complete: bool = True  # False: the listing was partial, so absence proves nothing
    rolled_back: bool = False  # its store went back in time on this memory (see module doc)


@dataclass(frozen=True)
class LinkView:
    link_id: str
    sides: dict[str, Side]
    agreed: str | None = None  # fingerprint memsync last agreed on; None: new memory
    agreed_deleted: bool = False
    agreed_at: str | None = None  # when the agreed version was made (or the delete decided)
    forced_winner: str | None = None  # a conflict resolved by `memsync resolve --keep`


@dataclass(frozen=True)
class Topology:
    active: str
    directions: dict[str, Direction]
    policy: Policy = "newest"
    unavailable: frozenset[str] = frozenset()  # busy, failed or refused this cycle

    def is_source(self, provider: str) -> bool:
        return provider == self.active or self.directions.get(provider) in ("pull", "both")

    def is_receiver(self, provider: str) -> bool:
        return provider == self.active or self.directions.get(provider) in ("push", "both")


@dataclass(frozen=True)
class Change:
    provider: str
    kind: ChangeKind
    version: Version | None


@dataclass(frozen=True)
class Action:
    """A write the engine carries out. ``source`` names the provider whose copy is written."""

    kind: WriteKind
    link_id: str
    target: str
    source: str | None = None
    provider_id: str | None = None
    source_link: str | None = None  # keep-both: the conflicting memory the copy comes from


def keep_both_link(link_id: str, fingerprint: str) -> str:
    """The logical id of a losing version kept as a memory of its own."""
    return f"{link_id}~{fingerprint[:12]}"


@dataclass(frozen=True)
class Conflict:
    link_id: str
    changes: tuple[Change, ...]
    winner: str | None  # None: left open (policy "error")
    policy: Policy
    keep_both_from: tuple[str, ...] = ()  # losers copied as new memories (policy "keep-both")
    rolled_back: str | None = None  # the store that went back in time (always left open)


@dataclass
class Decision:
    link_id: str
    actions: list[Action] = field(default_factory=list)
    conflict: Conflict | None = None
    winner: str | None = None  # the provider whose version everyone converges on
    agreed: str | None = None  # the fingerprint now agreed on (None with deleted=False: unchanged)
    deleted: bool = False
    # provider -> its new base: what it holds now that memsync has taken it into account
    # (its fingerprint, or None when it is known to hold nothing). A write that succeeds
    # later moves a receiver's base to what was written.
    acknowledge: dict[str, str | None] = field(default_factory=dict)
    blocked: bool = False  # an open conflict: nothing moves until it is resolved
    # providers whose rollback on this memory is settled: the user chose, or the store holds
    # the agreed version again
    settled_rollbacks: list[str] = field(default_factory=list)


def changes_of(view: LinkView, topology: Topology) -> list[Change]:
    """The sources' changes since their base; a lagging side is behind, not changed."""
    changes: list[Change] = []
    for provider, side in sorted(view.sides.items()):
        if provider in topology.unavailable or not topology.is_source(provider):
            continue
        current, base = side.current, side.base
        if current is not None:
            if base is None:
                differs = current.fingerprint != view.agreed or view.agreed_deleted
                if differs and not _stale_copy(view, current):
                    changes.append(Change(provider, "added", current))
            elif current.fingerprint != base and (
                current.fingerprint != view.agreed or view.agreed_deleted
            ):
                changes.append(Change(provider, "changed", current))
        elif base is not None and side.complete:
            changes.append(Change(provider, "deleted", None))
    return changes + _agreed_meanwhile(view, topology, changes)


def _agreed_meanwhile(view: LinkView, topology: Topology, changes: list[Change]) -> list[Change]:
    """The agreed version, as a change, when a side edited or deleted a version older than it.

    A side that was busy (or whose write failed) while another side's edit was agreed, and
    that was edited meanwhile, made a concurrent edit: it is a conflict with the agreed
    version, settled by the policy, not an edit that silently replaces it. Deleted
    meanwhile, the agreed edit beats the delete (modify beats delete).
    """
    if view.agreed is None or view.agreed_deleted:
        return []
    lagging = [
        c
        for c in changes
        if c.kind != "added" and view.sides[c.provider].base not in (None, view.agreed)
    ]
    if not lagging:
        return []
    holders = [
        provider
        for provider, side in sorted(view.sides.items())
        if provider not in topology.unavailable
        and topology.is_source(provider)
        and side.current is not None
        and side.current.fingerprint == view.agreed
    ]
    if not holders:
        return []
    holder = topology.active if topology.active in holders else holders[0]
    current = view.sides[holder].current
    assert current is not None
    return [Change(holder, "changed", Version(current.provider_id, view.agreed, view.agreed_at))]


def _stale_copy(view: LinkView, current: Version) -> bool:
    """A copy never reconciled in its provider, of a memory memsync already agreed on.

    It appears after the staging database was rebuilt, or when a provider that was busy or
    moved comes back. It is an old copy (behind) unless it was updated after the agreed
    version was made; without both times, the agreed version is trusted.
    """
    if view.agreed is None and not view.agreed_deleted:
        return False
    agreed_at, current_at = parse_instant(view.agreed_at), parse_instant(current.updated_at)
    if agreed_at is None or current_at is None:
        return True
    return current_at <= agreed_at


def _updated(change: Change) -> datetime:
    if change.version is None:
        return _EPOCH
    return parse_instant(change.version.updated_at) or _EPOCH


def choose_winner(
    view: LinkView, changes: list[Change], topology: Topology
) -> tuple[Change | None, Conflict | None]:
    """The change everyone converges on, and the conflict it settled (if it was one)."""
    if view.forced_winner is not None:
        forced = [c for c in changes if c.provider == view.forced_winner]
        side = view.sides.get(view.forced_winner)
        if forced:
            return forced[0], None
        if side is not None:
            kind: ChangeKind = "changed" if side.current else "deleted"
            return Change(view.forced_winner, kind, side.current), None
    if not changes:
        return None, None
    edits = [c for c in changes if c.kind != "deleted"]
    if not edits:
        return changes[0], None  # deleted everywhere it changed
    # Modify beats delete: deletes only win when nobody edited.
    distinct = {c.version.fingerprint for c in edits if c.version}
    if len(distinct) == 1:
        return _prefer_active(edits, topology), None
    policy = topology.policy
    if policy == "error":
        return None, Conflict(view.link_id, tuple(edits), None, policy)
    if policy == "active":
        active = [c for c in edits if c.provider == topology.active]
        winner = active[0] if active else _newest(edits, topology)
    else:
        winner = _newest(edits, topology)
    losers: tuple[str, ...] = ()
    if policy == "keep-both":
        seen = {winner.version.fingerprint if winner.version else ""}
        kept = []
        for change in edits:
            if change.version and change.version.fingerprint not in seen:
                seen.add(change.version.fingerprint)
                kept.append(change.provider)
        losers = tuple(kept)
    return winner, Conflict(view.link_id, tuple(edits), winner.provider, policy, losers)


def _prefer_active(changes: list[Change], topology: Topology) -> Change:
    for change in changes:
        if change.provider == topology.active:
            return change
    return changes[0]


def _newest(changes: list[Change], topology: Topology) -> Change:
    """The most recently updated edit; ties go to the active backend, then by name."""
    return max(
        changes,
        key=lambda c: (_updated(c), c.provider == topology.active, c.provider),
    )


def _rolled_back(view: LinkView, topology: Topology) -> list[str]:
    """Available sides flagged rolled back that still differ from the agreed version."""
    rolled = []
    for provider, side in sorted(view.sides.items()):
        if not side.rolled_back or provider in topology.unavailable:
            continue
        current = side.current.fingerprint if side.current else None
        agreed = None if view.agreed_deleted else view.agreed
        if current != agreed:
            rolled.append(provider)
    return rolled


def _rollback_conflict(view: LinkView, topology: Topology, provider: str) -> Conflict:
    """The store's older version (or its loss) against the agreed version, left open."""
    side = view.sides[provider]
    changes = [Change(provider, "changed" if side.current else "deleted", side.current)]
    others = sorted(view.sides, key=lambda name: (name != topology.active, name))
    for other in others:
        current = view.sides[other].current
        if other == provider or other in topology.unavailable or current is None:
            continue
        if not topology.is_source(other):
            continue  # a push-only copy holds what others decided; it is nobody's side
        if current.fingerprint == view.agreed and not view.agreed_deleted:
            changes.append(Change(other, "changed", current))  # each side the user may keep
    return Conflict(view.link_id, tuple(changes), None, topology.policy, rolled_back=provider)


def plan_link(view: LinkView, topology: Topology) -> Decision:
    """Decide what every provider must do so that all hold the same version of this memory."""
    decision = Decision(view.link_id)
    rolled = _rolled_back(view, topology)
    if rolled and view.forced_winner is None:
        decision.conflict = _rollback_conflict(view, topology, rolled[0])
        decision.blocked = True
        return decision
    decision.settled_rollbacks = [
        p for p, s in sorted(view.sides.items()) if s.rolled_back and p not in topology.unavailable
    ]
    changes = [c for c in changes_of(view, topology) if c.provider not in rolled]
    winner, conflict = choose_winner(view, changes, topology)
    decision.conflict = conflict
    if conflict is not None and conflict.winner is None:
        decision.blocked = True
        return decision

    if winner is not None:
        decision.winner = winner.provider
        if winner.kind == "deleted":
            decision.deleted = True
        else:
            assert winner.version is not None
            decision.agreed = winner.version.fingerprint
        target_fp, source = (None, None) if decision.deleted else (decision.agreed, winner.provider)
    elif view.agreed is not None and not view.agreed_deleted:
        # Nothing changed: bring receivers that are behind up to the agreed version, taken
        # from any side that holds it.
        holders = [
            p
            for p, s in sorted(view.sides.items())
            if p not in topology.unavailable and s.current and s.current.fingerprint == view.agreed
        ]
        if not holders:
            return decision
        target_fp, source = view.agreed, holders[0]
        decision.agreed = view.agreed
    elif view.agreed_deleted:
        target_fp, source = None, None
        decision.deleted = True
    else:
        # A memory no source holds (e.g. only in a push-only provider): not ours to move.
        return decision

    for provider, side in sorted(view.sides.items()):
        if provider in topology.unavailable:
            continue
        if side.current is not None:
            decision.acknowledge[provider] = side.current.fingerprint
        elif side.complete:
            decision.acknowledge[provider] = None
        _reconcile_side(decision, provider, side, target_fp, source, topology)
    if conflict is not None:
        _keep_losers(decision, view, conflict, topology)
    return decision


def _keep_losers(
    decision: Decision, view: LinkView, conflict: Conflict, topology: Topology
) -> None:
    """keep-both: each losing version becomes a memory of its own in every receiver."""
    for loser in conflict.keep_both_from:
        version = view.sides[loser].current
        assert version is not None
        new_link = keep_both_link(view.link_id, version.fingerprint)
        for provider in sorted(view.sides):
            if provider in topology.unavailable or not topology.is_receiver(provider):
                continue
            if not view.sides[provider].complete:
                continue
            decision.actions.append(
                Action(WriteKind.CREATE, new_link, provider, source=loser, source_link=view.link_id)
            )


def _reconcile_side(
    decision: Decision,
    provider: str,
    side: Side,
    target_fp: str | None,
    source: str | None,
    topology: Topology,
) -> None:
    current = side.current
    if provider in topology.unavailable:
        return
    if target_fp is None:  # the memory is deleted
        if current is None:
            return
        if topology.is_receiver(provider):
            decision.actions.append(
                Action(
                    WriteKind.DELETE, decision.link_id, provider, provider_id=current.provider_id
                )
            )
        return
    if current is not None and current.fingerprint == target_fp:
        return
    if not topology.is_receiver(provider):
        return
    if current is not None:
        decision.actions.append(
            Action(WriteKind.UPDATE, decision.link_id, provider, source, current.provider_id)
        )
    elif side.complete:
        decision.actions.append(Action(WriteKind.CREATE, decision.link_id, provider, source))
