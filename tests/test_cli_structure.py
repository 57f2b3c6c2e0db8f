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
from memsync.cli import COMMANDS as LAZY_COMMANDS
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
    "webhook",
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
    ctx = click.Context(main)
    assert set(main.list_commands(ctx)) == COMMANDS
    service = main.get_command(ctx, "service")
    assert isinstance(service, click.Group)
    assert set(service.commands) == {"install", "uninstall", "status"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_help_lists_each_command_as_its_own_help_begins(name: str) -> None:
    """``memsync --help`` lists a command by the summary the lazy group records, not by its
    docstring: the two must say the same, shortened alike at every width."""
    ctx = click.Context(main)
    command = main.get_command(ctx, name)
    assert command is not None and command.name == name
    stand_in = click.Command(name, help=LAZY_COMMANDS[name].summary)
    for limit in range(20, 120):
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit)


def test_the_group_help_imports_no_command_module() -> None:
    """``memsync --help`` (and ``--version``) stay fast: no command module, so none of the
    library the commands import at the top."""
    listing = (
        "import sys\n"
        "from memsync.cli import main\n"
        "for flag in ('--version', '--help'):\n"
        "    try:\n"
        "        main([flag], prog_name='memsync')\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code == 0, exit.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('memsync.cli.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", listing],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Commands:" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"
