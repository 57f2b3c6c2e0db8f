"""All SQL lives in staging/, and none of it is assembled from strings (read from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "memsync"
SQL_CALLS = {"execute", "executemany", "executescript"}


def sql_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in SQL_CALLS
    ]


# Not the staging store: a Mem0 server's own PostgreSQL, read-only, its queries composed with
# psycopg.sql (identifiers and values quoted by the driver); and Mem0's history database (the
# library's SQLite file), read-only, one literal query with its values bound.
OTHER_DATABASES = {
    Path("providers/mem0/server_database.py"),
    Path("providers/mem0/history_reads.py"),
}


def test_no_sql_runs_outside_staging() -> None:
    found = [
        f"{path.relative_to(SRC)}:{call.lineno}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "staging"
        and path.relative_to(SRC) not in OTHER_DATABASES
        for call in sql_calls(path)
    ]
    assert found == []


def assembled(node: ast.expr) -> bool:
    """An f-string, a `+` or `%` of strings, or a .format() call."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    )


def test_staging_sql_is_never_assembled_from_strings() -> None:
    found = []
    for path in sorted((SRC / "staging").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        statements = [call.args[0] for call in sql_calls(path) if call.args]
        # Module constants holding SQL (named in upper case) are checked where they are made.
        statements += [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
        ]
        found += [f"{path.name}:{node.lineno}" for node in statements if assembled(node)]
    assert found == []
