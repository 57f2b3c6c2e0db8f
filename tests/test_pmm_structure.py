"""A PMM file whose structure is wrong is refused whole: exit 3, the field and where, no write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_memsync
from tests.test_cli_foundation import HEADER, pmm_file, setup

GOOD = {"id": "m1", "content": "a good record before the bad one"}


def json_file(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda d: json_file(d / "a.json", {**HEADER, "records": {"0": GOOD}}),
            "top-level field 'records' must be an array, got an object",
        ),
        (
            lambda d: json_file(d / "b.json", {**HEADER, "records": "nope"}),
            "top-level field 'records' must be an array, got a string",
        ),
        (
            lambda d: json_file(d / "c.json", {**HEADER, "records": [GOOD, ["x"]]}),
            "record 1 (in 'records') must be a JSON object, got an array",
        ),
        (
            lambda d: json_file(d / "d.json", {**HEADER, "records": [GOOD, "text"]}),
            "record 1 (in 'records') must be a JSON object, got a string",
        ),
        (
            lambda d: pmm_file(d / "e.jsonl", GOOD, json.dumps("just text")),
            "line 3 must be a JSON object (a PMM record), got a string",
        ),
        (
            lambda d: pmm_file(d / "f.jsonl", GOOD, json.dumps([GOOD])),
            "line 3 must be a JSON object (a PMM record), got an array",
        ),
        (
            lambda d: json_file(d / "g.json", {**HEADER, "scope": "alice", "records": [GOOD]}),
            "header field 'scope' must be an object",
        ),
        (
            lambda d: json_file(d / "h.json", {**HEADER, "source_provider": 7, "records": [GOOD]}),
            "header field 'source_provider' must be a non-empty string",
        ),
        (
            lambda d: pmm_file(d / "i.jsonl", GOOD, header={**HEADER, "exported_at": 1}),
            "header field 'exported_at' must be an ISO-8601 timestamp",
        ),
    ],
)
def test_structural_errors_exit_3_naming_the_field_and_write_nothing(
    cli,  # type: ignore[no-untyped-def]
    home: Path,
    tmp_path: Path,
    make: object,
    message: str,
) -> None:
    setup(home)
    source = make(tmp_path)  # type: ignore[operator]
    result = cli("import", str(source), "--into", "notes")
    assert result.exit_code == 3, result.output
    assert message in result.output
    assert str(source) in result.output  # where: the file (and the line or record)
    assert not (home / "notes").exists() or not any((home / "notes").iterdir())


def test_records_as_an_object_is_a_one_line_error_without_traceback(
    home: Path, tmp_path: Path
) -> None:
    setup(home)
    source = json_file(tmp_path / "obj.json", {**HEADER, "records": {"0": GOOD}})
    result = run_memsync(home, "import", str(source), "--into", "notes")
    assert result.returncode == 3
    assert "'records' must be an array" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
