"""The planner, table-driven: every combination of prior state and change on each side.

A is the active backend. Versions: v0 is what both held at the last sync; v1/v2 are edits
(v1 older, v2 newer unless a test says otherwise).
"""

from __future__ import annotations

import pytest

from memsync.sync.plan import Action, LinkView, Side, Topology, Version, keep_both_link, plan_link

T_OLD, T_NEW = "2026-01-01T10:00:00+00:00", "2026-01-01T11:00:00+00:00"


def v(fp: str, pid: str = "id", when: str = T_OLD) -> Version:
    return Version(pid, fp, when)


def side(state: str, name: str, *, base: str | None = "v0", complete: bool = True) -> Side:
    """state: same | v1 | v2 | gone | absent (never had it)."""
    when = T_NEW if state == "v2" else T_OLD
    if state == "same":
        return Side(v("v0", f"{name}-id"), base, complete)
    if state in ("v1", "v2"):
        return Side(v(state, f"{name}-id", when), base, complete)
    if state == "gone":
        return Side(None, base, complete)
    return Side(None, None, complete)


def topo(
    b: str = "both", policy: str = "newest", unavailable: tuple[str, ...] = (), **more: str
) -> Topology:
    return Topology("A", {"A": "both", "B": b, **more}, policy, frozenset(unavailable))  # type: ignore[arg-type]


def actions(decision) -> set[tuple[str, str, str | None]]:  # type: ignore[no-untyped-def]
    return {(a.kind, a.target, a.source) for a in decision.actions}


EXISTING = [
    # (A, B) -> (actions, agreed, deleted, conflict?)
    ("same", "same", set(), "v0", False, False),
    ("same", "v1", {("update", "A", "B")}, "v1", False, False),
    ("same", "gone", {("delete", "A", None)}, None, True, False),
    ("v2", "same", {("update", "B", "A")}, "v2", False, False),
    ("v1", "v1", set(), "v1", False, False),  # equal fingerprints are never a conflict
    ("v2", "v1", {("update", "B", "A")}, "v2", False, True),  # newest wins
    ("v1", "v2", {("update", "A", "B")}, "v2", False, True),
    ("v2", "gone", {("create", "B", "A")}, "v2", False, False),  # modify beats delete
    ("gone", "same", {("delete", "B", None)}, None, True, False),
    ("gone", "v1", {("create", "A", "B")}, "v1", False, False),
    ("gone", "gone", set(), None, True, False),
]


@pytest.mark.parametrize(("a", "b", "expected", "agreed", "deleted", "conflict"), EXISTING)
def test_two_way_existing_memory(
    a: str,
    b: str,
    expected: set[tuple[str, str, str | None]],
    agreed: str | None,
    deleted: bool,
    conflict: bool,
) -> None:
    view = LinkView("m", {"A": side(a, "A"), "B": side(b, "B")}, agreed="v0")
    decision = plan_link(view, topo())
    assert actions(decision) == expected
    assert decision.agreed == agreed
    assert decision.deleted == deleted
    assert (decision.conflict is not None) == conflict


NEW = [
    ("absent", "v1", {("create", "A", "B")}),
    ("v1", "absent", {("create", "B", "A")}),
    ("v1", "v1", set()),  # both already hold it: nothing to write
    ("v2", "v1", {("update", "B", "A")}),
]


@pytest.mark.parametrize(("a", "b", "expected"), NEW)
def test_two_way_new_memory(a: str, b: str, expected: set[tuple[str, str, str | None]]) -> None:
    view = LinkView("m", {"A": side(a, "A", base=None), "B": side(b, "B", base=None)})
    assert actions(plan_link(view, topo())) == expected


def test_a_receiver_behind_the_agreed_version_is_brought_up_to_date() -> None:
    # B's last write failed: it still holds v0 (and its base says v0) while v1 was agreed.
    view = LinkView(
        "m", {"A": Side(v("v1", "a"), "v1"), "B": Side(v("v0", "b"), "v0")}, agreed="v1"
    )
    assert actions(plan_link(view, topo())) == {("update", "B", "A")}


def test_a_missing_receiver_gets_the_memory() -> None:
    view = LinkView("m", {"A": Side(v("v1", "a"), "v1"), "B": Side(None, None)}, agreed="v1")
    assert actions(plan_link(view, topo())) == {("create", "B", "A")}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("same", "v1", {("update", "B", "A")}),  # a push target's own edit is reverted
        ("v1", "same", {("update", "B", "A")}),
        ("same", "gone", {("create", "B", "A")}),  # and a delete there is undone
        ("gone", "same", {("delete", "B", None)}),
    ],
)
def test_push_targets_follow_the_active_backend(
    a: str, b: str, expected: set[tuple[str, str, str | None]]
) -> None:
    view = LinkView("m", {"A": side(a, "A"), "B": side(b, "B")}, agreed="v0")
    assert actions(plan_link(view, topo(b="push"))) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("same", "v1", {("update", "A", "B")}),  # a pull source's edit flows in
        ("v1", "same", set()),  # but nothing flows back into it
        ("same", "gone", {("delete", "A", None)}),
        ("gone", "same", set()),
    ],
)
def test_pull_sources_only_flow_in(
    a: str, b: str, expected: set[tuple[str, str, str | None]]
) -> None:
    view = LinkView("m", {"A": side(a, "A"), "B": side(b, "B")}, agreed="v0")
    assert actions(plan_link(view, topo(b="pull"))) == expected


def test_a_change_reaches_every_receiver_in_one_plan() -> None:
    # B (both) edits: the active A and the push target C both get it now, not next cycle.
    view = LinkView(
        "m", {"A": side("same", "A"), "B": side("v1", "B"), "C": side("same", "C")}, agreed="v0"
    )
    decision = plan_link(view, topo(C="push"))
    assert actions(decision) == {("update", "A", "B"), ("update", "C", "B")}


def test_policy_error_leaves_the_conflict_open_and_moves_nothing() -> None:
    view = LinkView("m", {"A": side("v2", "A"), "B": side("v1", "B")}, agreed="v0")
    decision = plan_link(view, topo(policy="error"))
    assert decision.blocked and decision.conflict is not None and decision.conflict.winner is None
    assert decision.actions == [] and decision.acknowledge == {}


def test_policy_active_keeps_the_active_version_even_when_older() -> None:
    view = LinkView("m", {"A": side("v1", "A"), "B": side("v2", "B")}, agreed="v0")
    decision = plan_link(view, topo(policy="active"))
    assert actions(decision) == {("update", "B", "A")} and decision.agreed == "v1"


def test_policy_keep_both_copies_the_loser_as_a_new_memory_everywhere() -> None:
    view = LinkView("m", {"A": side("v2", "A"), "B": side("v1", "B")}, agreed="v0")
    decision = plan_link(view, topo(policy="keep-both"))
    copy = keep_both_link("m", "v1")
    assert {(a.kind, a.link_id, a.target, a.source) for a in decision.actions} == {
        ("update", "m", "B", "A"),
        ("create", copy, "A", "B"),
        ("create", copy, "B", "B"),
    }
    assert all(a.source_link == "m" for a in decision.actions if a.link_id == copy)


def test_newest_compares_instants_not_strings() -> None:
    # 10:30-08:00 is 18:30Z, later than 12:00Z although it sorts lower as a string.
    view = LinkView(
        "m",
        {
            "A": Side(Version("a", "v1", "2026-01-01T12:00:00+00:00"), "v0"),
            "B": Side(Version("b", "v2", "2026-01-01T10:30:00-08:00"), "v0"),
        },
        agreed="v0",
    )
    assert plan_link(view, topo()).winner == "B"


def test_a_resolved_conflict_applies_the_chosen_version() -> None:
    view = LinkView(
        "m", {"A": side("v2", "A"), "B": side("v1", "B")}, agreed="v0", forced_winner="B"
    )
    decision = plan_link(view, topo(policy="error"))
    assert actions(decision) == {("update", "A", "B")} and decision.conflict is None


def test_an_unavailable_provider_is_neither_source_nor_target() -> None:
    view = LinkView(
        "m", {"A": side("same", "A"), "B": side("v1", "B"), "C": side("same", "C")}, agreed="v0"
    )
    decision = plan_link(view, topo(unavailable=("B",), C="push"))
    assert decision.actions == [] and "B" not in decision.acknowledge


def test_absence_from_a_partial_listing_is_not_a_delete() -> None:
    view = LinkView(
        "m", {"A": side("same", "A"), "B": side("gone", "B", complete=False)}, agreed="v0"
    )
    decision = plan_link(view, topo())
    assert decision.actions == [] and "B" not in decision.acknowledge


def test_no_create_into_a_provider_whose_listing_was_partial() -> None:
    view = LinkView(
        "m", {"A": side("v1", "A", base=None), "B": side("absent", "B", complete=False)}
    )
    assert plan_link(view, topo()).actions == []


def test_a_memory_held_only_by_a_push_target_is_left_alone() -> None:
    view = LinkView("m", {"A": side("absent", "A", base=None), "B": side("v1", "B", base=None)})
    decision = plan_link(view, topo(b="push"))
    assert decision.actions == [] and decision.agreed is None


def test_changes_are_acknowledged_so_they_are_not_seen_twice() -> None:
    view = LinkView("m", {"A": side("same", "A"), "B": side("v1", "B")}, agreed="v0")
    decision = plan_link(view, topo())
    assert decision.acknowledge == {"A": "v0", "B": "v1"}


def test_action_carries_the_provider_id_to_update() -> None:
    view = LinkView("m", {"A": side("same", "A"), "B": side("v1", "B")}, agreed="v0")
    assert plan_link(view, topo()).actions == [Action("update", "m", "A", "B", "A-id")]


def test_an_old_copy_never_reconciled_here_is_behind_not_an_edit() -> None:
    # After a rebuilt staging database: B holds an old copy (no base) of a memory whose newer
    # version memsync agreed on from A. B is brought up to date; its old text does not win.
    view = LinkView(
        "m",
        {"A": Side(v("v2", "a", T_NEW), None), "B": Side(v("v1", "b", T_OLD), None)},
        agreed="v2",
        agreed_at=T_NEW,
    )
    assert actions(plan_link(view, topo())) == {("update", "B", "A")}


def test_a_copy_edited_after_the_agreed_version_wins() -> None:
    view = LinkView(
        "m",
        {"A": Side(v("v1", "a", T_OLD), "v1"), "B": Side(v("v2", "b", T_NEW), None)},
        agreed="v1",
        agreed_at=T_OLD,
    )
    assert actions(plan_link(view, topo())) == {("update", "A", "B")}
