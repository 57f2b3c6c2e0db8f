"""`memsync restore --provider NAME --at TIME`: a provider as it stood, rebuilt from the journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import write_config
from tests.test_cli_foundation import PMM_CONFIG, pmm_file


def synced_then_changed(cli: Any, home: Path, tmp_path: Path) -> str:
    """notes held only 'likes tea' at the returned time; it holds a second memory since."""
    write_config(home, PMM_CONFIG.format(home=home))
    backup = pmm_file(tmp_path / "in.pmm.jsonl", {"id": "m1", "content": "likes tea"})
    assert cli("import", str(backup), "--into", "notes").exit_code == 0
    assert cli("sync").exit_code == 0
    entries = json.loads(cli("log", "--json").output)
    at = max(e["at"] for e in entries)
    later = pmm_file(tmp_path / "later.pmm.jsonl", {"id": "m2", "content": "moved to Oslo"})
    assert cli("import", str(later), "--into", "notes").exit_code == 0
    assert cli("sync").exit_code == 0
    return str(at)


def records_of(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *records = (json.loads(line) for line in text.splitlines())
    return header, records


def test_restore_at_a_time_writes_the_memories_as_they_stood_to_a_file(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    at = synced_then_changed(cli, home, tmp_path)
    out = tmp_path / "then.pmm.jsonl"
    result = cli("restore", "--provider", "notes", "--at", at, "-o", str(out))
    assert result.exit_code == 0
    assert result.stderr == f"1 memories of notes as they stood at {at}\n"
    header, records = records_of(out.read_text())
    assert header["source_provider"] == "notes"
    assert header["scope"] == {"provider": "notes", "at": at}
    assert [r["content"] for r in records] == ["likes tea"]


def test_restore_at_a_time_without_a_file_writes_to_standard_output(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    at = synced_then_changed(cli, home, tmp_path)
    result = cli("restore", "--provider", "notes", "--at", at)
    assert result.exit_code == 0
    _, records = records_of(result.stdout)
    assert [r["content"] for r in records] == ["likes tea"]
