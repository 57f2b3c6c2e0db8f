"""docs/architecture.md stays true: the layers it draws are the import contract's, and every
module it names exists (a move that forgets the map fails here, not in a newcomer's head)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGE = ROOT / "src" / "memsync"


def contract(contract_id: str) -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for found in config["tool"]["importlinter"]["contracts"]:
        if found["id"] == contract_id:
            return [
                " | ".join(part.strip() for part in layer.split("|")) for layer in found["layers"]
            ]
    raise AssertionError(f"no import contract {contract_id!r} in pyproject.toml")


def drawn(marker: str) -> list[str]:
    """The layers of the fenced block after MARKER, one a line, without their comments."""
    block = DOC.split(marker, 1)[1].split("```", 2)[1]
    return [re.split(r"\s{2,}", line.strip())[0] for line in block.strip().splitlines()]


def test_the_layers_drawn_are_the_import_contracts_layers() -> None:
    assert drawn("<!-- layers:") == contract("layers")
    assert drawn("<!-- orchestration layers:") == contract("orchestration")


def test_every_module_the_map_names_exists() -> None:
    named = set(re.findall(r"`([\w/]+(?:\.py|/))", DOC))
    files = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}
    folders = {
        path.relative_to(PACKAGE).as_posix() + "/" for path in PACKAGE.rglob("*") if path.is_dir()
    }
    names = {Path(f).name for f in files}
    missing = []
    for name in sorted(named):
        if name.startswith(("tests/", "docs/", "src/")):
            if not (ROOT / name).exists():
                missing.append(name)
        elif "/" in name.rstrip("/"):
            if (
                name not in files
                and name not in folders
                and not any(
                    f.endswith("/" + name) or f2.endswith("/" + name)
                    for f in files
                    for f2 in folders
                )
            ):
                missing.append(name)
        elif name not in names and not any(d.endswith(name) for d in folders):
            missing.append(name)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
