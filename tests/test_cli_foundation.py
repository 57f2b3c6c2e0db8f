"""The command line: init, check, status, export and import, as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_memsync, write_config

PMM_CONFIG = """
[sync]
active = "notes"

[providers.notes]
type = "pmm-dir"
path = "{home}/notes"
scope_key = "alice"

[providers.copy]
type = "pmm-dir"
path = "{home}/copy"
scope_key = "alice"
direction = "push"
"""

HEADER = {
    "pmm_version": 1,
    "exported_at": "2026-11-30T09:00:00Z",
    "source_provider": "mem0",
    "scope": {},
}


def pmm_file(path: Path, *records: object, header: object = HEADER) -> Path:
    lines = [json.dumps(header)] + [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def setup(home: Path) -> None:
    write_config(home, PMM_CONFIG.format(home=home))


def test_init_writes_a_private_starter_config_and_refuses_to_overwrite(cli, home: Path) -> None:  # type: ignore[no-untyped-def]
    (home / "config").rmdir()
    result = cli("init")
    config = home / "config" / "config.toml"
    assert result.exit_code == 0 and config.exists()
    assert config.stat().st_mode & 0o777 == 0o600
    config.write_text("# mine\n")
    result = cli("init")
    assert result.exit_code == 1 and "--force" in result.output
    assert config.read_text() == "# mine\n"
    assert cli("init", "--force").exit_code == 0
    assert "[providers.mem0]" in config.read_text()


def test_starter_config_is_valid(cli, home: Path) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--force")
    result = cli("status")
    assert result.exit_code == 0 and "active: mem0" in result.output


def test_missing_config_is_one_line_and_exit_2(home: Path) -> None:
    result = run_memsync(home, "check")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "memsync init" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_config_is_one_line_naming_the_key(home: Path) -> None:
    write_config(
        home,
        PMM_CONFIG.format(home=home).replace(
            'scope_key = "alice"\ndirection', 'scope_key = "alice"\ndirecton'
        ),
    )
    result = run_memsync(home, "check")
    assert result.returncode == 2
    assert "providers.copy.directon: unknown key" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_reaches_every_provider(cli, home: Path) -> None:  # type: ignore[no-untyped-def]
    setup(home)
    result = cli("check")
    assert result.exit_code == 0
    assert "notes [pmm-dir] (active): reachable, 0 memories" in result.output


def test_check_says_a_type_that_is_not_built_is_not_available(cli, home: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memsync import providers

    monkeypatch.setitem(providers.FACTORIES, "cognee", "memsync.providers.not_built_yet:build")
    write_config(
        home,
        PMM_CONFIG.format(home=home)
        + '\n[providers.cg]\ntype = "cognee"\nbase_url = "http://127.0.0.1:1"\ndataset = "d"\n',
    )
    result = cli("check")
    assert result.exit_code == 1
    assert "cg [cognee]: not available" in result.output
    assert "notes [pmm-dir] (active): reachable" in result.output


def test_import_then_export_round_trips(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    setup(home)
    source = pmm_file(
        tmp_path / "in.jsonl",
        {"id": "m1", "content": "likes tea", "metadata": {"topic": "drinks"}, "scope_key": "alice"},
        {"id": "m2", "content": "lives in Porto", "metadata": {}, "scope_key": "alice"},
    )
    assert cli("import", str(source), "--into", "notes").exit_code == 0
    out = tmp_path / "out.jsonl"
    result = cli("export", "--provider", "notes", "-o", str(out))
    assert result.exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["pmm_version"] == 1
    assert sorted((r["content"], r["metadata"].get("topic")) for r in lines[1:]) == [
        ("likes tea", "drinks"),
        ("lives in Porto", None),
    ]


def test_import_reports_duplicates_empties_and_rejections(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    setup(home)
    source = pmm_file(
        tmp_path / "in.jsonl",
        {"id": "m1", "content": "likes tea"},
        {"id": "m2", "content": "   "},
        {"id": "m3", "content": 12},
        {"id": "m4", "content": "likes tea"},
        "not json at all",
        {"id": "m5", "content": "lives in Porto"},
    )
    result = cli("import", str(source), "--into", "notes", "--json")
    assert result.exit_code == 1  # some records were rejected
    report = json.loads(result.output)
    # m4 holds m1's text under another id: a second copy, kept (the target held none), the
    # way sync pairs copies one to one (memsync.base.sameness).
    assert report["imported"] == 3
    assert not [s for s in report["skipped"] if s["reason"] == "duplicate"]
    assert {"id": "m2", "reason": "empty content"} in report["skipped"]
    assert [r["location"] for r in report["rejected"]] == ["line 4", "line 6"]
    again = json.loads(cli("import", str(source), "--into", "notes", "--json").output)
    assert again["imported"] == 0
    assert sorted(s["id"] for s in again["skipped"] if s["reason"] == "duplicate") == [
        "m1",
        "m4",
        "m5",
    ]


def test_overwrite_replaces_memories_with_the_same_id(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    setup(home)
    cli(
        "import",
        str(pmm_file(tmp_path / "a.jsonl", {"id": "m1", "content": "old text"})),
        "--into",
        "notes",
    )
    newer = pmm_file(tmp_path / "b.jsonl", {"id": "m1", "content": "new text"})
    report = json.loads(
        cli("import", str(newer), "--into", "notes", "--strategy", "overwrite", "--json").output
    )
    assert (report["imported"], report["updated"]) == (0, 1)
    exported = cli("export", "--provider", "notes").output
    assert "new text" in exported and "old text" not in exported


def test_invalid_header_writes_nothing(home: Path, tmp_path: Path) -> None:
    setup(home)
    source = pmm_file(
        tmp_path / "bad.jsonl", {"id": "m1", "content": "x"}, header={"pmm_version": 9}
    )
    result = run_memsync(home, "import", str(source), "--into", "notes")
    assert result.returncode == 3 and "pmm_version 9 is not supported" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (home / "notes").exists() or not any((home / "notes").iterdir())


def test_dry_run_writes_nothing(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    setup(home)
    source = pmm_file(tmp_path / "in.jsonl", {"id": "m1", "content": "x"})
    result = cli("import", str(source), "--into", "notes", "--dry-run")
    assert result.exit_code == 0 and "would import 1 new" in result.output
    assert not (home / "notes").exists() or not any((home / "notes").iterdir())


def test_import_into_an_unknown_provider_is_refused(home: Path, tmp_path: Path) -> None:
    setup(home)
    source = pmm_file(tmp_path / "in.jsonl", {"id": "m1", "content": "x"})
    result = run_memsync(home, "import", str(source), "--into", "nope")
    assert result.returncode == 2
    assert "no provider named 'nope'" in result.stderr and "notes" in result.stderr


def test_status_json_lists_providers(cli, home: Path) -> None:  # type: ignore[no-untyped-def]
    setup(home)
    report = json.loads(cli("status", "--json").output)
    assert report["config"]["ok"] and report["config"]["active"] == "notes"
    assert set(report["providers"]) == {"notes", "copy"}
    assert report["daemon"] == {"running": False}


def test_status_survives_a_broken_config(cli, home: Path) -> None:  # type: ignore[no-untyped-def]
    write_config(home, "[sync\n")
    result = cli("status")
    assert result.exit_code == 0 and "invalid TOML" in result.output


def test_a_corrupt_staging_database_halts_and_repair_rebuilds_it(
    home: Path, tmp_path: Path
) -> None:
    setup(home)
    source = pmm_file(
        tmp_path / "in.jsonl", *({"id": f"m{i}", "content": f"memory {i}"} for i in range(5))
    )
    assert run_memsync(home, "import", str(source), "--into", "notes").returncode == 0
    assert run_memsync(home, "sync").returncode == 0
    database = home / "state" / "staging.db"
    database.write_bytes(b"\x00garbage" * 4096)
    for suffix in ("-wal", "-shm"):
        Path(str(database) + suffix).unlink(missing_ok=True)
    halted = run_memsync(home, "sync")
    assert halted.returncode == 4 and "memsync repair" in halted.stderr
    assert "Traceback" not in halted.stderr
    repaired = run_memsync(home, "repair")
    assert repaired.returncode == 0, repaired.stderr
    assert list((home / "state").glob("staging.db.corrupt-*"))  # the old file is kept aside
    assert run_memsync(home, "verify", "notes", "copy").returncode == 0
    copy = (home / "copy" / "alice.pmm.jsonl").read_text().splitlines()
    assert len(copy) == 6  # header + 5 memories: nothing duplicated by the rebuild
