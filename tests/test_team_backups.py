"""A team's backups: a snapshot of a provider synced per scope holds every scope, and restores
each memory into its own scope.

Real parts: a Mem0 library store (mem0ai offline) with three users, ``user_id = "*"``, a real
mnem store per user from a path template, a pmm-dir beside them, the ``memsync`` commands.
Before, ``memsync backup`` skipped every provider of such a config ("nothing mirrored yet")
and exited 0 while thousands of memories were mirrored.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memsync.base.paths import resolve_paths
from memsync.base.pmm import open_pmm
from memsync.base.records import Record
from memsync.config import load_config
from memsync.orchestration.backups import list_backups
from memsync.orchestration.daemon.service import Daemon
from memsync.staging import StagingStore
from tests.test_scopes import USERS, configure, mnem_texts, team, texts_for

__all__ = ["team"]  # the fixture, shared with test_scopes

TOTAL = sum(USERS.values())


def records_of(path: Path) -> list[Record]:
    with open_pmm(path) as reader:
        return [r for r in reader if isinstance(r, Record)]


def test_a_teams_backup_holds_every_scope_each_record_under_its_own(team: Path, cli: Any) -> None:
    import sqlite3

    assert cli("sync").exit_code == 0
    # The mirror as an older memsync left it: the mnem stores' records under the provider's
    # name, not their scope's key. The backup files each record under the scope it is in.
    conn = sqlite3.connect(resolve_paths().database)
    with conn:
        conn.execute("UPDATE records SET scope_key = 'agents' WHERE provider LIKE 'agents[%'")
    conn.close()
    result = cli("backup", "--json")
    assert result.exit_code == 0, result.output
    outcomes = {o["provider"]: o for o in json.loads(result.output)}
    assert set(outcomes) == {"mem0", "agents", "backup"}
    for name, outcome in outcomes.items():
        assert outcome["skipped"] is None and outcome["error"] is None, outcome
        assert outcome["count"] == TOTAL, name
        records = records_of(Path(outcome["path"]))
        by_scope: dict[str, set[str]] = {}
        for record in records:
            by_scope.setdefault(record.scope_key, set()).add(record.content)
        assert by_scope == {user: set(texts_for(user, n)) for user, n in USERS.items()}, name
    with open_pmm(Path(outcomes["agents"]["path"])) as reader:
        assert reader.header.scope["scopes"] == len(USERS)
        assert reader.header.scope["mirrored_at"]
    text = cli("backup").output
    assert "skipped" not in text
    assert f"agents: {TOTAL} memories -> " in text


def test_a_team_never_synced_is_skipped_and_says_why(home: Path, cli: Any) -> None:
    configure(home)
    result = cli("backup")
    assert result.exit_code == 0
    assert "agents: skipped: nothing mirrored yet (run `memsync sync` first)" in result.output


def test_a_teams_backup_restores_a_lost_store_into_its_own_scope(team: Path, cli: Any) -> None:
    assert cli("sync").exit_code == 0
    assert cli("backup", "--provider", "agents").exit_code == 0
    [path] = list_backups(team / "data" / "backups" / "agents")
    shutil.rmtree(team / "agents" / "alice")  # alice's store is lost

    restored = cli("restore", str(path), "--into", "agents")
    assert restored.exit_code == 0, restored.output
    alice = USERS["alice"]
    assert f"restored {alice} new, 0 replaced into agents; {TOTAL - alice} already there" in (
        restored.output
    )
    for user, count in USERS.items():  # alice's memories back in her store, nobody else's
        assert mnem_texts(team / "agents" / user / "memory") == set(texts_for(user, count))
    again = cli("restore", str(path), "--into", "agents")
    assert again.exit_code == 0 and f"restored 0 new, 0 replaced into agents; {TOTAL}" in (
        again.output
    )


def test_a_record_whose_scope_key_names_no_scope_is_refused_not_guessed(
    team: Path, cli: Any
) -> None:
    assert cli("sync").exit_code == 0
    header = {"pmm_version": 1, "exported_at": "2026-12-01T00:00:00Z", "source_provider": "pmm"}
    lines = [
        json.dumps({**header, "scope": {}}),
        json.dumps({"id": "n1", "content": "dave's note", "metadata": {}, "scope_key": "dave"}),
        json.dumps({"id": "n2", "content": "whose note?", "metadata": {}, "scope_key": ""}),
    ]
    path = team / "mixed.pmm.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = cli("import", str(path), "--into", "agents")
    assert result.exit_code == 1, result.output
    assert "failed n2: no scope_key: agents is synced per scope" in result.output
    assert mnem_texts(team / "agents" / "dave" / "memory") == {"dave's note"}


def test_a_team_snapshot_that_cannot_be_read_fails_and_exits_non_zero(
    team: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    assert cli("sync").exit_code == 0
    real = StagingStore.iter_records
    calls: Counter[str] = Counter()

    def failing(self: StagingStore, provider: str) -> Any:
        calls[provider] += 1
        if provider == "agents[user_id=carol]":
            raise sqlite3.DatabaseError("database disk image is malformed")
        return real(self, provider)

    monkeypatch.setattr(StagingStore, "iter_records", failing)
    result = cli("backup")
    assert result.exit_code == 1
    assert "agents: FAILED: cannot read the mirror of agents" in result.output
    assert not list_backups(team / "data" / "backups" / "agents")  # no partial snapshot
    assert list_backups(team / "data" / "backups" / "mem0")


def test_the_daemons_backup_job_covers_a_team(team: Path, cli: Any) -> None:
    """The daemon's [backup] job itself, as its scheduler calls it: every provider of a team's
    config gets a snapshot of all its scopes."""
    assert cli("sync").exit_code == 0
    paths = resolve_paths()
    Daemon(paths, load_config(paths.config_file)).jobs.backup()
    for name in ("mem0", "agents", "backup"):
        made = list_backups(paths.backups_dir / name)
        assert len(made) == 1, f"the job made {len(made)} backups of {name}"
        assert len(records_of(made[0])) == TOTAL, name
