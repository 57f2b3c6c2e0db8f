"""A write-back owed to mnem lands at the next cycle, an incremental one (issue 39 §6).

An agent rewrites a node through mnem's own API: the note memsync keeps beside the text is gone
(the node reads ``detached``). The mirror carries memsync's fields over and owes the store a
write-back. Held only in the run that found it, a write-back that did not land there waited
for a full listing to return the node; the daemon's incremental cycles never did. Now it is
held in staging until it lands.

The kill is real (``MEMSYNC_KILL_AT``, SIGKILL in a `memsync sync` subprocess, no ``finally``):
right after mnem's mirror committed, before replay. The real mnem SDK, a pmm-dir beside it.
"""

from __future__ import annotations

import gc
import json
import signal
import sqlite3
from pathlib import Path

from tests.conftest import run_memsync, write_config
from tests.mnem_sdk import real_sdk

PMM = (
    '{"pmm_version":1,"exported_at":"2024-05-02T00:00:00Z","source_provider":"mem0","scope":{}}\n'
    '{"id":"m1","content":"Has a cat called Miso","metadata":{"topic":"life"},"scope_key":""}\n'
)


def configure(home: Path) -> None:
    write_config(
        home,
        f"""
[sync]
active = "src"

[providers.src]
type = "pmm-dir"
path = "{home / "src"}"

[providers.agent]
type = "mnem"
path = "{home / "agent"}"
create = true
direction = "both"
""",
    )


def node(home: Path) -> tuple[str, bool]:
    """The one node's text, and whether it carries memsync's note."""
    mnem = real_sdk()
    store = mnem.open(str(home / "agent"))
    try:
        ((_, held),) = store.working_memory().items()
        return held.content, bool(held.provenance.note)
    finally:
        del store
        gc.collect()


def rewrite_as_an_agent(home: Path, text: str) -> None:
    mnem = real_sdk()
    store = mnem.open(str(home / "agent"))
    try:
        (node_id,) = list(store.working_memory())
        mnem.agents.remember(store, node_id, text, source="agent")
    finally:
        del store
        gc.collect()


def owed(home: Path) -> list[str]:
    with sqlite3.connect(home / "state" / "staging.db") as conn:
        return [row[0] for row in conn.execute("SELECT provider FROM write_backs")]


def synced(home: Path, *args: str, **env: str) -> dict[str, object]:
    done = run_memsync(home, "sync", "--json", *args, env_extra=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout))


def test_a_write_back_killed_before_replay_lands_at_the_next_incremental_cycle(
    home: Path,
) -> None:
    configure(home)
    (home / "in.pmm.jsonl").write_text(PMM)
    imported = run_memsync(home, "import", str(home / "in.pmm.jsonl"), "--into", "src")
    assert imported.returncode == 0, imported.stderr
    synced(home)
    assert node(home) == ("Has a cat called Miso", True)

    rewrite_as_an_agent(home, "Has two cats, Miso and Tofu")
    assert node(home) == ("Has two cats, Miso and Tofu", False)
    # Killed right after mnem's mirror committed (src's mirror is the first): the write-back
    # is owed, and nothing was written back.
    killed = run_memsync(home, "sync", env_extra={"MEMSYNC_KILL_AT": "mirror:committed:2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-800:]
    assert owed(home) == ["agent"]
    assert node(home) == ("Has two cats, Miso and Tofu", False)

    again = synced(home)  # incremental: mnem's listing is a diff since its cursor, empty
    assert node(home) == ("Has two cats, Miso and Tofu", True)
    assert owed(home) == []
    assert again["replayed"]["update"] == 2, again["replayed"]  # src's text, mnem's note
    quiet = synced(home)
    assert quiet["replayed"] == {}, "a write-back that landed is not written again"
