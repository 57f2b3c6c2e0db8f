"""Properties of the pure planner over random memories and topologies (Hypothesis).

The table in test_plan.py pins hand-picked cases; these check four rules on every shape:

- a decision, once carried out, leaves nothing to do: planning again yields no action;
- nothing is written to a non-receiver or an unavailable provider, nothing is created where
  the listing was partial, and no delete is inferred from a partial listing;
- modify beats delete, and equal fingerprints are never a conflict;
- what a store that went back in time holds is copied nowhere, its losses delete nothing.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.engine.plan import (
    Decision,
    LinkView,
    Side,
    Topology,
    Version,
    changes_of,
    plan_link,
)

PROVIDERS = ("a", "b", "c", "d")
FINGERPRINTS = ("f1", "f2", "f3")
TIMES = (None, "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z", "2026-12-01T00:00:00Z")


@st.composite
def topologies(draw: st.DrawFn) -> Topology:
    active = draw(st.sampled_from(PROVIDERS))
    directions = {
        p: draw(st.sampled_from(("pull", "push", "both"))) for p in PROVIDERS if p != active
    }
    policy = draw(st.sampled_from(("error", "active", "newest", "keep-both")))
    unavailable = draw(st.frozensets(st.sampled_from(PROVIDERS), max_size=2))
    return Topology(active, directions, policy, unavailable)  # type: ignore[arg-type]


@st.composite
def sides(draw: st.DrawFn, provider: str) -> Side:
    current = draw(
        st.none()
        | st.builds(
            Version,
            st.just(f"{provider}-1"),
            st.sampled_from(FINGERPRINTS),
            st.sampled_from(TIMES),
        )
    )
    base = draw(st.none() | st.sampled_from(FINGERPRINTS))
    return Side(current, base, draw(st.booleans()))


@st.composite
def views(draw: st.DrawFn) -> LinkView:
    chosen = draw(st.sets(st.sampled_from(PROVIDERS), min_size=1))
    agreed_deleted = draw(st.booleans())
    agreed = None if agreed_deleted else draw(st.none() | st.sampled_from(FINGERPRINTS))
    return LinkView(
        "m1",
        {p: draw(sides(p)) for p in sorted(chosen)},
        agreed=agreed,
        agreed_deleted=agreed_deleted,
        agreed_at=draw(st.sampled_from(TIMES)),
    )


def carry_out(view: LinkView, decision: Decision) -> LinkView:
    """The view of the next cycle once every action succeeded, as the engine records it."""
    sides = dict(view.sides)
    for provider, fingerprint in decision.acknowledge.items():
        sides[provider] = replace(sides[provider], base=fingerprint)
    for action in decision.actions:
        if action.link_id != view.link_id:
            continue  # keep-both: the losing copy becomes a memory of its own
        side = sides[action.target]
        if action.kind == "delete":
            sides[action.target] = Side(None, None, side.complete)
        else:
            written = decision.agreed
            assert written is not None, "a create or update needs an agreed version"
            new = Version(f"{action.target}-w", written, "2026-12-02T00:00:00Z")
            sides[action.target] = Side(new, written, side.complete)
    agreed, deleted, agreed_at = view.agreed, view.agreed_deleted, view.agreed_at
    if decision.winner is not None:
        agreed, deleted = (None, True) if decision.deleted else (decision.agreed, False)
        agreed_at = "2026-12-02T00:00:00Z"
    return LinkView(view.link_id, sides, agreed, deleted, agreed_at)


@settings(max_examples=600, deadline=None)
@given(views(), topologies())
def test_a_decision_carried_out_leaves_nothing_to_do(view: LinkView, topology: Topology) -> None:
    decision = plan_link(view, topology)
    if decision.blocked:
        assert decision.actions == []
        return
    again = plan_link(carry_out(view, decision), topology)
    assert again.actions == [], (decision, again)
    assert again.conflict is None


@settings(max_examples=600, deadline=None)
@given(views(), topologies())
def test_nothing_is_written_where_it_must_not_be(view: LinkView, topology: Topology) -> None:
    decision = plan_link(view, topology)
    for action in decision.actions:
        assert topology.is_receiver(action.target), action
        assert action.target not in topology.unavailable, action
        assert action.source is None or action.source not in topology.unavailable, action
        side = view.sides[action.target]
        if action.kind == "create":
            assert side.complete, f"created into a partial listing: {action}"
    evidence_of_delete = view.agreed_deleted or any(
        side.current is None
        and side.base is not None
        and side.complete
        and topology.is_source(p)
        and p not in topology.unavailable
        for p, side in view.sides.items()
    )
    if any(a.kind == "delete" for a in decision.actions) or decision.deleted:
        assert evidence_of_delete, "a delete inferred from a partial or unavailable listing"


@settings(max_examples=600, deadline=None)
@given(views(), topologies())
def test_modify_beats_delete_and_equal_fingerprints_never_conflict(
    view: LinkView, topology: Topology
) -> None:
    decision = plan_link(view, topology)
    changes = changes_of(view, topology)
    edits = {c.version.fingerprint for c in changes if c.version is not None}
    if edits and not view.forced_winner:
        assert not decision.deleted, "a delete won over an edit"
        assert not any(a.kind == "delete" and a.link_id == view.link_id for a in decision.actions)
    if len(edits) <= 1:
        assert decision.conflict is None, "equal fingerprints made a conflict"


@st.composite
def views_with_rollbacks(draw: st.DrawFn) -> LinkView:
    view = draw(views())
    flagged = draw(st.sets(st.sampled_from(sorted(view.sides))))
    sides = {p: replace(s, rolled_back=p in flagged) for p, s in view.sides.items()}
    return replace(view, sides=sides)


@settings(max_examples=600, deadline=None)
@given(views_with_rollbacks(), topologies())
def test_what_a_rolled_back_store_holds_is_copied_nowhere_and_its_losses_delete_nothing(
    view: LinkView, topology: Topology
) -> None:
    decision = plan_link(view, topology)
    available = {p: s for p, s in view.sides.items() if p not in topology.unavailable}
    older = {s.current.fingerprint for s in available.values() if s.rolled_back and s.current} - {
        view.agreed
    }
    assert not (decision.actions and decision.agreed in older), decision
    for action in decision.actions:
        source = available.get(action.source) if action.source else None
        if source is not None and source.rolled_back:  # only as a holder of the agreed version
            assert source.current is not None and source.current.fingerprint == view.agreed
    lost = any(s.rolled_back and s.current is None for s in available.values())
    if lost and view.agreed is not None and not view.agreed_deleted:
        assert not any(a.kind == "delete" for a in decision.actions), decision
