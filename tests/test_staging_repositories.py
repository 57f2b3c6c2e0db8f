"""The staging repositories where their SQL does more than the callers' tests show: id lists
passed as JSON, and the log's filters."""

from __future__ import annotations

from pathlib import Path

from memsync.base.records import Record
from memsync.engine.journal import log_entries
from memsync.staging import StagingStore
from memsync.staging.journal import journal_row
from memsync.staging.links import Agreement
from memsync.staging.store import record_row

# Ids a provider may hand out: quotes, commas, brackets, SQL, backslashes, non-ASCII, emoji.
ODD_IDS = ['a"b', "x,y", "[1]", "'; DROP TABLE records; --", "back\\slash", "über", "🧠", " "]


def stage(store: StagingStore, provider: str, ids: list[str]) -> None:
    with store.transaction():
        store.records.upsert(
            record_row(provider, f"link:{i}", Record(id=i, content=f"text {i}"), 1) for i in ids
        )


def test_lookups_by_id_list_find_exactly_the_ids_asked_for(tmp_path: Path) -> None:
    many = [f"id{n}" for n in range(1200)]  # more than one lookup's worth
    with StagingStore.open(tmp_path / "staging.db") as store:
        stage(store, "p", ODD_IDS + many)
        stage(store, "other", ODD_IDS)
        asked = [*ODD_IDS, *many[::2], "not staged", 'A"B']
        found = store.records.staged_versions("p", asked)
        assert set(found) == set(ODD_IDS) | set(many[::2])
        assert found["'; DROP TABLE records; --"].link_id == "link:'; DROP TABLE records; --"
        assert {ref.provider_id for ref in store.records.refs("p", asked)} == set(found)
        assert store.count_records() == len(ODD_IDS) * 2 + len(many)

        store.records.start_listing()
        store.records.mark_seen(ODD_IDS[:3])
        assert store.records.already_seen(ODD_IDS) == set(ODD_IDS[:3])
        unseen = {ref.provider_id for ref in store.records.unseen("p")}
        assert unseen == set(ODD_IDS[3:]) | set(many)


def test_the_log_filters_by_provider_list_and_time(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "staging.db") as store:
        with store.transaction():
            store.journal.append(
                journal_row(1, provider, f"l{n}", "added", Record(id=f"{n}", content="t"), f"{n}")
                for n, provider in enumerate(["a", "b", "c", "a[x]", "a"])
            )
            store.conn.execute("UPDATE changes SET at = '2026-01-0' || seq || 'T00:00:00.000Z'")

        def seen(**filters: object) -> list[str]:
            return [e["link_id"] for e in log_entries(store, **filters)]  # type: ignore[arg-type]

        assert seen() == ["l0", "l1", "l2", "l3", "l4"]
        assert seen(provider="a") == ["l0", "l4"]
        assert seen(providers=["b", "a[x]"]) == ["l1", "l3"]
        assert seen(provider="a", providers=["b", "a[x]"]) == []  # both filters hold
        assert seen(provider="b", providers=["b", "c"]) == ["l1"]
        assert seen(since="2026-01-03T00:00:00Z") == ["l2", "l3", "l4"]
        assert seen(providers=["a", "c"], since="2026-01-02T00:00:00Z") == ["l2", "l4"]
        assert seen(limit=2) == ["l3", "l4"]


def test_an_agreement_takes_the_winners_hash_and_time_from_its_record(tmp_path: Path) -> None:
    """The agreed version's time is the winner's own updated_at (a copy that turns up later
    is judged stale against it); with none on the record, or no such record, the decision's."""
    now = "2026-12-02T05:00:00+00:00"
    dated = Record(id="a", content="dated", updated_at="2026-01-01T00:00:00+00:00")
    undated = Record(id="b", content="undated", updated_at="")
    with StagingStore.open(tmp_path / "staging.db") as store:
        with store.transaction():
            store.records.upsert(
                [record_row("p", "m:a", dated, 1), record_row("p", "m:b", undated, 1)]
            )
            store.links.agree(
                [
                    Agreement("m:a", "p", dated.fingerprint, now),
                    Agreement("m:b", "p", undated.fingerprint, now),
                    Agreement("m:c", "p", "no such fingerprint", now),
                    Agreement("m:a", "other", dated.fingerprint, now),  # a later one replaces
                ]
            )
        agreed = {row.link_id: row for row in store.links.agreed(["m:a", "m:b", "m:c"])}
        hashes = dict(store.conn.execute("SELECT link_id, content_hash FROM link_state").fetchall())
    assert agreed["m:b"].version_at == now and hashes["m:b"] == undated.content_hash
    assert agreed["m:c"].version_at == now and hashes["m:c"] is None
    # the last agreement of m:a names a provider without that record: the decision's time
    assert agreed["m:a"].version_at == now and hashes["m:a"] is None
    assert all(row.fingerprint for row in agreed.values())


def test_an_agreement_on_a_dated_record_keeps_that_date(tmp_path: Path) -> None:
    now = "2026-12-02T05:00:00+00:00"
    dated = Record(id="a", content="dated", updated_at="2026-01-01T00:00:00+00:00")
    with StagingStore.open(tmp_path / "staging.db") as store:
        with store.transaction():
            store.records.upsert([record_row("p", "m:a", dated, 1)])
            store.links.agree([Agreement("m:a", "p", dated.fingerprint, now)])
        (row,) = store.links.agreed(["m:a"])
    assert row.version_at == "2026-01-01T00:00:00+00:00"
    assert row.fingerprint == dated.fingerprint
