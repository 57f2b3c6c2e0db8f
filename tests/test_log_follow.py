"""`memsync log --follow`: the journal as it grows, like journalctl -f.

A real `memsync log --follow` process reads the real staging file while real `memsync sync`
processes write to it; the scope, provider and since filters hold for what comes later too.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memsync.base.records import Record, utc_now_iso
from memsync.base.scopes import Scope, scoped_name
from memsync.engine.journal import FOLLOW_PAGE, follow_entries
from memsync.staging import StagingStore
from memsync.staging.journal import journal_row
from tests.conftest import run_memsync, subprocess_env, write_config
from tests.test_daemon import CONFIG, add_memories, wait_until


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Follower:
    """`memsync log --follow ARGS`, its stdout collected line by line."""

    def __init__(self, home: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memsync", "log", "--follow", *args],
            env=subprocess_env(MEMSYNC_HOME=str(home)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # As a script's `cmd &` starts it, SIGINT ignored: Ctrl-C (an INT sent to it) must
            # stop it all the same, whatever the shell that started it left behind.
            preexec_fn=_ignoring_sigint,
        )
        self.lines: list[str] = []
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, count: int, what: str) -> list[str]:
        wait_until(lambda: len(self.lines) >= count, 60, what)
        return self.lines[:count]

    def cpu_seconds(self) -> float:
        """User plus system time the process has used so far (from /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def interrupt(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=30)
        self._reader.join(timeout=10)
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def synced(home: Path) -> Path:
    write_config(home, CONFIG.format(home=home, interval="1s"))
    add_memories(home, ("m1", "likes green tea"))
    assert run_memsync(home, "sync").returncode == 0
    return home


def columns(line: str) -> list[str]:
    return line.split("\t")


def test_follow_prints_each_new_entry_as_it_is_journalled_and_ctrl_c_exits_0(
    synced: Path,
) -> None:
    follower = Follower(synced)
    try:
        header, *backlog = follower.wait_for(3, "the header and the journal so far")
        assert columns(header) == ["seq", "at", "provider", "kind", "memory", "content"]
        assert [(c[2], c[3], c[5]) for c in map(columns, backlog)] == [
            ("notes", "added", "likes green tea"),
            ("copy", "written", "likes green tea"),
        ]
        cpu_before, wall_before = follower.cpu_seconds(), time.monotonic()
        add_memories(synced, ("m2", "walks at dawn"))
        assert run_memsync(synced, "sync").returncode == 0  # no lock of the follower's in its way
        new = follower.wait_for(5, "the new memory's entries")[3:]
        assert [(c[2], c[3], c[5]) for c in map(columns, new)] == [
            ("notes", "added", "walks at dawn"),
            ("copy", "written", "walks at dawn"),
        ]
        # It holds no read snapshot between looks: a full checkpoint needs none to be open.
        with sqlite3.connect(synced / "state" / "staging.db") as conn:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
        wait_until(lambda: time.monotonic() - wall_before > 3, 60, "a few polls")
        # Polling, not spinning: a few looks a second cost next to nothing.
        cpu = follower.cpu_seconds() - cpu_before
        assert cpu < 0.05 * (time.monotonic() - wall_before) + 0.2
        code, err = follower.interrupt()
    finally:
        follower.kill()
    assert code == 0 and err == ""
    assert len(follower.lines) == 5


def scoped(provider: str, user: str) -> str:
    return scoped_name(provider, Scope.parse(f"user_id={user}"))


def journal(database: Path, *entries: tuple[str, str, str]) -> None:
    """What a cycle journals: (provider, memory, text) added, in one transaction."""
    with StagingStore.open(database) as store, store.transaction():
        for provider, _, _ in entries:
            store.providers.register(provider, "pmm-dir", provider, utc_now_iso())
        store.journal.append(
            journal_row(0, provider, memory, "added", Record(id=memory, content=text), memory)
            for provider, memory, text in entries
        )


def test_follow_keeps_to_its_scope_provider_and_since_for_what_comes_later(home: Path) -> None:
    database = home / "state" / "staging.db"
    journal(
        database,
        (scoped("notes", "alice"), "a1", "alice's first"),
        (scoped("notes", "bob"), "b1", "bob's first"),
        (scoped("copy", "alice"), "a1c", "alice's copy"),
    )
    later = utc_now_iso()
    alice = Follower(home, "--scope", "user_id=alice", "--json")
    copy_since = Follower(home, "--provider", scoped("copy", "alice"), "--since", later)
    try:
        first = [json.loads(line) for line in alice.wait_for(2, "alice's journal so far")]
        assert [e["content"] for e in first] == ["alice's first", "alice's copy"]
        copy_since.wait_for(1, "the header")
        journal(
            database,
            (scoped("notes", "bob"), "b2", "bob's second"),
            (scoped("notes", "alice"), "a2", "alice's second"),
            (scoped("copy", "alice"), "a2c", "alice's second copy"),
        )
        more = [json.loads(line) for line in alice.wait_for(4, "alice's new entries")[2:]]
        assert [(e["provider"], e["content"]) for e in more] == [
            (scoped("notes", "alice"), "alice's second"),
            (scoped("copy", "alice"), "alice's second copy"),
        ]
        _, line = copy_since.wait_for(2, "the copy's new entry")
        assert columns(line)[2:6:3] == [scoped("copy", "alice"), "alice's second copy"]
        codes = [alice.interrupt()[0], copy_since.interrupt()[0]]
    finally:
        alice.kill()
        copy_since.kill()
    assert codes == [0, 0]
    assert len(alice.lines) == 4 and len(copy_since.lines) == 2


def test_a_burst_larger_than_a_page_comes_whole_and_in_order(home: Path) -> None:
    database = home / "state" / "staging.db"
    journal(database, ("notes", "m0", "before"))
    stop = threading.Event()
    seen: list[str] = []
    with StagingStore.open(database) as store:
        entries = follow_entries(store, stop=stop)
        assert [e["content"] for e in next(entries)] == ["before"]
        burst = [("notes", f"m{i}", f"text {i}") for i in range(1, 2 * FOLLOW_PAGE + 7)]
        journal(database, *burst)

        def consume() -> None:
            for batch in entries:
                seen.extend(e["content"] for e in batch)
                if len(seen) >= len(burst):
                    stop.set()

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        reader.join(timeout=60)
    assert seen == [text for _, _, text in burst]
