"""memsync's note of the batch it is staging into a mnem store (``providers/mnem/in_flight.py``):
a batch staged ahead is noted a part at a time, and the note names every part."""

from __future__ import annotations

import json
from pathlib import Path

from memsync.providers.mnem.in_flight import InFlight


def test_a_note_written_in_parts_names_every_part(tmp_path: Path) -> None:
    note = InFlight("store-a", tmp_path)
    note.note(["mem0:1", "mem0:2"])
    note.note_more(["mem0:3"])
    note.note_more(["mem0:4", "mem0:2"])
    assert note.noted() == {"mem0:1", "mem0:2", "mem0:3", "mem0:4"}
    note.note(["mem0:9"])  # a new batch: the note starts again
    assert note.noted() == {"mem0:9"}
    note.clear()
    assert note.noted() is None


def test_a_part_cut_short_by_a_crash_ends_the_note(tmp_path: Path) -> None:
    """A part is written before its nodes are staged: one cut short names none that were."""
    note = InFlight("store-a", tmp_path)
    note.note(["mem0:1"])
    with note.path.open("a") as file:
        file.write('{"store": "store-a", "nodes": ["mem0:2"')  # killed mid-write
    assert note.noted() == {"mem0:1"}


def test_a_note_of_another_store_names_nothing(tmp_path: Path) -> None:
    InFlight("store-a", tmp_path).note(["mem0:1"])
    elsewhere = InFlight("store-a", tmp_path)
    elsewhere.store_identity = "store-b"  # the same file, read for another store
    assert elsewhere.noted() is None


def test_a_note_written_by_the_previous_version_still_reads(tmp_path: Path) -> None:
    """Before notes had parts, a note was one JSON object with no newline."""
    note = InFlight("store-a", tmp_path)
    note.path.parent.mkdir(parents=True, exist_ok=True)
    note.path.write_text(json.dumps({"store": "store-a", "nodes": ["mem0:1", "mem0:2"]}))
    assert note.noted() == {"mem0:1", "mem0:2"}
