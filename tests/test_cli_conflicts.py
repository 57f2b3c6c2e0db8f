"""`memsync conflicts` and `memsync resolve`, as a user meets them: list, settle, see it applied."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.conftest import write_config
from tests.test_cli_foundation import pmm_file

CONFIG = """
[sync]
active = "notes"
conflict = "error"

[providers.notes]
type = "pmm-dir"
path = "{home}/notes"
scope_key = "alice"

[providers.copy]
type = "pmm-dir"
path = "{home}/copy"
scope_key = "alice"
"""


def edited_on_both_sides(cli: Any, home: Path, tmp_path: Path) -> None:
    """'likes tea' synced to both, then changed differently in each before the next cycle."""
    write_config(home, CONFIG.format(home=home))
    backup = pmm_file(tmp_path / "in.pmm.jsonl", {"id": "m1", "content": "likes tea"})
    assert cli("import", str(backup), "--into", "notes").exit_code == 0
    assert cli("sync").exit_code == 0
    for provider, text in (("notes", "likes green tea"), ("copy", "likes black tea")):
        file = home / provider / "alice.pmm.jsonl"
        file.write_text(file.read_text().replace("likes tea", text))


def test_an_open_conflict_is_listed_with_both_versions(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    edited_on_both_sides(cli, home, tmp_path)
    synced = cli("sync")
    assert synced.exit_code == 1
    assert "conflict #1 on mem0:m1 between copy, notes: open; `memsync resolve 1 --keep NAME`" in (
        synced.output
    )
    listed = cli("conflicts")
    assert listed.exit_code == 0
    lines = [
        re.sub(r"\(updated [^)]+\)", "(updated T)", line) for line in listed.output.splitlines()
    ]
    assert lines == [
        "#1 mem0:m1 [open, policy error]",
        "  copy: 'likes black tea' (updated T)",
        "  notes: 'likes green tea' (updated T)",
    ]


def test_resolve_keeps_the_chosen_version_everywhere(cli: Any, home: Path, tmp_path: Path) -> None:
    edited_on_both_sides(cli, home, tmp_path)
    assert cli("sync").exit_code == 1
    resolved = cli("resolve", "1", "--keep", "copy")
    assert resolved.exit_code == 0
    assert resolved.output.splitlines()[0] == "conflict #1: keeping copy's version"
    assert "notes: ok, listed 1 (+0 ~0 -0), wrote 1" in resolved.output
    assert "likes black tea" in (home / "notes" / "alice.pmm.jsonl").read_text()
    assert "likes green tea" not in (home / "notes" / "alice.pmm.jsonl").read_text()
    assert cli("conflicts").output == "no conflicts\n"
    assert cli("conflicts", "--all").output.splitlines()[0] == (
        "#1 mem0:m1 [resolved, policy error] kept copy"
    )


def test_resolve_no_sync_records_the_choice_for_the_next_cycle(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    edited_on_both_sides(cli, home, tmp_path)
    assert cli("sync").exit_code == 1
    resolved = cli("resolve", "1", "--keep", "notes", "--no-sync")
    assert resolved.exit_code == 0
    assert resolved.output == "conflict #1: keeping notes's version\n"
    assert "likes black tea" in (home / "copy" / "alice.pmm.jsonl").read_text()
    assert cli("sync").exit_code == 0
    assert "likes green tea" in (home / "copy" / "alice.pmm.jsonl").read_text()


def test_resolving_what_cannot_be_resolved_is_one_line(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    edited_on_both_sides(cli, home, tmp_path)
    assert cli("sync").exit_code == 1
    for args, message in (
        (("7", "--keep", "copy"), "no conflict #7; `memsync conflicts` lists them"),
        (("1", "--keep", "mem0"), "conflict #1 is between copy, notes; --keep one of them"),
    ):
        result = cli("resolve", *args)
        assert result.exit_code == 1
        assert result.stderr == f"memsync: error: {message}\n"
    assert cli("resolve", "1", "--keep", "copy").exit_code == 0
    again = cli("resolve", "1", "--keep", "copy")
    assert (again.exit_code, again.stderr) == (
        1,
        "memsync: error: conflict #1 is already resolved\n",
    )
