"""pmm-dir passes the provider contract, and no scope key can escape its directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memsync.base.pmm import open_pmm
from memsync.base.records import Outgoing
from memsync.providers.base import Provider
from memsync.providers.pmm_dir import PmmDirProvider, scope_file_name
from tests.conftest import write_config
from tests.contract import ProviderContract, list_all


class TestPmmDirContract(ProviderContract):
    @pytest.fixture
    def factory(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        def make(scope: str) -> Provider:
            provider = PmmDirProvider("backup", tmp_path / "pmm", scope_key=scope)
            provider.open()
            return provider

        return make

    def insert_empty(self, provider: Provider) -> str:
        assert isinstance(provider, PmmDirProvider)
        path = provider.root / scope_file_name(provider.scope_key())
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": "empty-1", "content": "", "metadata": {}}) + "\n")
        return "empty-1"


@pytest.mark.parametrize(
    "scope_key", ["../escape", "/etc/passwd", "..", ".", "a/../../b", "nul\x00byte", "~root", ""]
)
def test_scope_key_never_names_a_path_outside_the_directory(tmp_path: Path, scope_key: str) -> None:
    root = tmp_path / "pmm"
    provider = PmmDirProvider("backup", root)
    provider.open()
    provider.create(Outgoing(origin="test:x", content="hello", scope_key=scope_key))
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == 1
    assert written[0].parent == root
    (record,), _ = list_all(provider)
    assert record.scope_key == (scope_key or "default")


def test_files_are_valid_pmm_readable_by_other_tools(tmp_path: Path) -> None:
    provider = PmmDirProvider("backup", tmp_path, scope_key="alice")
    provider.open()
    provider.create(Outgoing(origin="mem0:1", content="likes tea", metadata={"topic": "drinks"}))
    lines = (tmp_path / "alice.pmm.jsonl").read_text().splitlines()
    header, record = json.loads(lines[0]), json.loads(lines[1])
    assert header["pmm_version"] == 1 and header["scope"] == {"scope_key": "alice"}
    assert record["id"] == "mem0:1" and record["content"] == "likes tea"
    assert record["metadata"]["topic"] == "drinks"  # user keys stay top-level
    assert record["scope_key"] == "alice"
    with open_pmm(tmp_path / "alice.pmm.jsonl") as reader:
        assert [r.content for r in reader] == ["likes tea"]  # type: ignore[union-attr]


def test_files_are_private(tmp_path: Path) -> None:
    provider = PmmDirProvider("backup", tmp_path / "pmm", scope_key="alice")
    provider.open()
    provider.create(Outgoing(origin="mem0:1", content="secret diary"))
    assert (tmp_path / "pmm").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "pmm" / "alice.pmm.jsonl").stat().st_mode & 0o777 == 0o600


def test_a_path_that_is_a_file_is_a_one_line_error_and_the_others_still_sync(
    home: Path, tmp_path: Path, cli: Any
) -> None:
    """`path` naming a file (a PMM file, say) instead of a directory: the provider fails with a
    line that says what to do, the cycle exits non-zero, the other providers still sync."""
    source = tmp_path / "kept"
    provider = PmmDirProvider("kept", source)
    provider.open()
    provider.create(Outgoing(origin="mem0:1", content="still here"))
    a_file = tmp_path / "export.jsonl"
    a_file.write_text("not a directory\n")
    write_config(
        home,
        f"""
[sync]
active = "kept"
[providers.kept]
type = "pmm-dir"
path = "{source}"
[providers.other]
type = "pmm-dir"
path = "{tmp_path / "other"}"
[providers.wrong]
type = "pmm-dir"
path = "{a_file}"
""",
    )
    result = cli("sync")
    assert result.exit_code != 0
    assert f"wrong: {a_file} is a file" in result.output  # its one failure line
    assert "point `path` at a directory" in result.output
    assert "Traceback" not in result.output
    assert a_file.read_text() == "not a directory\n"
    other = PmmDirProvider("other", tmp_path / "other")
    other.open()
    assert [r.content for r in list_all(other)[0]] == ["still here"]
