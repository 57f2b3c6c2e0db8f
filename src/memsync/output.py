"""How memsync talks to a person: rich tables and progress in a terminal, plain text when piped."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table for a person in a terminal; tab-separated lines for a pipe."""
    if not stdout.is_terminal:
        if title:
            sys.stdout.write(f"# {title}\n")
        sys.stdout.write("\t".join(columns) + "\n")
        for row in rows:
            sys.stdout.write("\t".join("" if v is None else str(v) for v in row) + "\n")
        return
    table = Table(title=title or None, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    stdout.print(table)


@contextmanager
def progress_bar(description: str, total: int | None = None) -> Iterator[Any]:
    """Yields advance(n); draws a bar only when stderr is a terminal."""
    if not stderr.is_terminal:
        yield lambda n=1: None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
