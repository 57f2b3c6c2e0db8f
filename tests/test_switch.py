"""`memsync switch`: re-centre the star without losing a write or the user's config layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.test_cli_foundation import pmm_file

CONFIG = """# my memsync config
[sync]
active = "notes"  # the centre of the star

[providers.notes]
type = "pmm-dir"
path = "{home}/notes"
scope_key = "alice"

[providers.copy]
type = "pmm-dir"
path = "{home}/copy"
scope_key = "alice"
"""

BROKEN = '\n[providers.cg]\ntype = "cognee"\nbase_url = "http://127.0.0.1:1"\ndataset = "d"\n'


def test_switch_rewrites_only_active_and_syncs_around_the_new_backend(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    config = write_config(home, CONFIG.format(home=home))
    backup = pmm_file(tmp_path / "in.pmm.jsonl", {"id": "m1", "content": "likes tea"})
    assert cli("import", str(backup), "--into", "notes").exit_code == 0
    result = cli("switch", "copy")
    assert result.exit_code == 0, result.output
    assert result.output.endswith("switched: copy is now the active backend (was notes)\n")
    assert config.read_text() == CONFIG.format(home=home).replace(
        'active = "notes"', 'active = "copy"'
    )
    verified = cli("verify", "notes", "copy")
    assert verified.exit_code == 0 and "reconciled" in verified.output


def test_switch_says_it_syncs_around_the_old_backend_first_as_it_happens(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    write_config(home, CONFIG.format(home=home))
    backup = pmm_file(
        tmp_path / "in.pmm.jsonl",
        {"id": "m1", "content": "likes tea"},
        {"id": "m2", "content": "works at Acme"},
    )
    assert cli("import", str(backup), "--into", "notes").exit_code == 0  # not synced yet
    result = cli("switch", "copy")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    first = lines.index(
        "1/2: syncing around notes (the active backend now) first, so nothing pending is lost"
    )
    second = lines.index(
        "2/2: that cycle wrote 2; [sync] active = 'copy' in the config now; syncing around copy"
    )
    assert first == 0 and second > first


def test_switching_to_the_active_backend_runs_nothing(cli: Any, home: Path) -> None:
    config = write_config(home, CONFIG.format(home=home))
    result = cli("switch", "notes")
    assert result.exit_code == 0
    assert result.output == "notes is already the active backend\n"
    assert config.read_text() == CONFIG.format(home=home)
    assert not (home / "state" / "staging.db").exists()  # no cycle ran


def test_switch_refuses_when_the_cycle_before_fails_and_keeps_the_config(
    cli: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsync import providers

    monkeypatch.setitem(providers.FACTORIES, "cognee", "memsync.providers.not_built_yet:build")
    config = write_config(home, CONFIG.format(home=home) + BROKEN)
    result = cli("switch", "copy")
    assert result.exit_code == 1
    assert "cg: " in result.stdout  # the failed cycle is shown
    assert result.stderr == (
        "memsync: error: the last cycle around notes did not finish cleanly; fix that first "
        "(nothing was switched)\n"
    )
    assert config.read_text() == CONFIG.format(home=home) + BROKEN


def test_switch_to_an_unknown_provider_is_one_line(cli: Any, home: Path) -> None:
    config = write_config(home, CONFIG.format(home=home))
    result = cli("switch", "nope")
    assert result.exit_code != 0
    assert result.stderr.startswith("memsync: error: ") and result.stderr.count("\n") == 1
    assert config.read_text() == CONFIG.format(home=home)
