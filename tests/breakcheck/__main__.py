"""Break what a test guards, once, in a scratch copy, and see whether the test notices.

Each entry of ``tests/breakcheck/breaks.py`` names a test and a break: one search/replace in one
file of ``src/`` (or of the tests' own doubles). For each, the tree (``src/``, ``tests/``,
``pyproject.toml``) is copied to a scratch directory, the break applied there, and the test run
against the copy (``PYTHONPATH`` puts the copy first, so memsync's subprocesses use it too).
The repository itself is never touched.

    python -m tests.breakcheck                  # every entry (make breakcheck)
    python -m tests.breakcheck serve_held lane  # entries whose name or test holds a word
    python -m tests.breakcheck --list           # the table, without running it
    python -m tests.breakcheck --baseline ...   # also run each test unbroken first

A test that passes with its break is NOT CAUGHT; a search string that is not in its file exactly
once is STALE (the code moved: update the entry). Exit status 1 when any entry is either.
Not part of ``make test``: it runs each test again, once per break.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.breakcheck.breaks import ISSUE_38, Break
from tests.breakcheck.last_round import LAST_ROUND
from tests.breakcheck.phase_3 import PHASE_3

BREAKS = ISSUE_38 + LAST_ROUND + PHASE_3

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("src", "tests", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
TIMEOUT = 900  # seconds for one test run (the daemon tests take a minute or two)


def scratch_tree(where: Path) -> Path:
    tree = where / "tree"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=IGNORED)
        else:
            tree.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    return tree


def broken(tree: Path, entry: Break) -> tuple[str | None, str]:
    """ENTRY's file in TREE with the break applied; or why it cannot be (None, why)."""
    target = tree / entry.file
    if not target.is_file():
        return None, f"no file {entry.file}"
    text = target.read_text()
    for find, replace in entry.edits:
        found = text.count(find)
        if found != 1:
            return None, f"search string found {found} times in {entry.file}: {find.strip()[:60]!r}"
        text = text.replace(find, replace)
    return text, ""


def apply(tree: Path, entry: Break) -> str | None:
    """Apply ENTRY's break in TREE; why it could not be applied, or None."""
    text, why = broken(tree, entry)
    if text is None:
        return why
    (tree / entry.file).write_text(text)
    return None


def run_test(tree: Path, test: str) -> tuple[int, float, str]:
    """Run TEST on TREE in a session of its own: a timeout or a Ctrl-C here ends the test and
    every process it started (daemons included), never anything else."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", test],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=TIMEOUT)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            return -1, time.monotonic() - started, f"timed out after {TIMEOUT} s"
        raise
    return proc.returncode, time.monotonic() - started, failure_line(output)


def failure_line(output: str) -> str:
    """The first assertion or error line pytest printed for a failure."""
    for line in output.splitlines():
        if re.match(r"^E\s+\S", line):
            return re.sub(r"^E\s+", "", line)[:200]
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def check(entry: Break, baseline: bool) -> tuple[str, float, str]:
    with tempfile.TemporaryDirectory(prefix="breakcheck-") as scratch:
        tree = scratch_tree(Path(scratch))
        if baseline:
            code, _, line = run_test(tree, entry.test)
            if code != 0:
                return "FAILS UNBROKEN", 0.0, line
        problem = apply(tree, entry)
        if problem is not None:
            return "STALE", 0.0, problem
        code, seconds, line = run_test(tree, entry.test)
    if code == 0:
        return "NOT CAUGHT", seconds, ""
    if code == 1:
        return "caught", seconds, line
    return f"ERROR ({code})", seconds, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.breakcheck", description=__doc__)
    parser.add_argument("words", nargs="*", help="only entries whose name or test holds a word")
    parser.add_argument("--list", action="store_true", help="print the table and stop")
    parser.add_argument("--baseline", action="store_true", help="run each test unbroken first")
    args = parser.parse_args(argv)
    chosen = [
        b for b in BREAKS if not args.words or any(w in f"{b.name} {b.test}" for w in args.words)
    ]
    names = [entry.name for entry in BREAKS]
    twice = {name for name in names if names.count(name) > 1}
    stale = [(entry, why) for entry in chosen for text, why in [broken(ROOT, entry)] if not text]
    if args.list:
        for entry in chosen:
            print(f"{entry.name}\n    {entry.test}\n    {entry.file}: {entry.guards}")
    for entry, why in stale:
        print(f"STALE {entry.name}: {why}")
    if twice:
        print(f"names used twice: {', '.join(sorted(twice))}")
    if args.list or stale or twice:
        return 1 if stale or twice else 0
    bad = 0
    for n, entry in enumerate(chosen, 1):
        verdict, seconds, line = check(entry, args.baseline)
        bad += verdict != "caught"
        print(f"[{n}/{len(chosen)}] {verdict:<10} {seconds:6.1f}s  {entry.name}", flush=True)
        print(f"        {entry.test}", flush=True)
        if line:
            print(f"        {line}", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} breaks caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
