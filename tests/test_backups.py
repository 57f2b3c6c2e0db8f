"""Backups: PMM snapshots of the mirror, rotated, never broken by a failure, restorable."""

from __future__ import annotations

import errno
import gzip
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memsync.base.paths import resolve_paths
from memsync.base.pmm import Rejected, open_pmm
from memsync.base.records import Record
from memsync.config import load_config
from memsync.orchestration import backups
from memsync.orchestration.backups import family_of, list_backups, take_backups
from memsync.providers import FACTORIES
from memsync.providers.base import Provider
from memsync.staging import StagingStore
from tests.conftest import run_memsync, subprocess_env, write_config

CONFIG = """
[sync]
active = "notes"

[backup]
keep = {keep}
gzip = {gzip}

[providers.notes]
type = "pmm-dir"
path = "{home}/notes"
scope_key = "alice"

[providers.copy]
type = "pmm-dir"
path = "{home}/copy"
scope_key = "alice"

[providers.spare]
type = "pmm-dir"
path = "{home}/spare"
scope_key = "alice"
direction = "push"
"""

HEADER = {
    "pmm_version": 1,
    "exported_at": "2026-11-30T09:00:00Z",
    "source_provider": "pmm",
    "scope": {},
}
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def seed(home: Path, count: int = 3, *, keep: int = 2, gzip_on: bool = False, pad: int = 0) -> None:
    """A config and a notes file with COUNT memories (PAD more characters each), mirrored."""
    write_config(home, CONFIG.format(home=home, keep=keep, gzip=str(gzip_on).lower()))
    notes = home / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(HEADER)] + [
        json.dumps(
            {
                "id": f"m{i}",
                "content": f"memory number {i}" + "." * pad,
                "metadata": {"n": i},
                "scope_key": "alice",
            }
        )
        for i in range(count)
    ]
    (notes / "alice.pmm.jsonl").write_text("\n".join(lines) + "\n")
    result = run_memsync(home, "sync")
    assert result.returncode == 0, result.stderr


def read_backup(path: Path) -> list[str]:
    with open_pmm(path) as reader:
        return sorted(r.content for r in reader if isinstance(r, Record))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def backup_at(
    home: Path, at: datetime, only: list[str] | None = None
) -> list[backups.BackupOutcome]:
    paths = resolve_paths()
    return take_backups(paths, load_config(paths.config_file), only=only, now=at)


def test_backups_keep_the_newest_n_per_provider(home: Path) -> None:
    seed(home, keep=2)
    for minutes in (0, 10, 20):
        outcomes = backup_at(home, T0 + timedelta(minutes=minutes))
        assert all(o.ok and o.count == 3 for o in outcomes), outcomes
    for provider in ("notes", "copy", "spare"):
        files = list_backups(home / "data" / "backups" / provider)
        assert [f.name for f in files] == [
            "2026-11-30T091000.000000Z.pmm.jsonl",
            "2026-11-30T092000.000000Z.pmm.jsonl",
        ]
        assert read_backup(files[-1]) == ["memory number 0", "memory number 1", "memory number 2"]
        assert files[-1].stat().st_mode & 0o777 == 0o600


def test_rotation_leaves_files_memsync_did_not_name(home: Path) -> None:
    seed(home, keep=1)
    directory = home / "data" / "backups" / "notes"
    directory.mkdir(parents=True)
    (directory / "my-own-copy.pmm.jsonl").write_text("mine")
    backup_at(home, T0, only=["notes"])
    backup_at(home, T0 + timedelta(minutes=1), only=["notes"])
    assert sorted(p.name for p in directory.iterdir()) == [
        "2026-11-30T090100.000000Z.pmm.jsonl",
        "my-own-copy.pmm.jsonl",
    ]


def test_two_backups_in_the_same_instant_get_distinct_names(home: Path) -> None:
    seed(home, keep=5)
    first = backup_at(home, T0, only=["notes"])[0]
    second = backup_at(home, T0, only=["notes"])[0]
    assert first.path != second.path and first.path and second.path
    assert len(list_backups(home / "data" / "backups" / "notes")) == 2


@pytest.fixture
def failing_mirror(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BaseException]]:
    """Make the mirror's record stream fail after one record with the exception queued."""
    errors: list[BaseException] = []
    real = StagingStore.iter_records

    def iter_records(self: StagingStore, provider: str) -> Iterator[Record]:
        for index, record in enumerate(real(self, provider)):
            if index == 1 and errors:
                raise errors.pop(0)
            yield record

    monkeypatch.setattr(StagingStore, "iter_records", iter_records)
    yield errors


@pytest.mark.parametrize(
    "failure",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        sqlite3.DatabaseError("database disk image is malformed"),
    ],
    ids=["disk-full", "unreadable-mirror"],
)
def test_a_failed_backup_leaves_the_previous_ones_and_no_temp_file(
    home: Path, failing_mirror: list[BaseException], failure: BaseException
) -> None:
    seed(home, keep=2)
    backup_at(home, T0, only=["notes"])
    backup_at(home, T0 + timedelta(minutes=1), only=["notes"])
    directory = home / "data" / "backups" / "notes"
    before = snapshot(directory)

    failing_mirror.append(failure)
    outcome = backup_at(home, T0 + timedelta(minutes=2), only=["notes"])[0]
    assert outcome.error and "the previous backups are untouched" in outcome.error
    assert outcome.path is None and outcome.removed == []
    if isinstance(failure, OSError):
        assert "the disk is full" in outcome.error
    assert snapshot(directory) == before  # nothing rotated, nothing half-written, no temp file
    assert read_backup(directory / sorted(before)[-1]) == [
        "memory number 0",
        "memory number 1",
        "memory number 2",
    ]


def test_a_failing_provider_costs_only_its_own_backup(
    home: Path, failing_mirror: list[BaseException]
) -> None:
    seed(home)
    failing_mirror.append(OSError(errno.EIO, "Input/output error"))
    outcomes = {o.provider: o for o in backup_at(home, T0)}
    assert outcomes["notes"].error and not outcomes["notes"].path
    assert outcomes["copy"].ok and outcomes["copy"].path and outcomes["spare"].ok


LIMIT = 64 * 1024  # room for SQLite's 32 KiB shared-memory file, not for the backup


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_real_write_failure_in_a_separate_process_keeps_the_previous_backup(home: Path) -> None:
    """RLIMIT_FSIZE makes the kernel refuse writes past 64 KiB, as a full disk would refuse them."""
    seed(home, count=400, keep=2, pad=300)
    assert run_memsync(home, "backup", "--provider", "notes").returncode == 0
    directory = home / "data" / "backups" / "notes"
    before = snapshot(directory)
    assert len(next(iter(before.values()))) > LIMIT

    result = subprocess.run(
        [sys.executable, "-m", "memsync", "backup", "--provider", "notes"],
        env=subprocess_env(MEMSYNC_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_file_size,
    )
    assert result.returncode == 1
    assert "notes: FAILED: cannot write a backup" in result.stdout
    assert "Traceback" not in result.stderr
    assert snapshot(directory) == before


def test_a_temp_file_left_by_a_killed_backup_is_swept(home: Path) -> None:
    seed(home)
    dead = subprocess.Popen(["true"])
    dead.wait()
    directory = home / "data" / "backups" / "notes"
    directory.mkdir(parents=True)
    leftover = directory / f".2026-11-30T080000.000000Z.pmm.jsonl.{dead.pid}.tmp"
    leftover.write_text("half a backu")
    mine = directory / f".2026-11-30T080000.000000Z.pmm.jsonl.{os.getpid()}.tmp"
    mine.write_text("being written right now by this process")
    backup_at(home, T0, only=["notes"])
    assert not leftover.exists() and mine.exists()


def test_gzip_backups_restore_into_a_provider(home: Path) -> None:
    seed(home, gzip_on=True)
    result = run_memsync(home, "backup", "--provider", "notes")
    assert result.returncode == 0, result.stderr
    [path] = list_backups(home / "data" / "backups" / "notes")
    assert path.name.endswith(".pmm.jsonl.gz")
    with gzip.open(path, "rt") as f:
        assert json.loads(f.readline())["pmm_version"] == 1

    # The user loses the notes file; the backup brings the memories back, ids and metadata too.
    (home / "notes" / "alice.pmm.jsonl").unlink()
    restored = run_memsync(home, "restore", str(path), "--into", "notes")
    assert restored.returncode == 0, restored.stderr
    assert "restored 3 new" in restored.stdout
    lines = [
        json.loads(line)
        for line in (home / "notes" / "alice.pmm.jsonl").read_text().splitlines()[1:]
    ]
    assert sorted((r["content"], r["metadata"]["n"]) for r in lines) == [
        ("memory number 0", 0),
        ("memory number 1", 1),
        ("memory number 2", 2),
    ]
    # pmm-dir writes a restored memory under its origin key (pmm:m0), the id sync knows it by.
    assert sorted(r["id"] for r in lines) == ["pmm:m0", "pmm:m1", "pmm:m2"]

    again = run_memsync(home, "restore", str(path), "--into", "notes")
    assert (
        again.returncode == 0
        and "restored 0 new, 0 replaced into notes; 3 already there" in again.stdout
    )


def test_a_backup_of_one_provider_restores_into_another_without_duplicates(home: Path) -> None:
    seed(home)
    backup_at(home, T0, only=["notes"])
    [path] = list_backups(home / "data" / "backups" / "notes")
    # copy already holds the same memories (synced): skip_duplicates recognises every one.
    restored = run_memsync(home, "restore", str(path), "--into", "copy")
    assert restored.returncode == 0 and "restored 0 new" in restored.stdout
    assert "3 already there" in restored.stdout


def test_backup_command_reports_and_skips_what_was_never_mirrored(home: Path) -> None:
    write_config(home, CONFIG.format(home=home, keep=2, gzip="false"))
    before_sync = run_memsync(home, "backup")
    assert before_sync.returncode == 0
    assert "notes: skipped: nothing mirrored yet (run `memsync sync` first)" in before_sync.stdout
    seed(home)
    result = run_memsync(home, "backup", "--json")
    assert result.returncode == 0
    report = {o["provider"]: o for o in json.loads(result.stdout)}
    assert report["notes"]["count"] == 3 and Path(report["notes"]["path"]).exists()
    status = json.loads(run_memsync(home, "status", "--json").stdout)
    assert status["backups"]["notes"]["count"] == 1
    assert status["backups"]["notes"]["path"] == report["notes"]["path"]


def test_backup_of_an_unknown_provider_is_refused(home: Path) -> None:
    seed(home)
    result = run_memsync(home, "backup", "--provider", "nope")
    assert result.returncode == 2 and "no provider named 'nope'" in result.stderr


def test_backup_header_family_is_the_providers_own() -> None:
    """family_of(type) must agree with each provider class, or restores would mint new origins."""
    import importlib

    checked = 0
    for provider_type, target in FACTORIES.items():
        module_name = target.partition(":")[0]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Provider)
                and getattr(value, "type", None) == provider_type
            ):
                assert value.family == family_of(provider_type), provider_type
                checked += 1
    assert checked >= 1


def test_backups_hold_every_record_the_mirror_holds(home: Path) -> None:
    seed(home, count=25)
    outcome = backup_at(home, T0, only=["copy"])[0]
    assert outcome.path is not None
    with open_pmm(outcome.path) as reader:
        items = list(reader)
        assert reader.header.source_provider == "pmm"
        assert reader.header.scope["provider"] == "copy"
    assert not [i for i in items if isinstance(i, Rejected)]
    assert len(items) == outcome.count == 25
