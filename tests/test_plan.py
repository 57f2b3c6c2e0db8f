"""The planner, table-driven: every combination of prior state and change on each side.

A is the active backend. Versions: v0 is what both held at the last sync; v1/v2 are edits
(v1 older, v2 newer unless a test says otherwise).
"""

from __future__ import annotations

import pytest

from memsync.engine.plan import Action, LinkView, Side, Topology, Version, keep_both_link, plan_link

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


# --- first sight: copies both sides held before memsync linked them (adoption) --------------
#
# Each provider lists copies as "text/metadata" (metadata "m" unless said). Copies of one text
# are paired by memsync.engine.adopt.pair_copies, then every resulting memory is planned: what
# the table checks is how many copies were adopted and what is written.

from collections import Counter  # noqa: E402

from memsync.engine.adopt import Copy, OpenMemory, pair_copies  # noqa: E402


def first_sight(
    holdings: dict[str, list[str]],
    topology: Topology,
    open_memories: dict[str, OpenMemory] | None = None,
    complete: dict[str, bool] | None = None,
) -> tuple[int, Counter[tuple[str, str, str | None]], list[str]]:
    """(adoptions, actions, conflicts): pair the copies of each text, then plan each memory."""
    versions: dict[str, tuple[str, str, Version]] = {}  # provisional link -> (provider, text, v)
    copies: dict[str, list[Copy]] = {}
    for provider, held in holdings.items():
        for index, item in enumerate(held):
            text, _, metadata = item.partition("/")
            when = T_NEW if metadata.endswith("new") else T_OLD
            pid = f"{provider}{index}"
            link = f"{provider}:{pid}"
            versions[link] = (provider, text, Version(pid, f"{text}/{metadata or 'm'}", when))
            copies.setdefault(text, []).append(Copy(provider, pid, link, str(index)))
    memories = open_memories or {}
    links: dict[str, dict[str, Version]] = {}
    adopted = 0
    for text, group in copies.items():
        opened = [memories[text]] if text in memories else []
        joined = {a.old_link: a.link_id for a in pair_copies(group, opened, [topology.active])}
        adopted += len(joined)
        for copy in group:
            provider, _, version = versions[copy.link_id]
            links.setdefault(joined.get(copy.link_id, copy.link_id), {})[provider] = version
    planned: Counter[tuple[str, str, str | None]] = Counter()
    conflicts = []
    for link_id, held in sorted(links.items()):
        agreed = None
        sides = {}
        for provider in topology.directions:
            current = held.get(provider)
            base = None
            memory = next((m for m in memories.values() if m.link_id == link_id), None)
            if memory is not None:
                agreed = f"{link_id}-agreed"
                base = agreed if provider in memory.present else None
            sides[provider] = Side(current, base, (complete or {}).get(provider, True))
        decision = plan_link(LinkView(link_id, sides, agreed=agreed), topology)
        planned.update((a.kind, a.target, a.source) for a in decision.actions)
        if decision.conflict is not None:
            conflicts.append(f"{decision.conflict.policy}:{decision.conflict.winner}")
    return adopted, planned, conflicts


def two(policy: str = "newest") -> Topology:
    return topo(policy=policy)


FIRST_SIGHT = [
    # (name, holdings, topology, adopted, actions, conflicts)
    ("1:1", {"A": ["t"], "B": ["t"]}, two(), 1, {}, []),
    ("2:1", {"A": ["t", "t"], "B": ["t"]}, two(), 1, {("create", "B", "A"): 1}, []),
    ("1:2", {"A": ["t"], "B": ["t", "t"]}, two(), 1, {("create", "A", "B"): 1}, []),
    ("3:2", {"A": ["t", "t", "t"], "B": ["t", "t"]}, two(), 2, {("create", "B", "A"): 1}, []),
    (
        "two texts, each shared once, one unique each side",
        {"A": ["t", "u", "a"], "B": ["u", "t", "b"]},
        two(),
        2,
        {("create", "B", "A"): 1, ("create", "A", "B"): 1},
        [],
    ),
    (
        "equal text, different metadata: newest wins (policy newest)",
        {"A": ["t/old"], "B": ["t/new"]},
        two(),
        1,
        {("update", "A", "B"): 1},
        ["newest:B"],
    ),
    (
        "equal text, different metadata: the active backend wins (policy active)",
        {"A": ["t/old"], "B": ["t/new"]},
        two("active"),
        1,
        {("update", "B", "A"): 1},
        ["active:A"],
    ),
    (
        "equal text, different metadata: left open (policy error)",
        {"A": ["t/old"], "B": ["t/new"]},
        two("error"),
        1,
        {},
        ["error:None"],
    ),
    (
        "one side deleted its copy before the first sync: created there again",
        {"A": ["t"], "B": []},
        two(),
        0,
        {("create", "B", "A"): 1},
        [],
    ),
    (
        "one side's listing was partial: nothing paired, nothing created there",
        {"A": ["t"], "B": []},
        two(),
        0,
        {},
        [],
    ),
    (
        "three providers, 1:2:1: one memory held by all, one created in A and C",
        {"A": ["t"], "B": ["t", "t"], "C": ["t"]},
        topo(C="both"),
        2,
        {("create", "A", "B"): 1, ("create", "C", "B"): 1},
        [],
    ),
    (
        "three providers, a push replica already holding it: adopted, nothing written",
        {"A": ["t"], "B": [], "C": ["t"]},
        topo(C="push"),
        1,
        {("create", "B", "A"): 1},
        [],
    ),
]


@pytest.mark.parametrize(
    ("name", "holdings", "topology", "adopted", "expected", "conflicts"),
    FIRST_SIGHT,
    ids=[row[0] for row in FIRST_SIGHT],
)
def test_first_sight_pairs_copies_one_to_one(
    name: str,
    holdings: dict[str, list[str]],
    topology: Topology,
    adopted: int,
    expected: dict[tuple[str, str, str | None], int],
    conflicts: list[str],
) -> None:
    complete = {"B": False} if "partial" in name else None
    got_adopted, planned, got_conflicts = first_sight(holdings, topology, complete=complete)
    assert (got_adopted, dict(planned), got_conflicts) == (adopted, expected, conflicts)


def test_first_sight_leaves_every_side_with_as_many_copies_as_the_side_that_had_most() -> None:
    holdings = {"A": ["t", "t", "t", "u"], "B": ["t", "t", "u", "u", "v"], "C": ["v"]}
    topology = topo(C="both")
    for text in ("t", "u", "v"):
        held = {p: [i for i in items if i == text] for p, items in holdings.items()}
        _, planned, _ = first_sight(held, topology)
        assert {kind for kind, _, _ in planned} <= {"create"}
        after = {p: len(items) for p, items in held.items()}
        for (_, target, _), count in planned.items():
            after[target] += count
        most = max(len(items) for items in held.values())
        assert after == {p: most for p in holdings}, text


def test_a_copy_joins_an_agreed_memory_its_provider_lacks_before_pairing_anew() -> None:
    # A memory memsync agreed on with A while B was away; B now lists its own copy of the text.
    agreed = OpenMemory("A:A0", frozenset({"A"}), ("A", "A0"))
    copies = [Copy("B", "B0", "B:B0"), Copy("B", "B1", "B:B1")]
    adoptions = pair_copies(copies, [agreed], ["A"])
    assert [(a.provider_id, a.link_id, a.from_provider) for a in adoptions] == [("B0", "A:A0", "A")]


def test_the_active_backend_lends_its_id_to_the_pair() -> None:
    copies = [Copy("A", "a1", "A:a1"), Copy("B", "b1", "B:b1")]
    (adoption,) = pair_copies(copies, [], ["B", "A"])
    assert (adoption.provider, adoption.link_id, adoption.from_provider) == ("A", "B:b1", "B")


def test_copies_pair_oldest_first_within_a_provider() -> None:
    copies = [
        Copy("A", "a-new", "A:a-new", "2026-02-01"),
        Copy("A", "a-old", "A:a-old", "2026-01-01"),
        Copy("B", "b1", "B:b1", "2026-03-01"),
    ]
    (adoption,) = pair_copies(copies, [], ["A"])
    assert (adoption.provider_id, adoption.link_id) == ("b1", "A:a-old")


# A store that went back in time (rolled back): its older version, or its loss, is no change.
# A holds v2 (agreed); B's store came back with v1, older than memsync saw there.


def rolled(state: str, name: str = "B", *, base: str | None = "v2") -> Side:
    if state == "gone":
        return Side(None, base, rolled_back=True)
    return Side(v(state, f"{name}-id"), base, rolled_back=True)


@pytest.mark.parametrize("policy", ["error", "active", "newest", "keep-both"])
@pytest.mark.parametrize("state", ["v1", "gone"])
def test_a_rollback_is_copied_nowhere_whatever_the_policy(policy: str, state: str) -> None:
    view = LinkView("m", {"A": side("v2", "A", base="v2"), "B": rolled(state)}, agreed="v2")
    decision = plan_link(view, topo(policy=policy))
    assert decision.blocked and decision.actions == [] and decision.winner is None
    assert decision.conflict is not None and decision.conflict.rolled_back == "B"
    assert decision.conflict.winner is None  # left open for the user, never settled by policy
    assert [c.provider for c in decision.conflict.changes] == ["B", "A"]


def test_keeping_the_rolled_back_store_takes_its_older_version_everywhere() -> None:
    sides = {"A": side("v2", "A", base="v2"), "B": rolled("v1")}
    decision = plan_link(LinkView("m", sides, agreed="v2", forced_winner="B"), topo())
    assert actions(decision) == {("update", "A", "B")} and decision.agreed == "v1"
    assert decision.settled_rollbacks == ["B"]


def test_keeping_the_other_side_writes_the_agreed_version_back() -> None:
    sides = {"A": side("v2", "A", base="v2"), "B": rolled("v1")}
    decision = plan_link(LinkView("m", sides, agreed="v2", forced_winner="A"), topo())
    assert actions(decision) == {("update", "B", "A")} and decision.agreed == "v2"
    assert decision.settled_rollbacks == ["B"]


def test_a_memory_lost_in_a_rollback_is_deleted_only_when_the_user_says_so() -> None:
    sides = {"A": side("v2", "A", base="v2"), "B": rolled("gone")}
    back = plan_link(LinkView("m", sides, agreed="v2", forced_winner="A"), topo())
    assert actions(back) == {("create", "B", "A")}
    gone = plan_link(LinkView("m", sides, agreed="v2", forced_winner="B"), topo())
    assert actions(gone) == {("delete", "A", None)} and gone.deleted


def test_a_rollback_that_holds_the_agreed_version_again_is_settled() -> None:
    sides = {"A": side("v2", "A", base="v2"), "B": Side(v("v2", "B-id"), "v1", rolled_back=True)}
    decision = plan_link(LinkView("m", sides, agreed="v2"), topo())
    assert not decision.blocked and decision.actions == []
    assert decision.settled_rollbacks == ["B"]


def test_a_rollback_in_a_store_out_this_cycle_holds_nothing_else_back() -> None:
    sides = {
        "A": side("v2", "A", base="v1"),
        "B": rolled("v1", base="v1"),
        "C": side("same", "C", base="v1"),
    }
    view = LinkView("m", sides, agreed="v1")
    decision = plan_link(view, topo(unavailable=("B",), C="push"))
    assert not decision.blocked and actions(decision) == {("update", "C", "A")}
    assert decision.settled_rollbacks == []  # still B's to settle when it is back
