"""The command line is a package without an import circle.

Each command module imports ``cli/common.py`` and the library, never another command module
nor the group in ``cli/__init__.py``; the group adds every command. A command module that
reached for the group again would bring the old cli.py <-> cli_sync.py circle back.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import click
import pytest

import memsync.cli
from memsync.cli import main
from tests.conftest import subprocess_env

CLI_DIR = Path(memsync.cli.__file__).parent
COMMAND_MODULES = sorted(
    path.stem for path in CLI_DIR.glob("*.py") if path.name not in ("__init__.py", "common.py")
)
COMMANDS = {
    "backup",
    "check",
    "conflicts",
    "daemon",
    "export",
    "history",
    "import",
    "init",
    "log",
    "mcp",
    "migrate",
    "repair",
    "resolve",
    "restore",
    "service",
    "status",
    "switch",
    "sync",
    "ui",
    "verify",
}


def cli_imports(module: str) -> set[str]:
    """The parts of ``memsync.cli`` MODULE imports, anywhere in the file (also in functions).

    ``from memsync.cli import X`` counts as importing the group's package; a relative import
    is reported as such.
    """
    tree = ast.parse((CLI_DIR / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                found.add(f"relative import from {'.' * node.level}{node.module or ''}")
            elif node.module == "memsync.cli" or (node.module or "").startswith("memsync.cli."):
                found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found.update(
                alias.name
                for alias in node.names
                if alias.name == "memsync.cli" or alias.name.startswith("memsync.cli.")
            )
    return found


def test_the_package_has_command_modules() -> None:
    assert {"sync", "status", "daemon"} <= set(COMMAND_MODULES)


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_a_command_module_imports_only_common_from_the_cli(module: str) -> None:
    assert cli_imports(module) <= {"memsync.cli.common"}


def test_common_imports_nothing_from_the_cli() -> None:
    assert cli_imports("common") == set()


@pytest.mark.parametrize("module", ["common", *COMMAND_MODULES])
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import memsync.cli.{module}"],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_group_has_every_command() -> None:
    assert set(main.commands) == COMMANDS
    service = main.commands["service"]
    assert isinstance(service, click.Group)
    assert set(service.commands) == {"install", "uninstall", "status"}
