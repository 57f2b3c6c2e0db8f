"""Which commits a history import makes: the finest time windows the store's disk budget allows.

On mnem 0.0.7 a commit costs disk in proportion to the whole store (its state is one flat
object, rewritten by every commit that changes a node): about 100-130 bytes per node in the
state, whatever changed, plus the new versions themselves (measured in
``docs/migrating-from-mem0.md``). One commit per Mem0 event would cost hundreds of times the
store; the budget bounds it instead: **with history, the store is at most ``budget`` times the
same store without it** (``history_budget``, 4 by default).

The rule: windows on a ladder, each event on its own, hour, day, week, month, quarter, year
(UTC, calendar-aligned); each is simulated (no store touched) and the finest whose predicted
size fits is taken. Inside a window, a memory's k-th version goes into the window's k-th commit
(a *layer*), so no commit holds two versions of one memory, and the commits a window needs are
as many as its most-edited memory has versions there. Memories edited every day would force
hundreds of layers in any window: when even year windows do not fit, the layers per window are
capped at the most that fit, and a memory's versions past the cap are folded into the window's
last layer (its last version there kept, the ones between left out and counted). Commit times
are the newest event of each commit, strictly increasing along the chain (mnem's log orders
commits by time, so a history must not run backwards).

The size model (``predict``): an empty store's floor, plus every version's bytes, plus
``PER_NODE`` bytes for each node in the state at each commit. The same model predicts the store
without history (the current-state import's batches, sized to the store as migrate sizes them),
so that only the ratio matters; ``PER_NODE`` is taken at the high end of what was measured,
which errs towards coarser windows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from memsync.base.history.events import iso_of

FLOOR: Final = 1_610_000  # bytes an empty mnem store takes on disk (allocated, 0.0.7)
PER_NODE: Final = 130  # bytes a commit adds per node in the state (100-130 measured)
LADDER: Final = ("event", "hour", "day", "week", "month", "quarter", "year")
FIRST_BATCH: Final = 500  # the current-state import's batches (migrate: STORE_SIZED_BATCH)
LARGEST_BATCH: Final = 50_000
_HOUR, _DAY = 3_600_000, 86_400_000


@dataclass(frozen=True, slots=True)
class Step:
    """One version of one node: from ``at_ms`` on it holds a version (``present``) or none."""

    key: str  # the node
    at_ms: int
    present: bool
    cost: int  # bytes the version adds to the store (nothing for a removal)
    actor: str | None = None  # who made it, as Mem0 says (actor_id, else role)


@dataclass
class Commit:
    """One planned commit: its steps (indexes into the plan's steps), time, author, message."""

    at_ms: int
    steps: list[int]
    label: str  # the window ("2025-03")
    added: int = 0
    updated: int = 0
    deleted: int = 0
    author: str = "mem0"

    @property
    def message(self) -> str:
        moved = [f"{n} {what}" for what, n in self._counts() if n]
        by = "" if self.author == "mem0" else f"; by {self.author}"
        return f"mem0: {', '.join(moved) or 'no change'} ({self.label}{by})"

    def _counts(self) -> list[tuple[str, int]]:
        return [("added", self.added), ("updated", self.updated), ("deleted", self.deleted)]


@dataclass
class Plan:
    """The commits of one grouping, and what the store is predicted to weigh."""

    window: str
    layer_cap: int | None
    commits: list[Commit]
    predicted: int  # bytes, with history
    baseline: int  # bytes, the same store without history
    folded: set[str] = field(default_factory=set)  # nodes with versions folded away
    within_budget: bool = True

    @property
    def ratio(self) -> float:
        return self.predicted / self.baseline if self.baseline else 1.0


def current_state_batches(nodes: int) -> list[int]:
    """The nodes the store holds after each batch of a current-state import of NODES."""
    held, after = 0, []
    while held < nodes:
        held += min(min(max(FIRST_BATCH, held), LARGEST_BATCH), nodes - held)
        after.append(held)
    return after


def baseline_size(head_costs: Sequence[int], extra_commits: int = 0) -> int:
    """The store without history, predicted: its versions, and its batches' state objects."""
    nodes = len(head_costs)
    states = sum(current_state_batches(nodes)) + extra_commits * nodes
    return FLOOR + sum(head_costs) + PER_NODE * states


def window_label(name: str) -> Callable[[int], tuple[int, str]]:
    """The window an instant falls in, as (sortable key, label), for a rung of the ladder."""

    def of(at_ms: int) -> tuple[int, str]:
        if name == "event":
            return at_ms, iso_of(at_ms)
        if name == "hour":
            return at_ms // _HOUR, iso_of(at_ms // _HOUR * _HOUR)[:13]
        if name == "day":
            return at_ms // _DAY, iso_of(at_ms // _DAY * _DAY)[:10]
        when = datetime.fromtimestamp(at_ms / 1000, UTC)
        if name == "week":
            year, week, _ = when.isocalendar()
            return (at_ms // _DAY + 3) // 7, f"{year}-W{week:02d}"
        if name == "month":
            return when.year * 12 + when.month - 1, f"{when.year}-{when.month:02d}"
        if name == "quarter":
            quarter = (when.month - 1) // 3
            return when.year * 4 + quarter, f"{when.year}-Q{quarter + 1}"
        return when.year, str(when.year)

    return of


def plan_history(
    steps: Sequence[Step],
    *,
    budget: float,
    head_costs: Sequence[int],
    extra_commits: int = 0,
) -> Plan:
    """The finest grouping of STEPS whose store fits BUDGET times the store without history
    (whose HEAD_COSTS are the bytes of each node written at head). EXTRA_COMMITS: commits both
    imports make after the last version (expiry tombstones), each the size of the head state."""
    baseline = baseline_size(head_costs, extra_commits)
    limit = budget * baseline
    for name in LADDER:
        plan = _grouped(steps, name, None, baseline, extra_commits, len(head_costs))
        if plan.predicted <= limit:
            return plan
    widest = max(_layers_needed(steps, "year"), 1)
    low, high = 1, widest  # the largest cap that fits, by bisection (size grows with the cap)
    best = _grouped(steps, "year", 1, baseline, extra_commits, len(head_costs))
    if best.predicted > limit:
        best.within_budget = False
        return best
    while low < high:
        middle = (low + high + 1) // 2
        plan = _grouped(steps, "year", middle, baseline, extra_commits, len(head_costs))
        if plan.predicted <= limit:
            low, best = middle, plan
        else:
            high = middle - 1
    return best


def _layers_needed(steps: Sequence[Step], name: str) -> int:
    window = window_label(name)
    counts = Counter((window(step.at_ms)[0], step.key) for step in steps)
    return max(counts.values(), default=0)


def _grouped(
    steps: Sequence[Step],
    name: str,
    cap: int | None,
    baseline: int,
    extra_commits: int,
    head_nodes: int,
) -> Plan:
    """The commits of one rung of the ladder (layers capped at CAP), with their size."""
    window = window_label(name)
    windows: dict[int, tuple[str, dict[str, list[int]]]] = {}
    for index in sorted(range(len(steps)), key=lambda i: (steps[i].at_ms, i)):
        key, label = window(steps[index].at_ms)
        windows.setdefault(key, (label, {}))[1].setdefault(steps[index].key, []).append(index)
    plan = Plan(name, cap, [], 0, baseline)
    present: set[str] = set()
    states = 0
    previous = -1
    for key in sorted(windows):
        label, by_node = windows[key]
        layers: list[list[int]] = []
        for node, indexes in by_node.items():
            if cap is not None and len(indexes) > cap:
                indexes = [*indexes[: cap - 1], indexes[-1]]
                plan.folded.add(node)
            for layer, index in enumerate(indexes):
                if layer == len(layers):
                    layers.append([])
                layers[layer].append(index)
        for members in layers:
            commit = _commit(steps, members, label, previous, present)
            if not commit.steps:
                continue  # a node added and folded away within the window: nothing to commit
            previous = commit.at_ms
            states += len(present)
            plan.commits.append(commit)
    written = sum(steps[i].cost for c in plan.commits for i in c.steps)
    plan.predicted = FLOOR + written + PER_NODE * (states + extra_commits * head_nodes)
    return plan


def _commit(
    steps: Sequence[Step], layer: list[int], label: str, previous: int, present: set[str]
) -> Commit:
    """One layer as a commit, applied to PRESENT (the nodes in the state so far). A removal of
    a node the state does not hold (its add was folded away) is no step at all."""
    kept = [i for i in layer if steps[i].present or steps[i].key in present]
    kept.sort(key=lambda i: (steps[i].at_ms, i))
    at_ms = max((steps[i].at_ms for i in kept), default=previous)
    commit = Commit(max(previous + 1, at_ms), kept, label)
    actors = set()
    for index in kept:
        step = steps[index]
        actors.add(step.actor or "mem0")
        if not step.present:
            commit.deleted += 1
            present.discard(step.key)
        elif step.key in present:
            commit.updated += 1
        else:
            commit.added += 1
            present.add(step.key)
    commit.author = actors.pop() if len(actors) == 1 else "mem0"
    return commit
