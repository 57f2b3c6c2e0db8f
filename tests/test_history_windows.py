"""The commits a history import makes: never two versions of one memory in one commit, times
strictly increasing, and the finest windows whose predicted store fits the disk budget."""

from __future__ import annotations

import random
from collections import Counter

from memsync.base.history.windows import (
    FLOOR,
    PER_NODE,
    Plan,
    Step,
    baseline_size,
    current_state_batches,
    plan_history,
)

DAY = 86_400_000
T0 = 1_735_689_600_000  # 2025-01-01T00:00Z
COST = 800


def year_of_history(memories: int, seed: int = 37) -> tuple[list[Step], list[int]]:
    """Adds for 1.1 N memories, edits for 0.3 N and deletes for 0.1 N, over a year."""
    rnd = random.Random(seed)
    steps: list[Step] = []
    born: dict[str, int] = {}
    for n in range(int(memories * 1.1)):
        born[f"m{n}"] = T0 + rnd.randrange(365 * DAY)
        steps.append(Step(f"m{n}", born[f"m{n}"], True, COST, "user"))
    deleted = rnd.sample(sorted(born), int(memories * 0.1))
    end = {key: T0 + 365 * DAY for key in born}
    for key in deleted:
        end[key] = rnd.randrange(born[key] + 2, T0 + 365 * DAY)
        steps.append(Step(key, end[key], False, 0, "user"))
    for _ in range(int(memories * 0.3)):
        key = rnd.choice(sorted(born))
        steps.append(Step(key, rnd.randrange(born[key] + 1, end[key]), True, COST, "bot-7"))
    heads = [COST] * (len(born) - len(deleted))
    return steps, heads


def check_commits(plan: Plan, steps: list[Step]) -> None:
    times = [commit.at_ms for commit in plan.commits]
    assert times == sorted(times) and len(set(times)) == len(times), "times must increase"
    for commit in plan.commits:
        keys = Counter(steps[i].key for i in commit.steps)
        assert max(keys.values()) == 1, "two versions of one memory in one commit"
        assert commit.at_ms >= max(steps[i].at_ms for i in commit.steps)


def test_a_small_store_keeps_every_event_as_its_own_commit_at_its_own_time() -> None:
    steps, heads = year_of_history(20)
    plan = plan_history(steps, budget=4, head_costs=heads)
    assert plan.window == "event" and plan.layer_cap is None
    check_commits(plan, steps)
    assert sorted(c.at_ms for c in plan.commits) == sorted({s.at_ms for s in steps})


def test_a_large_store_gets_the_finest_windows_its_budget_allows() -> None:
    steps, heads = year_of_history(10_000)
    plan = plan_history(steps, budget=4, head_costs=heads)
    check_commits(plan, steps)
    assert plan.window == "month" and plan.predicted <= 4 * plan.baseline
    assert plan_history(steps, budget=2.5, head_costs=heads).window == "quarter"
    assert plan_history(steps, budget=30, head_costs=heads).window in ("day", "hour")
    kept = sum(len(c.steps) for c in plan.commits)
    assert kept == len(steps) and not plan.folded  # coarser, never fewer versions


def test_a_memory_edited_every_day_is_folded_only_when_even_years_do_not_fit() -> None:
    steps, heads = year_of_history(2_000)
    hot = [Step("m0", T0 + day * DAY + 1, True, COST, "bot-7") for day in range(1, 365)]
    plan = plan_history(steps + hot, budget=3, head_costs=heads)
    check_commits(plan, steps + hot)
    assert plan.window == "year" and plan.layer_cap is not None and plan.folded == {"m0"}
    assert plan.predicted <= 3 * plan.baseline
    last = max(plan.commits, key=lambda c: c.at_ms)
    hot_kept = [i for c in plan.commits for i in c.steps if (steps + hot)[i].key == "m0"]
    assert (steps + hot)[max(hot_kept)].at_ms == hot[-1].at_ms  # its last version is kept
    assert last.at_ms >= hot[-1].at_ms


def test_folding_never_removes_a_node_the_state_does_not_hold() -> None:
    """Added and deleted within one folded window: the removal goes with the add."""
    steps = [
        Step("a", T0 + 1, True, COST),
        Step("a", T0 + 2, True, COST),
        Step("a", T0 + 3, False, 0),
        Step("b", T0 + 4, True, COST),
    ]
    plan = plan_history(steps, budget=1.0, head_costs=[COST, COST])
    assert plan.window == "year" and plan.layer_cap == 1
    kinds = [(steps[i].key, steps[i].present) for c in plan.commits for i in c.steps]
    assert kinds == [("b", True)]


def test_messages_say_what_happened_and_authors_are_the_mem0_actor_when_one() -> None:
    steps = [Step("a", T0 + 1, True, COST, "bot-7"), Step("b", T0 + 2, True, COST, "bot-7")]
    steps += [
        Step("a", T0 + 40 * DAY, True, COST, "bot-7"),
        Step("b", T0 + 41 * DAY, False, 0, "user"),
    ]
    plan = plan_history(steps, budget=4, head_costs=[COST])
    by_time = sorted(plan.commits, key=lambda c: c.at_ms)
    assert by_time[0].author == "bot-7" and by_time[0].message.startswith("mem0: 1 added (")
    assert "1 deleted" in by_time[-1].message and by_time[-1].author == "user"


def test_the_baseline_is_the_current_state_imports_store_sized_batches() -> None:
    assert current_state_batches(10_000) == [500, 1000, 2000, 4000, 8000, 10_000]
    assert baseline_size([COST] * 10) == FLOOR + 10 * COST + PER_NODE * 10
