"""--scope (status, verify, log) is parsed once, the same way everywhere: a bad one is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.test_cli_foundation import PMM_CONFIG


@pytest.mark.parametrize("command", [("status",), ("verify", "notes", "copy"), ("log",)])
@pytest.mark.parametrize("scope", ["bad", "user_id=", "colour=blue"])
def test_a_malformed_scope_is_one_line_and_exit_1(
    cli: Any, home: Path, command: tuple[str, ...], scope: str
) -> None:
    write_config(home, PMM_CONFIG.format(home=home))
    result = cli(*command, "--scope", scope)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"memsync: error: --scope {scope!r}: expected KEY=VALUE[,KEY=VALUE] with keys from "
        "user_id, agent_id, app_id, run_id, e.g. --scope user_id=alice\n"
    )
