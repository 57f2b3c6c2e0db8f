"""check_providers: every provider is tried, in config order, and says how it answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsync.config import parse_config
from memsync.orchestration.checks import check_providers

CONFIG = """
[sync]
active = "notes"

[providers.notes]
type = "pmm-dir"
path = "{root}/notes"
scope_key = "alice"

[providers.mn]
type = "mnem"
path = "{root}/no-store-here"

[providers.cg]
type = "cognee"
base_url = "http://127.0.0.1:1"
dataset = "d"
"""


def test_each_provider_answers_ok_failed_or_unavailable_in_config_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsync import providers

    monkeypatch.setitem(providers.FACTORIES, "cognee", "memsync.providers.not_built_yet:build")
    config = parse_config(CONFIG.format(root=tmp_path), source="test", base_dir=tmp_path)
    checks = list(check_providers(config))
    assert [(c.name, c.type, c.active, c.answer) for c in checks] == [
        ("notes", "pmm-dir", True, "ok"),
        ("mn", "mnem", False, "failed"),
        ("cg", "cognee", False, "unavailable"),
    ]
    assert checks[0].detail.startswith("reachable, 0 memories")
    assert "no mnem store at" in checks[1].detail
    assert not (tmp_path / "no-store-here").exists()  # a check creates no store
