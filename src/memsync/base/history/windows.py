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

import functools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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


@functools.lru_cache(maxsize=4096)
def _month_of_day(day: int) -> tuple[int, int]:
    when = datetime.fromtimestamp(day * 86_400, UTC)
    return when.year, when.month


def window_key(name: str) -> Callable[[int], int]:
    """The window an instant falls in on one rung of the ladder, as a sortable number."""
    if name == "event":
        return lambda at_ms: at_ms
    if name == "hour":
        return lambda at_ms: at_ms // _HOUR
    if name == "day":
        return lambda at_ms: at_ms // _DAY
    if name == "week":  # ISO weeks, Monday first (1970-01-01 was a Thursday)
        return lambda at_ms: (at_ms // _DAY + 3) // 7
    if name == "month":
        return lambda at_ms: _months(_month_of_day(at_ms // _DAY))
    if name == "quarter":
        return lambda at_ms: _months(_month_of_day(at_ms // _DAY)) // 3
    return lambda at_ms: _month_of_day(at_ms // _DAY)[0]


def _months(year_month: tuple[int, int]) -> int:
    return year_month[0] * 12 + year_month[1] - 1


def window_label(name: str, at_ms: int) -> str:
    """How a window is named in commit messages ("2025-03", "2025-W11", "2025-Q1")."""
    when = datetime.fromtimestamp(at_ms / 1000, UTC)
    if name == "event":
        return iso_of(at_ms)
    if name == "hour":
        return iso_of(at_ms // _HOUR * _HOUR)[:13]
    if name == "day":
        return iso_of(at_ms // _DAY * _DAY)[:10]
    if name == "week":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    if name == "month":
        return f"{when.year}-{when.month:02d}"
    if name == "quarter":
        return f"{when.year}-Q{(when.month - 1) // 3 + 1}"
    return str(when.year)


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
    model = _Model(steps, baseline_size(head_costs, extra_commits), extra_commits, len(head_costs))
    limit = budget * model.baseline
    for name in LADDER:
        plan = model.grouped(name, None, limit)
        if plan is not None:
            return plan
    widest = max(_layers_needed(model, "year"), 1)
    best = model.grouped("year", 1, None)
    assert best is not None
    if best.predicted > limit:
        best.within_budget = False
        return best
    low, high = 1, widest  # the largest cap that fits, by bisection (size grows with the cap)
    while low < high:
        middle = (low + high + 1) // 2
        plan = model.grouped("year", middle, limit)
        if plan is not None:
            low, best = middle, plan
        else:
            high = middle - 1
    return best


def _layers_needed(model: _Model, name: str) -> int:
    key = window_key(name)
    counts = Counter((key(model.steps[i].at_ms), model.steps[i].key) for i in model.order)
    return max(counts.values(), default=0)


class _Model:
    """The steps in time order, and the size of any grouping of them (``grouped``). Planning
    100k memories' year tries several rungs over 165k steps: the loops read plain lists."""

    def __init__(
        self, steps: Sequence[Step], baseline: int, extra_commits: int, head_nodes: int
    ) -> None:
        self.steps = steps
        self.order = sorted(range(len(steps)), key=lambda i: (steps[i].at_ms, i))
        self.at = [step.at_ms for step in steps]
        self.key = [step.key for step in steps]
        self.cost = [step.cost for step in steps]
        self.present = [step.present for step in steps]
        self.baseline = baseline
        self.extra_states = extra_commits * head_nodes

    def grouped(self, name: str, cap: int | None, limit: float | None) -> Plan | None:
        """The commits of one rung (layers capped at CAP), or None once they pass LIMIT."""
        plan = Plan(name, cap, [], 0, self.baseline)
        present: set[str] = set()
        states = self.extra_states
        written = FLOOR
        previous = -1
        for window in self._windows(window_key(name)):
            label = window_label(name, self.at[window[0]])
            for members in self._layers(window, cap, plan.folded):
                kept = [i for i in members if self.present[i] or self.key[i] in present]
                if not kept:
                    continue  # a node added and folded away within the window: nothing left
                previous = max(previous + 1, max(self.at[i] for i in kept))
                commit = Commit(previous, kept, label)
                self._apply(commit, present)
                states += len(present)
                written += sum(self.cost[i] for i in kept)
                plan.commits.append(commit)
                if limit is not None and written + PER_NODE * states > limit:
                    return None
        plan.predicted = written + PER_NODE * states
        return plan

    def _windows(self, key: Callable[[int], int]) -> Iterator[list[int]]:
        """The step indexes of each window, in time order."""
        current: list[int] = []
        current_key: int | None = None
        at = self.at
        for index in self.order:
            found = key(at[index])
            if found != current_key and current:
                yield current
                current = []
            current_key = found
            current.append(index)
        if current:
            yield current

    def _layers(self, window: list[int], cap: int | None, folded: set[str]) -> list[list[int]]:
        """A memory's k-th version in the window in its k-th layer; past CAP, its last one in
        the last layer and the ones between folded away."""
        by_node: dict[str, list[int]] = {}
        keys = self.key
        for index in window:
            found = by_node.get(keys[index])
            if found is None:
                by_node[keys[index]] = [index]
            else:
                found.append(index)
        if len(by_node) == len(window):
            return [window]  # no memory twice in the window: one layer
        layers: list[list[int]] = []
        for node, indexes in by_node.items():
            if cap is not None and len(indexes) > cap:
                indexes = [*indexes[: cap - 1], indexes[-1]]
                folded.add(node)
            for layer, index in enumerate(indexes):
                if layer == len(layers):
                    layers.append([])
                layers[layer].append(index)
        return layers

    def _apply(self, commit: Commit, present: set[str]) -> None:
        """COMMIT's steps applied to PRESENT (the nodes in the state so far), counted; its
        author the one actor its steps share, else ``mem0``."""
        actors = set()
        for index in commit.steps:
            key = self.key[index]
            actors.add(self.steps[index].actor or "mem0")
            if not self.present[index]:
                commit.deleted += 1
                present.discard(key)
            elif key in present:
                commit.updated += 1
            else:
                commit.added += 1
                present.add(key)
        commit.author = actors.pop() if len(actors) == 1 else "mem0"
