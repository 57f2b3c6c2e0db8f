"""How memsync talks to a person: rich tables and progress in a terminal, plain text when piped.

rich is imported when something is first drawn with it (``stdout``, ``stderr``, a table, a
bar in a terminal): a sync whose output is piped, or that prints plain lines, never pays for it.
json likewise, when JSON is printed: the group imports this module (its error line) even for
``memsync --version``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    stdout: Console
    stderr: Console


@functools.cache
def _console(stream: str) -> Console:
    from rich.console import Console

    return Console(stderr=stream == "stderr", highlight=False, soft_wrap=True)


def __getattr__(name: str) -> Any:
    """``stdout`` and ``stderr``: rich consoles, made on first use."""
    if name in ("stdout", "stderr"):
        return _console(name)
    raise AttributeError(f"module 'memsync.base.output' has no attribute {name!r}")


def print_json(value: Any) -> None:
    import json  # when JSON is printed: see the module docstring

    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table for a person in a terminal; tab-separated lines for a pipe."""
    stdout = _console("stdout")
    if not stdout.is_terminal:
        if title:
            sys.stdout.write(f"# {title}\n")
        sys.stdout.write("\t".join(columns) + "\n")
        for row in rows:
            sys.stdout.write("\t".join("" if v is None else str(v) for v in row) + "\n")
        return
    from rich.table import Table

    table = Table(title=title or None, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    stdout.print(table)


@contextmanager
def progress_bar(description: str, total: int | None = None) -> Iterator[Any]:
    """Yields advance(n); draws a bar only when stderr is a terminal."""
    if not _may_be_a_terminal(sys.stderr) or not _console("stderr").is_terminal:
        yield lambda n=1: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    stderr = _console("stderr")
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


def _may_be_a_terminal(stream: Any) -> bool:
    """False when rich would surely not draw on ``stream`` (not a tty, not forced): then rich
    need not be imported to find that out."""
    if os.environ.get("FORCE_TERMINAL") or os.environ.get("TTY_COMPATIBLE"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
