"""Fingerprints: stable across spellings that mean the same, different when the memory differs."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memsync.base.records import Outgoing, Record, content_hash, fingerprint

metadata = st.dictionaries(
    st.text(max_size=6),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


@given(st.text(max_size=40), metadata)
def test_a_record_fingerprints_like_the_module_function(text: str, meta: dict[str, object]) -> None:
    record = Record(id="x", content=text, metadata=meta)
    assert record.fingerprint == fingerprint(text, meta)
    assert record.content_hash == content_hash(text)
    assert Outgoing(origin="o", content=text, metadata=meta).fingerprint == record.fingerprint


def test_nfc_and_nfd_and_surrounding_space_are_the_same_memory() -> None:
    a = Record(id="1", content="  café \n")
    b = Record(id="2", content=unicodedata.normalize("NFD", "café"))
    assert (a.content_hash, a.fingerprint) == (b.content_hash, b.fingerprint)


def test_metadata_changes_the_fingerprint_not_the_content_hash() -> None:
    a = Record(id="1", content="likes tea", metadata={"topic": "drinks"})
    b = Record(id="1", content="likes tea", metadata={"topic": "food"})
    assert a.content_hash == b.content_hash and a.fingerprint != b.fingerprint


def test_memsync_keys_are_not_user_metadata() -> None:
    record = Record(
        id="1", content="x", metadata={"memsync_origin": "mem0:1", "memsync": {}, "k": 1}
    )
    assert record.metadata == {"k": 1}


def test_line_endings_are_a_spelling_inside_the_hashes_only() -> None:
    from memsync.base.records import Record, content_hash, fingerprint

    assert content_hash("a\r\nb\r") == content_hash("a\nb\n") == content_hash("a\rb")
    assert fingerprint("a\r\nb", {"k": 1}) == fingerprint("a\nb", {"k": 1})
    assert Record(id="x", content="a\r\nb").content == "a\r\nb"  # the text itself is kept
