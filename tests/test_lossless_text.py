"""Text is carried byte for byte through staging, replay, PMM files and upgrades.

Normalisation (NFC, surrounding whitespace) lives only inside content_hash and fingerprint:
these tests hold memsync to handing back exactly the bytes it was given.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import unicodedata
from pathlib import Path

from memsync.base.records import Outgoing, normalise_text
from memsync.config import parse_config
from memsync.engine.from_config import build_engine
from memsync.engine.report import SyncOptions
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.engine_helpers import World

FIXTURES = Path(__file__).parent / "fixtures"
NFD = unicodedata.normalize("NFD", "café crème")
TRICKY = ["  padded  ", NFD, "\nleading newline", "crlf\r\n", "tab\t", "x" * 51_199 + " "]


def test_tricky_texts_reach_the_other_provider_unchanged(tmp_path: Path) -> None:
    world = World(tmp_path, {"a": "both", "b": "both"}, active="a")
    for text in TRICKY:
        world.providers["a"].app_add(text)
    world.sync()
    assert world.contents("b") == sorted(TRICKY)
    with StagingStore.open(world.db_path) as store:
        staged = {r.content for r in store.iter_records("b")}
    assert staged == set(TRICKY)


def test_a_second_cycle_after_tricky_texts_changes_nothing(tmp_path: Path) -> None:
    world = World(tmp_path, {"a": "both", "b": "both"}, active="a")
    for text in TRICKY:
        world.providers["a"].app_add(text)
    world.sync()
    writes = world.providers["b"].writes
    report = world.sync()
    assert report.planned_total == 0
    assert world.providers["b"].writes == writes


def test_a_store_that_strips_text_is_never_rewritten_nor_seen_changed(tmp_path: Path) -> None:
    # A provider declaring text_on_write="strip" holds "padded" for "  padded  ": the same
    # fingerprint, so no phantom change and no write every cycle, in either direction.
    world = World(tmp_path, {"a": "both", "b": "both"}, active="a")
    from memsync.providers.memory import MemoryProvider

    world.providers["b"] = MemoryProvider("b", world.stores["b"], family="b", strip_text=True)
    world.providers["a"].app_add("  padded  ")
    world.sync()
    assert world.contents("b") == ["padded"]
    assert world.contents("a") == ["  padded  "]
    for _ in range(2):
        report = world.sync()
        assert report.planned_total == 0
        assert all(o.mirror and o.mirror.changed == 0 for o in report.providers.values())
    assert world.providers["b"].writes == 1
    assert world.providers["a"].writes == 0


def test_a_store_that_turns_crlf_into_lf_is_never_rewritten_nor_seen_changed(
    tmp_path: Path,
) -> None:
    # Real Cognee reads uploads as text files: "a\r\nb" comes back as "a\nb". It declares
    # text_on_write="lf"; line endings are normalised inside the hashes, so the copy is the
    # same memory and is written once, never again every cycle.
    from tests.doubles.cognee_app import CogneeDouble
    from tests.test_provider_cognee import provider_on

    world = World(tmp_path, {"a": "both", "b": "both"}, active="a")
    double = CogneeDouble()
    cognee = provider_on(double)
    cognee.name = "b"
    world.providers["b"] = cognee
    world.providers["a"].app_add("windows\r\nline endings\r\n")
    world.sync()
    ((held, _),) = [(r.content, r) for r in _listed(cognee)]
    assert held == "windows\nline endings\n"
    assert world.contents("a") == ["windows\r\nline endings\r\n"]  # the source keeps its bytes
    uploads = len(double.faults.requests(method="POST"))
    for _ in range(2):
        report = world.sync()
        assert report.planned_total == 0
        assert all(o.mirror and o.mirror.changed == 0 for o in report.providers.values())
    assert len(double.faults.requests(method="POST")) == uploads


def _listed(provider: object) -> list[object]:
    listing = provider.listing()  # type: ignore[attr-defined]
    return [record for page in listing.pages() for record in page.records]


def test_whitespace_only_edits_are_not_edits(tmp_path: Path) -> None:
    world = World(tmp_path, {"a": "both", "b": "both"}, active="a")
    record_id = world.providers["a"].app_add("same words")
    world.sync()
    world.providers["a"].app_edit(record_id, "same words\n")
    report = world.sync()
    assert report.planned_total == 0
    assert world.contents("b") == ["same words"]
    with StagingStore.open(world.db_path) as store:  # but the mirror holds today's exact bytes
        assert [r.content for r in store.iter_records("a")] == ["same words\n"]


def _pmm_config(notes: Path, backup: Path) -> str:
    return "\n".join(
        [
            "[sync]",
            'active = "notes"',
            "[providers.notes]",
            'type = "pmm-dir"',
            f'path = "{notes}"',
            'scope_key = "me"',
            "[providers.backup]",
            'type = "pmm-dir"',
            f'path = "{backup}"',
            'scope_key = "me"',
            'direction = "push"',
        ]
    )


def test_a_staging_database_from_before_upgrades_without_changes_or_writes(
    tmp_path: Path,
) -> None:
    # v1_staging.db was written by memsync before this change (tests/fixtures/
    # make_v1_staging.py): it staged, and wrote to the backup, normalised texts. The notes
    # store holds what the application wrote, byte for byte.
    texts = {
        "pad": "  padded  ",
        "nfd": NFD,
        "nl": "\nleading newline",
        "plain": "plain text",
    }
    notes_dir, backup_dir = tmp_path / "notes", tmp_path / "backup"
    notes = PmmDirProvider("notes", notes_dir, scope_key="me")
    backup = PmmDirProvider("backup", backup_dir, scope_key="me")
    for provider, normalise in ((notes, False), (backup, True)):
        provider.open()
        for key, text in texts.items():
            content = normalise_text(text) if normalise else text
            provider.create(Outgoing(origin=f"pmm:{key}", content=content, scope_key="me"))
        provider.close()
    backup_file = next(backup_dir.iterdir())
    backup_bytes = backup_file.read_bytes()
    db = tmp_path / "staging.db"
    shutil.copy(FIXTURES / "v1_staging.db", db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 1
        staged = dict(conn.execute("SELECT provider_id, content FROM records"))
        assert staged["pmm:pad"] == "padded"  # the old, normalised form
        for name, provider in (("notes", notes), ("backup", backup)):
            conn.execute(
                "UPDATE providers SET identity = ? WHERE name = ?", (provider.identity(), name)
            )
        changes_before = conn.execute("SELECT COUNT(*) FROM changes").fetchone()[0]

    config = parse_config(_pmm_config(notes_dir, backup_dir))
    with StagingStore.open(db) as store:
        report = build_engine(config, store, {"notes": notes, "backup": backup}).run_cycle(
            SyncOptions()
        )
        assert report.exit_code == 0
        assert {n: o.mirror.changed for n, o in report.providers.items() if o.mirror} == {
            "notes": 0,
            "backup": 0,
        }
        assert report.planned_total == 0
        new_changes = store.conn.execute("SELECT COUNT(*) FROM changes").fetchone()[0]
        assert new_changes == changes_before
        exact = {r.id: r.content for r in store.iter_records("notes")}
    assert exact == {f"pmm:{k}": v for k, v in texts.items()}
    assert backup_file.read_bytes() == backup_bytes  # no target rewritten

    # and from now on an edit travels with its exact bytes
    notes.open()
    notes.update("pmm:pad", Outgoing(origin="pmm:pad", content="  still padded \n", scope_key="me"))
    notes.close()
    with StagingStore.open(db) as store:
        build_engine(config, store, {"notes": notes, "backup": backup}).run_cycle(SyncOptions())
    lines = [json.loads(line) for line in backup_file.read_text("utf-8").splitlines()[1:]]
    assert {r["id"]: r["content"] for r in lines}["pmm:pad"] == "  still padded \n"


def test_the_upgrade_refreshes_exact_bytes_even_where_the_version_token_is_unchanged(
    tmp_path: Path,
) -> None:
    # A provider with version tokens (Mem0, mnem) would otherwise skip an unchanged record
    # before comparing fingerprints, and the mirror would keep the old normalised text.
    from memsync.base.records import Record
    from memsync.engine.mirror import DeleteLimits, Mirror, check_identity
    from memsync.providers.memory import MemoryProvider, MemoryStore
    from memsync.staging.schema import MIGRATIONS
    from memsync.staging.store import _statements, record_row

    exact = "  padded, as the application wrote it \n"
    store = MemoryStore()
    provider = MemoryProvider("mem0", store, family="mem0")
    store.records["m1"] = Record("m1", exact, version="token-1", scope_key="")
    db = tmp_path / "staging.db"
    with sqlite3.connect(db, isolation_level=None) as conn:  # the schema of the old code
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT "
            "NOT NULL, description TEXT)"
        )
        for statement in _statements(MIGRATIONS[0].sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (1, '2026-11-01', 'v1')")
        old = Record("m1", normalise_text(exact), version="token-1")
        conn.execute(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            record_row("mem0", "mem0:m1", old, 1)[:15],
        )
        conn.execute(
            "INSERT INTO providers VALUES ('mem0', 'memory', ?, '2026-11-01', NULL)",
            (provider.identity(),),
        )
    with StagingStore.open(db) as staging:
        assert check_identity(staging, provider) is False
        result = Mirror(staging, provider, 2, DeleteLimits(50, 100)).run(provider.listing())
        assert (result.added, result.changed, result.removed) == (0, 0, 0)
        assert [r.content for r in staging.iter_records("mem0")] == [exact]
        assert [r.version for r in staging.iter_records("mem0")] == ["token-1"]
        assert staging.conn.execute("SELECT COUNT(*) FROM changes").fetchone()[0] == 0
