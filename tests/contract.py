"""The provider contract: every provider type passes these tests.

A provider's test module subclasses ``ProviderContract`` and defines a ``factory`` fixture:
``factory(scope) -> Provider`` returns an opened provider whose scope is ``scope``, backed by
one shared store per test, so scope isolation can be checked. Optional hooks:
``insert_empty(provider) -> id`` writes a memory with empty content behind memsync's back.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

import pytest

from memsync.base.errors import NotFound, ProviderError
from memsync.base.records import Outgoing, Record, parse_instant
from memsync.providers.base import Provider, WriteOp, stored_text

Factory = Callable[[str], Provider]

# Texts that a normalising or stripping path would change: every provider must hand them back.
EXACT_TEXTS = [
    "  padded  ",
    "\nleading and trailing newlines\n\n",
    "windows\r\nline endings\r\n",
    "trailing tab\t",
    unicodedata.normalize("NFD", "café crème"),  # decomposed: must not come back as NFC
    "café au lait",  # precomposed
    "family 👨\u200d👩\u200d👧 and 🐈\u200d⬛",  # ZWJ emoji sequences
    "שלום עולם — مرحبا بالعالم",
    ("a 50 KB note, " * 3700)[:51200] + " ",  # long, with a trailing space
]
EXACT_TEXT_IDS = [
    "padded",
    "newlines",
    "crlf",
    "tab",
    "nfd",
    "nfc",
    "zwj",
    "rtl",
    "50kb",
]


def list_all(provider: Provider) -> tuple[list[Record], Any]:
    listing = provider.listing()
    records: list[Record] = []
    skipped: list[Any] = []
    for page in listing.pages():
        records.extend(page.records)
        skipped.extend(page.skipped)
    listing.skipped = skipped
    return records, listing


def item(text: str, origin: str | None = None, **metadata: Any) -> Outgoing:
    return Outgoing(
        origin=origin or f"test:{abs(hash(text))}", content=text, metadata=metadata, scope_key=""
    )


class ProviderContract:
    """Inherit, and define the ``factory`` fixture."""

    many = 130  # enough to cross page boundaries of every provider's test page size

    def insert_empty(self, provider: Provider) -> str:
        pytest.skip("this provider's test has no way to write an empty memory behind memsync")

    # listing ---------------------------------------------------------------------------

    def test_empty_scope_lists_nothing_and_is_complete(self, factory: Factory) -> None:
        records, listing = list_all(factory("alice"))
        assert records == []
        assert listing.complete

    def test_created_memory_is_listed_with_its_content_and_metadata(self, factory: Factory) -> None:
        provider = factory("alice")
        created = provider.create(item("likes green tea", origin="test:1", topic="drinks"))
        records, listing = list_all(provider)
        assert listing.complete
        assert [(r.id, r.content, r.metadata) for r in records] == [
            (created.id, "likes green tea", {"topic": "drinks"})
        ]
        assert provider.origin_of(records[0]) == "test:1"

    def test_listing_pages_through_everything_without_duplicates(self, factory: Factory) -> None:
        provider = factory("alice")
        ops = [
            WriteOp("create", f"k{i}", item=item(f"memory number {i}", origin=f"test:{i}"))
            for i in range(self.many)
        ]
        results = list(provider.write_many(ops))
        assert all(r.error is None for r in results), [r.error for r in results if r.error]
        records, listing = list_all(provider)
        assert listing.complete
        assert len(records) == self.many
        assert len({r.id for r in records}) == self.many
        assert {r.content for r in records} == {f"memory number {i}" for i in range(self.many)}

    def test_written_memory_comes_back_with_the_same_fingerprint(self, factory: Factory) -> None:
        # Loop prevention rests on this: what memsync wrote must not look changed.
        provider = factory("alice")
        outgoing = item("  prefers dark mode  ", origin="test:fp", ui={"theme": "dark"}, n=3)
        provider.create(outgoing)
        (record,), _ = list_all(provider)
        assert record.fingerprint == outgoing.fingerprint
        assert record.content_hash == outgoing.content_hash

    # get / update / delete ---------------------------------------------------------------

    def test_get_returns_the_memory_or_none(self, factory: Factory) -> None:
        provider = factory("alice")
        created = provider.create(item("lives in Lisbon", origin="test:get"))
        fetched = provider.get(created.id)
        assert fetched is not None and fetched.content == "lives in Lisbon"
        assert provider.get(self.missing_id()) is None

    def missing_id(self) -> str:
        return "00000000-0000-4000-8000-000000000000"

    def test_update_replaces_content_and_metadata(self, factory: Factory) -> None:
        provider = factory("alice")
        created = provider.create(item("works at ACME", origin="test:up", team="a"))
        provider.update(created.id, item("works at Globex", origin="test:up", team="b"))
        (record,), _ = list_all(provider)
        assert (record.id, record.content, record.metadata) == (
            created.id,
            "works at Globex",
            {"team": "b"},
        )

    def test_update_of_a_missing_memory_raises_not_found(self, factory: Factory) -> None:
        with pytest.raises(NotFound):
            factory("alice").update(self.missing_id(), item("ghost", origin="test:ghost"))

    def test_delete_removes_and_deleting_again_is_harmless(self, factory: Factory) -> None:
        provider = factory("alice")
        keep = provider.create(item("keep me", origin="test:keep"))
        gone = provider.create(item("delete me", origin="test:gone"))
        provider.delete(gone.id)
        provider.delete(gone.id)
        records, listing = list_all(provider)
        assert listing.complete
        assert [r.id for r in records] == [keep.id]

    def test_recreate_after_delete_leaves_exactly_one(self, factory: Factory) -> None:
        provider = factory("alice")
        first = provider.create(item("again and again", origin="test:re"))
        provider.delete(first.id)
        provider.create(item("again and again", origin="test:re"))
        records, _ = list_all(provider)
        assert [r.content for r in records] == ["again and again"]

    def test_create_with_a_known_id_replaces_when_ids_are_the_clients(
        self, factory: Factory
    ) -> None:
        provider = factory("alice")
        if not provider.capabilities.client_ids:
            pytest.skip("the provider assigns its own ids; the engine dedups through links")
        provider.create(item("version one", origin="test:same"))
        provider.create(item("version two", origin="test:same"))
        records, _ = list_all(provider)
        assert [r.content for r in records] == ["version two"]

    # content ----------------------------------------------------------------------------

    def test_empty_content_is_never_written(self, factory: Factory) -> None:
        provider = factory("alice")
        with pytest.raises(ProviderError):
            provider.create(item("   \n ", origin="test:empty"))
        assert list_all(provider)[0] == []

    def test_empty_content_in_the_store_is_skipped_by_id(self, factory: Factory) -> None:
        provider = factory("alice")
        provider.create(item("a real memory", origin="test:real"))
        empty_id = self.insert_empty(provider)
        records, listing = list_all(provider)
        assert [r.content for r in records] == ["a real memory"]
        assert empty_id in [s.id for s in listing.skipped]

    @pytest.mark.parametrize("text", EXACT_TEXTS, ids=EXACT_TEXT_IDS)
    def test_text_comes_back_byte_for_byte(self, factory: Factory, text: str) -> None:
        # Lossless: what is read back is what was written, or exactly what the provider
        # declares it does to text on write (Capabilities.text_on_write), nothing else.
        provider = factory("alice")
        outgoing = item(text, origin="test:exact")
        created = provider.create(outgoing)
        (record,), _ = list_all(provider)
        expected = stored_text(provider.capabilities, text)
        assert record.content == expected
        assert created.content == expected
        fetched = provider.get(record.id)
        assert fetched is not None and fetched.content == expected
        # and never a phantom change: what the store altered still fingerprints the same
        assert record.fingerprint == outgoing.fingerprint

    def test_metadata_round_trips_with_its_types(self, factory: Factory) -> None:
        provider = factory("alice")
        metadata = {
            "topic": "food",
            "stars": 4,
            "ratio": 0.25,
            "vegan": False,
            "tags": ["a", "b"],
            "nested": {"k": "v", "n": 1},
            "naïve key": "ünïcode",
        }
        provider.create(item("eats vegetables", origin="test:meta", **metadata))
        (record,), _ = list_all(provider)
        assert record.metadata == metadata

    def test_created_at_is_preserved(self, factory: Factory) -> None:
        provider = factory("alice")
        if not provider.capabilities.timestamps:
            pytest.skip("the provider keeps no timestamps")
        outgoing = item("met Bob in 2021", origin="test:ts")
        outgoing.created_at = "2021-06-01T09:30:00-07:00"
        provider.create(outgoing)
        (record,), _ = list_all(provider)
        assert parse_instant(record.created_at) == parse_instant("2021-06-01T16:30:00+00:00")

    # scope ------------------------------------------------------------------------------

    def test_scopes_are_isolated(self, factory: Factory) -> None:
        alice, bob = factory("alice"), factory("bob")
        alice.create(item("alice's secret", origin="test:a"))
        bob.create(item("bob's secret", origin="test:b"))
        assert [r.content for r in list_all(alice)[0]] == ["alice's secret"]
        assert [r.content for r in list_all(bob)[0]] == ["bob's secret"]
