"""Each memory's past from Mem0's history rows: what can be trusted is kept, the rest counted.

Rows are shaped as the library writes them (``created_at`` the memory's, ``updated_at`` the
edit's own time for UPDATE and DELETE), so the timeline's dating rule is what is tested. One
test per line of the table in ``memsync.base.history.timeline``'s docstring; each asserts the
versions a user would see in mnem's history and the reason the report would count.
"""

from __future__ import annotations

from typing import Any

from memsync.base.history import HistoryRead, build_timeline, event_from_platform, event_from_row
from memsync.base.history import timeline as reasons
from memsync.base.history.events import iso_of, ms_of
from memsync.base.records import Record

T0 = ms_of("2025-01-01T00:00:00+00:00")
assert T0 is not None
DAY = 86_400_000
CUTOVER = T0 + 400 * DAY


def at(day: int) -> str:
    return iso_of(T0 + day * DAY).replace("Z", "+00:00")


def row(
    memory: str,
    event: str,
    old: str | None,
    new: str | None,
    created: int,
    when: int,
    actor: str | None = None,
    role: str | None = "user",
) -> dict[str, Any]:
    return {
        "memory_id": memory,
        "old_memory": old,
        "new_memory": new,
        "event": event,
        "created_at": at(created),
        "updated_at": at(when),
        "is_deleted": int(event == "DELETE"),
        "actor_id": actor,
        "role": role,
    }


def read_of(*rows: dict[str, Any], ordered: bool = True) -> HistoryRead:
    read = HistoryRead("test", ordered=ordered)
    for seq, raw in enumerate(rows):
        event = event_from_row(raw, seq)
        assert event is not None
        read.add(event)
    return read


def record(memory: str, text: str, created: int, updated: int, **provenance: str) -> Record:
    return Record(
        id=memory,
        content=text,
        created_at=at(created),
        updated_at=at(updated),
        provenance={"user_id": "alice", **provenance},
    )


def texts(past: Any) -> list[tuple[int, str | None, bool]]:
    return [((v.at_ms - T0) // DAY, v.text, v.head) for v in past.versions]


def only(timeline: Any) -> Any:
    (past,) = timeline.pasts
    return past


def build(listed: list[Record], read: HistoryRead, gone: list[Record] = (), **kw: Any) -> Any:  # type: ignore[assignment]
    return build_timeline(
        [(f"mem0:{r.id}", r) for r in listed],
        [(f"mem0:{r.id}", r) for r in gone],
        read,
        cutover_ms=CUTOVER,
        **kw,
    )


def test_adds_and_edits_are_versions_at_their_own_times_ending_with_the_listed_one() -> None:
    timeline = build(
        [record("m", "matcha", 1, 30, actor_id="bot-7")],
        read_of(
            row("m", "ADD", None, "green tea", 1, 1, actor="bot-7"),
            row("m", "UPDATE", "green tea", "matcha", 1, 30, actor="bot-7"),
        ),
    )
    assert texts(only(timeline)) == [(1, "green tea", False), (30, "matcha", True)]
    assert only(timeline).versions[0].actor_id == "bot-7"
    assert not timeline.reasons


def test_an_edit_is_dated_by_updated_at_never_by_the_memorys_created_at() -> None:
    """UPDATE rows carry the memory's created_at; a DELETE row's is even rewritten to UTC."""
    tokyo = {"created_at": "2025-01-02T09:30:00+09:00", "updated_at": at(5)}
    rows = [
        {**row("m", "ADD", None, "a", 0, 0), "created_at": tokyo["created_at"]},
        {**row("m", "UPDATE", "a", "b", 0, 5), **tokyo},
    ]
    past = only(build([record("m", "b", 1, 5)], read_of(*rows)))
    assert [v.at_ms for v in past.versions] == [ms_of(tokyo["created_at"]), ms_of(at(5))]


def test_a_metadata_only_edit_dates_the_head_and_makes_no_version_of_its_own() -> None:
    past = only(
        build(
            [record("m", "b", 1, 20)],
            read_of(
                row("m", "ADD", None, "a", 1, 1),
                row("m", "UPDATE", "a", "a", 1, 3),  # metadata only, not last: nothing
                row("m", "UPDATE", "a", "b", 1, 10),
                row("m", "UPDATE", "b", "b", 1, 20),  # metadata only, last: the head's time
            ),
        )
    )
    assert texts(past) == [(1, "a", False), (10, "b", False), (20, "b", True)]


def test_no_history_rows_gives_the_current_version_at_its_updated_at() -> None:
    timeline = build([record("m", "written behind the API", 3, 7)], read_of())
    assert texts(only(timeline)) == [(7, "written behind the API", True)]
    assert timeline.reasons == {reasons.NO_HISTORY: 1}


def test_an_unreadable_history_gives_the_current_version_only() -> None:
    read = read_of(row("m", "ADD", None, "a", 1, 1))
    read.unreadable["m"] = "HTTP 502 after 5 attempts"
    timeline = build([record("m", "a", 1, 1)], read)
    assert texts(only(timeline)) == [(1, "a", True)]
    assert timeline.reasons == {reasons.UNREADABLE: 1}


def test_history_starting_with_an_edit_puts_its_old_text_at_the_memorys_creation() -> None:
    timeline = build(
        [record("m", "c", 2, 9)],
        read_of(row("m", "UPDATE", "b", "c", 2, 9)),
    )
    assert texts(only(timeline)) == [(2, "b", False), (9, "c", True)]
    assert timeline.reasons == {reasons.MID_WAY: 1}


def test_a_history_that_disagrees_with_the_current_text_ends_with_the_current_one() -> None:
    timeline = build(
        [record("m", "changed behind the API", 1, 40)],
        read_of(row("m", "ADD", None, "a", 1, 1), row("m", "UPDATE", "a", "b", 1, 5)),
    )
    assert texts(only(timeline)) == [
        (1, "a", False),
        (5, "b", False),
        (40, "changed behind the API", True),
    ]
    assert timeline.reasons == {reasons.DISAGREES: 1}


def test_a_memory_listed_after_its_delete_is_absent_in_between() -> None:
    timeline = build(
        [record("m", "back", 1, 50)],
        read_of(row("m", "ADD", None, "a", 1, 1), row("m", "DELETE", "a", None, 1, 10)),
    )
    assert texts(only(timeline)) == [(1, "a", False), (10, None, False), (50, "back", True)]
    assert timeline.reasons == {reasons.LISTED_AFTER_DELETE: 1}


def test_a_deleted_memory_whose_scope_memsync_saw_is_placed_and_absent_at_the_end() -> None:
    rows = [
        row("gone", "ADD", None, "works at Initech", 1, 1),
        row("gone", "DELETE", "works at Initech", None, 1, 60),
    ]
    seen = record("gone", "works at Initech", 1, 1)
    placed = build([], read_of(*rows), gone=[seen])
    assert texts(only(placed)) == [(1, "works at Initech", False), (60, None, False)]
    unknown = build([], read_of(*rows))
    assert unknown.pasts == [] and unknown.reasons == {reasons.SCOPE_UNKNOWN: 1}


def test_a_platform_entry_names_the_scope_of_a_deleted_memory() -> None:
    entries = [
        {
            "memory_id": "gone",
            "event": "ADD",
            "new_memory": "a",
            "created_at": at(1),
            "user_id": "alice",
        },
        {
            "memory_id": "gone",
            "event": "DELETE",
            "old_memory": "a",
            "created_at": at(4),
            "user_id": "alice",
        },
    ]
    read = HistoryRead("platform")
    for seq, entry in enumerate(entries):
        event = event_from_platform(entry, seq)
        assert event is not None
        read.add(event)
    mine = build([], read, scope={"user_id": "alice"}, scope_key="alice")
    assert texts(only(mine)) == [(1, "a", False), (4, None, False)]
    theirs = build([], read, scope={"user_id": "bob"}, scope_key="bob")
    assert theirs.pasts == [] and theirs.reasons == {reasons.SCOPE_UNKNOWN: 1}


def test_deleted_memories_the_query_named_only_by_id_are_counted_as_of_unknown_scope() -> None:
    read = read_of(row("m", "ADD", None, "a", 1, 1))
    read.deleted_elsewhere |= {"x", "y", "m"}  # "m" is listed: not counted
    timeline = build([record("m", "a", 1, 1)], read)
    assert timeline.reasons == {reasons.SCOPE_UNKNOWN: 2}


def test_another_scopes_live_memory_is_none_of_this_stores_business() -> None:
    timeline = build([], read_of(row("bobs", "ADD", None, "bob's", 1, 1)))
    assert timeline.pasts == [] and not timeline.reasons


def test_times_running_backwards_follow_the_rows_order_and_are_counted() -> None:
    """The library's rowid is the order Mem0 wrote in: a clock set back is clamped to it."""
    rows = [row("m", "ADD", None, "a", 10, 10), row("m", "UPDATE", "a", "b", 10, 4)]
    past = only(build([record("m", "b", 10, 4)], read_of(*rows)))
    assert [v.text for v in past.versions] == ["a", "b"]
    assert past.versions[1].at_ms == past.versions[0].at_ms + 1
    assert reasons.REORDERED in past.reasons


def test_an_event_after_the_move_is_clamped_before_it() -> None:
    past = only(build([record("m", "a", 500, 500)], read_of(row("m", "ADD", None, "a", 500, 500))))
    assert past.versions[0].at_ms == CUTOVER - 1 and past.reasons == {reasons.AFTER_MOVE}


def test_an_empty_text_is_no_version() -> None:
    rows = [
        row("m", "ADD", None, "a", 1, 1),
        row("m", "UPDATE", "a", "  ", 1, 2),
        row("m", "UPDATE", "  ", "c", 1, 3),
    ]
    past = only(build([record("m", "c", 1, 3)], read_of(*rows)))
    assert [v.text for v in past.versions] == ["a", "c"] and reasons.EMPTY in past.reasons


def test_without_a_row_order_events_are_ordered_by_time_then_add_edit_delete() -> None:
    """A PostgreSQL table or a route has no insertion order: time decides, ties by kind."""
    rows = [
        row("m", "DELETE", "b", None, 1, 5),
        row("m", "UPDATE", "a", "b", 1, 5),
        row("m", "ADD", None, "a", 1, 1),
    ]
    past = only(build([], read_of(*rows, ordered=False), gone=[record("m", "b", 1, 5)]))
    assert [v.text for v in past.versions] == ["a", "b", None]
    assert not past.reasons - {reasons.REORDERED}
