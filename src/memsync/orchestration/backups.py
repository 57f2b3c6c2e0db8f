"""Scheduled PMM backups of what memsync mirrored: one snapshot per provider, newest N kept.

Each snapshot is streamed from the staging store into ``backups/<provider>/<UTC time>.pmm.jsonl``
(``.gz`` when ``[backup] gzip = true``) through a temporary file that is renamed into place,
and older snapshots are rotated out only after the new one is safely there: a crash or a full
disk never leaves a broken newest backup, nor costs an old one. ``memsync restore FILE --into
NAME`` reads them back.

A provider synced per scope (a team: ``user_id = "*"``, a mnem path template) is mirrored under
one name per scope (``server[user_id=alice]``); its snapshot is still one file, holding every
scope's memories one scope after another, each record's ``scope_key`` naming its scope (as
PMM allows), so a restore puts each memory back into its own scope's store.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths, make_private_dir
from memsync.base.pmm import Header, write_pmm_file
from memsync.base.processes import is_alive
from memsync.base.records import Record, utc_now_iso
from memsync.base.scopes import Scope, split_scoped_name
from memsync.config import Config
from memsync.config.scoping import scoped_config_keys
from memsync.staging import StagingStore

log = logging.getLogger(__name__)

SUFFIX = ".pmm.jsonl"
_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{6}\.\d{6}Z)\.pmm\.jsonl(\.gz)?$")
_STAMP = "%Y-%m-%dT%H%M%S.%fZ"
_TEMP = re.compile(r"^\..+\.(\d+)\.tmp$")  # files.atomic_writer's temporary names


@dataclass
class BackupOutcome:
    provider: str
    path: Path | None = None
    count: int = 0
    removed: list[Path] = field(default_factory=list)
    skipped: str | None = None  # why no snapshot was due (nothing mirrored yet)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "path": str(self.path) if self.path else None,
            "count": self.count,
            "removed": [str(p) for p in self.removed],
            "skipped": self.skipped,
            "error": self.error,
        }


def backup_name(at: datetime, *, compress: bool) -> str:
    """A file name that sorts by time and has no ':' (portable to every file system)."""
    return at.astimezone(UTC).strftime(_STAMP) + SUFFIX + (".gz" if compress else "")


def backup_time(path: Path) -> datetime | None:
    match = _NAME.match(path.name)
    if not match:
        return None
    return datetime.strptime(match.group(1), _STAMP).replace(tzinfo=UTC)


def list_backups(directory: Path) -> list[Path]:
    """A provider's snapshots, oldest first; files memsync did not name are never listed."""
    if not directory.is_dir():
        return []
    return sorted(
        (p for p in directory.iterdir() if _NAME.match(p.name) and p.is_file()),
        key=lambda p: p.name,
    )


def rotate(directory: Path, keep: int) -> list[Path]:
    """Remove all but the newest KEEP snapshots; returns what was removed."""
    removed: list[Path] = []
    for old in list_backups(directory)[:-keep] if keep > 0 else []:
        with contextlib.suppress(FileNotFoundError):  # a concurrent rotation got there first
            old.unlink()
            removed.append(old)
    return removed


def newest_backups(backups_dir: Path) -> dict[str, dict[str, Any]]:
    """For each provider directory, its newest snapshot: path, time, size and how many exist."""
    result: dict[str, dict[str, Any]] = {}
    if not backups_dir.is_dir():
        return result
    for directory in sorted(p for p in backups_dir.iterdir() if p.is_dir()):
        files = list_backups(directory)
        if not files:
            continue
        newest = files[-1]
        at = backup_time(newest)
        with contextlib.suppress(FileNotFoundError):
            result[directory.name] = {
                "path": str(newest),
                "at": at.isoformat().replace("+00:00", "Z") if at else None,
                "bytes": newest.stat().st_size,
                "count": len(files),
            }
    return result


def last_backup_time(backups_dir: Path) -> datetime | None:
    """When the oldest 'newest snapshot' among providers was taken: the backup due first."""
    times = [backup_time(Path(info["path"])) for info in newest_backups(backups_dir).values()]
    known = [t for t in times if t is not None]
    return min(known) if known else None


def family_of(provider_type: str) -> str:
    """The id namespace of a provider type (mem0-oss -> mem0, pmm-dir -> pmm), as its class says.

    Written as the PMM header's source_provider, so a restore derives the same origins
    (``mem0:{id}``) that the provider itself uses, and nothing is imported twice.
    """
    return provider_type.split("-", 1)[0]


def take_backups(
    paths: Paths,
    config: Config,
    *,
    only: list[str] | None = None,
    now: datetime | None = None,
) -> list[BackupOutcome]:
    """One snapshot of each configured provider's mirror; a failure costs only that provider."""
    names = only or list(config.providers)
    outcomes = [BackupOutcome(name) for name in names]
    if not paths.database.exists():
        for outcome in outcomes:
            outcome.skipped = "nothing mirrored yet (run `memsync sync` first)"
        return outcomes
    with StagingStore.open(paths.database, create=False, reading=True) as store:
        for outcome in outcomes:
            _backup_one(store, paths.backups_dir, config, outcome, now)
    return outcomes


def _backup_one(
    store: StagingStore,
    backups_dir: Path,
    config: Config,
    outcome: BackupOutcome,
    now: datetime | None,
) -> None:
    name = outcome.provider
    entry = config.provider(name)
    try:
        mirrored = _mirrored(store, config, name)
    except sqlite3.Error as exc:
        outcome.error = f"cannot read the mirror of {name}: {exc}; the previous backups stay"
        return
    if not mirrored:
        outcome.skipped = "nothing mirrored yet (run `memsync sync` first)"
        return
    directory = backups_dir / name
    scope: dict[str, Any] = {"provider": name, "type": entry.type}
    scope["mirrored_at"] = min((m.at for m in mirrored if m.at), default=None)
    if scoped_config_keys(config.providers):
        scope["scopes"] = len(mirrored)
    try:
        make_private_dir(directory)
        _sweep_stale_temps(directory)
        path = _fresh_path(directory, now or datetime.now(UTC), config.backup.gzip)
        header = Header(
            source_provider=family_of(entry.type), scope=scope, exported_at=utc_now_iso()
        )
        outcome.count = write_pmm_file(
            path, header, _records(store, mirrored), compress=config.backup.gzip
        )
        outcome.path = path
    except OSError as exc:
        hint = " (the disk is full)" if exc.errno == errno.ENOSPC else ""
        outcome.error = (
            f"cannot write a backup into {directory}: {exc.strerror or exc}{hint}; "
            "the previous backups are untouched"
        )
        return
    except (MemsyncError, sqlite3.Error) as exc:
        outcome.error = (
            f"cannot read the mirror of {name}: {exc}; the previous backups are untouched"
        )
        return
    try:
        outcome.removed = rotate(directory, config.backup.keep)
    except OSError as exc:
        outcome.error = (
            f"wrote {outcome.path} but could not remove older backups: {exc.strerror or exc}"
        )


@dataclass(frozen=True)
class _Mirrored:
    """One name a provider's memories are mirrored under, its scope, and when."""

    name: str
    scope: Scope | None
    at: str | None


def _mirrored(store: StagingStore, config: Config, name: str) -> list[_Mirrored]:
    """Where provider NAME's memories are mirrored: under its own name, or, synced per scope,
    under each scope's name (those a cycle has mirrored), in scope order."""
    if not scoped_config_keys(config.providers):
        last_cycle = store.providers.last_cycle(name)
        return [_Mirrored(name, None, _mirrored_at(last_cycle))] if last_cycle else []
    found = []
    for last in store.providers.last_cycles():
        split = split_scoped_name(last.name)
        if split is not None and split[0] == name and last.summary:
            found.append(_Mirrored(last.name, split[1], _mirrored_at(last.summary)))
    return sorted(found, key=lambda m: m.scope or Scope(()))


def _records(store: StagingStore, mirrored: list[_Mirrored]) -> Iterator[Record]:
    """Every mirrored record, each scope's ``scope_key`` its own (``Scope.pmm_key``)."""
    for where in mirrored:
        for record in store.iter_records(where.name):
            if where.scope is not None:
                record.scope_key = where.scope.pmm_key
            yield record


def _fresh_path(directory: Path, at: datetime, compress: bool) -> Path:
    """A name no other snapshot has (two in one microsecond step a microsecond apart)."""
    while True:
        path = directory / backup_name(at, compress=compress)
        other = directory / backup_name(at, compress=not compress)
        if not path.exists() and not other.exists():
            return path
        at += timedelta(microseconds=1)


def _mirrored_at(last_cycle: str | None) -> str | None:
    if not last_cycle:
        return None
    try:
        finished = json.loads(last_cycle).get("finished_at")
    except (ValueError, AttributeError):
        return None
    return finished if isinstance(finished, str) else None


def _sweep_stale_temps(directory: Path) -> None:
    """Remove temporary files a killed process left (no process of that pid runs any more)."""
    for path in directory.iterdir():
        match = _TEMP.match(path.name)
        if not match:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or is_alive(pid):
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            log.info("removed %s, left by an interrupted backup (pid %d)", path, pid)
