"""A dry run changes nothing: ``sync --dry-run; sync`` does exactly what ``sync`` alone does.

Two fresh worlds are built the same way (the real Mem0 library, the real mnem SDK as the
active backend, a PMM backup), synced, and given the same change. One then runs a dry run
before its real sync; the other only the real sync. Their stores, journals and reports must
be the same, for every kind of change: an add, an edit and a delete on either side, an agent
rewrite in mnem, an expiry and an adoption. Ids Mem0 assigns at random and the instants of
the run are named by what they are, not compared; everything else is.
"""

from __future__ import annotations

import gc
import json
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

import memsync.base.records
from memsync.cli import main
from memsync.engine.journal import log_entries
from memsync.staging import StagingStore
from tests.conftest import write_config
from tests.mem0_fixtures import DIMS, mem0_payload
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, mem0_table

CREATED = "2024-03-01T10:00:00.123456-08:00"
EARLIER = "2023-11-30T09:00:00+00:00"  # the other memories' created_at
DUE = (datetime.now(UTC).date() + timedelta(days=1)).isoformat()  # expired three days on
# Mem0 ids the test chooses (memsync keeps them as link ids): the same in both worlds.
CAT, TEA, SOON, WORK, HIKING, FRENCH = (
    str(uuid.uuid5(uuid.NAMESPACE_URL, f"memsync-dry-run-{n}")) for n in range(6)
)
FIXED_IDS = {CAT, TEA, SOON, WORK, HIKING, FRENCH}


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


class World:
    """One installation: a Mem0 store with four memories, mnem (active) and a PMM backup."""

    def __init__(self, root: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home, self.mnem, self.monkeypatch = root, mnem, monkeypatch
        (root / "config").mkdir(parents=True)
        write_config(
            root,
            '[sync]\nactive = "agent"\nconflict = "newest"\n'
            + mem0_table("old", root / "stores")
            + f'\n[providers.agent]\ntype = "mnem"\npath = "{root / "agent"}"\n'
            + f'\n[providers.backup]\ntype = "pmm-dir"\npath = "{root / "pmm"}"\n'
            + 'direction = "push"\n',
        )
        mnem.init(root / "agent")
        gc.collect()
        self.mem0_insert(CAT, "Has a cat called Miso", topic="life", created_at=CREATED)
        self.mem0_insert(TEA, "Prefers green tea", created_at=EARLIER)
        self.mem0_insert(SOON, "Is in Lisbon this week", expiration_date=DUE, created_at=EARLIER)
        self.mem0_insert(WORK, "Works at Acme", created_at=EARLIER)
        with self.agent() as agent:
            mnem.agents.remember(agent.store, "plan", "On the Team plan", source="ticket")
        code, out = self.memsync("sync", "--json")
        assert code == 0, out

    # the application side -------------------------------------------------------------

    def mem0_insert(self, memory_id: str, text: str, **fields: Any) -> None:
        with App(self.home, "old") as memory:
            memory.vector_store.insert(
                vectors=[[1.0] + [0.0] * (DIMS - 1)],
                payloads=[mem0_payload(text, user_id="alice", **fields)],
                ids=[memory_id],
            )

    def mem0(self) -> Any:
        return App(self.home, "old")

    def agent(self) -> _Agent:
        return _Agent(self.mnem, self.home / "agent")

    # memsync ----------------------------------------------------------------------------

    def memsync(self, *args: str) -> tuple[int, str]:
        self.monkeypatch.setenv("MEMSYNC_HOME", str(self.home))
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return result.exit_code, result.output

    def sync_report(self) -> dict[str, Any]:
        code, out = self.memsync("sync", "--json")
        report: dict[str, Any] = json.loads(out)
        report["exit_code_seen"] = code
        return report

    # what a user can look at ------------------------------------------------------------

    def picture(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        """The stores, the journal and the reports, with run instants and random ids named."""
        with self.mem0() as memory:
            items = memory.get_all(filters={"user_id": "alice"}, top_k=1000, show_expired=True)
        mem0 = sorted(
            (
                item["memory"],
                json.dumps(item.get("metadata"), sort_keys=True),
                item.get("created_at"),
                item.get("expiration_date"),
                item.get("actor_id"),
                item.get("role"),
            )
            for item in items["results"]
        )
        with self.agent() as agent:
            nodes = sorted(
                (
                    node_id,
                    json.dumps(node.content),
                    node.event_time,
                    node.provenance.source,
                    node.provenance.note,
                )
                for node_id, node in agent.store.working_memory().items()
            )
            commits = [(c.author, c.message) for c in agent.store.log()]
        backup = sorted(
            line
            for path in (self.home / "pmm").glob("*.pmm.jsonl")
            for line in path.read_text().splitlines()[1:]
        )
        with StagingStore.open(self.home / "state" / "staging.db", create=False) as staging:
            entries = log_entries(staging, limit=100_000)
        # In the journal's own order (its sequence; adoptions, which have none, by what they
        # join): `log` orders by instant, and two worlds' instants tie differently.
        journal = sorted(
            entries, key=lambda e: (e["seq"] is None, e["seq"] or 0, e["link_id"], e["provider"])
        )
        picture = {
            "mem0": mem0,
            "mnem": nodes,
            "mnem log": commits,
            "backup": backup,
            "journal": journal,
            "reports": reports,
        }
        return _named(picture, str(self.home))


class _Agent:
    """An agent holding the mnem store with the real SDK for as long as the `with` lasts."""

    def __init__(self, sdk: ModuleType, root: Path) -> None:
        self.sdk, self.root = sdk, root

    def __enter__(self) -> _Agent:
        self.store: Any = self.sdk.open(self.root)
        return self  # not the store: a caller's variable would keep the lock alive

    def __exit__(self, *exc: object) -> None:
        del self.store  # mnem has no close(): the lock goes with the handle
        gc.collect()


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_RUN_TIMES = {"at", "started_at", "finished_at", "updated_at", "seconds"}
_MEM0_HASH_TIME = re.compile(r"(?<=@)\d{4}-[0-9T:.+-]+")


def _named(value: Any, home: str, key: str = "") -> Any:
    """VALUE with what differs between two equal worlds replaced by its name: the instants of
    the run, the ids Mem0 chose at random, mnem's commit ids (content-addressed over time)."""
    if isinstance(value, dict):
        return {k: _named(v, home, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_named(v, home, key) for v in value]
    if key in _RUN_TIMES and value is not None:
        return "<run time>"
    if not isinstance(value, str):
        return value
    text = value.replace(home, "<home>")
    text = _UUID.sub(lambda m: m.group(0) if m.group(0) in FIXED_IDS else "<mem0 id>", text)
    text = _MEM0_HASH_TIME.sub("<time>", text)
    return _INSTANT.sub(
        lambda m: m.group(0) if m.group(0) in (CREATED, EARLIER, DUE) else "<now>", text
    )


# the changes ------------------------------------------------------------------------------


def add_in_mem0(world: World) -> None:
    world.mem0_insert(HIKING, "Likes hiking", created_at=EARLIER)


def add_in_mnem(world: World) -> None:
    with world.agent() as agent:
        world.mnem.agents.remember(agent.store, "hobby", "Plays chess", source="agent-2")


def edit_in_mem0(world: World) -> None:
    with world.mem0() as memory:
        memory.update(TEA, "Prefers black tea")


def edit_in_mnem(world: World) -> None:
    with world.agent() as agent:
        world.mnem.agents.remember(agent.store, "plan", "On the Enterprise plan", source="ticket")


def delete_in_mem0(world: World) -> None:
    with world.mem0() as memory:
        memory.delete(WORK)


def delete_in_mnem(world: World) -> None:
    with world.agent() as agent:
        world.mnem.agents.forget(agent.store, f"mem0:{TEA}")


def agent_rewrite_in_mnem(world: World) -> None:
    """An agent rewrites a node memsync wrote: memsync's note (metadata, date) is gone."""
    with world.agent() as agent:
        world.mnem.agents.remember(
            agent.store, f"mem0:{CAT}", "Has two cats, Miso and Tofu", source="new-agent"
        )


def expiry(world: World) -> None:
    """Three days pass: the Lisbon memory's date is behind it, and nobody edited anything."""
    shifted = datetime.now(UTC) + timedelta(days=3)
    world.monkeypatch.setattr(memsync.base.records, "utc_clock", lambda: shifted)


def adoption(world: World) -> None:
    """Both stores get the same text on their own: paired, not copied."""
    world.mem0_insert(FRENCH, "Speaks French", created_at=EARLIER)
    with world.agent() as agent:
        world.mnem.agents.remember(agent.store, "language", "Speaks French", source="agent-2")


CHANGES: dict[str, Callable[[World], None]] = {
    "add in mem0": add_in_mem0,
    "add in mnem": add_in_mnem,
    "edit in mem0": edit_in_mem0,
    "edit in mnem": edit_in_mnem,
    "delete in mem0": delete_in_mem0,
    "delete in mnem": delete_in_mnem,
    "agent rewrite in mnem": agent_rewrite_in_mnem,
    "expiry": expiry,
    "adoption": adoption,
}


@pytest.fixture
def worlds(
    tmp_path: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], World]]:
    """Fresh worlds, each built and synced the same way."""
    yield lambda name: World(tmp_path / name, mnem, monkeypatch)


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_dry_run_then_a_sync_does_what_the_sync_alone_does(
    change: str, worlds: Callable[[str], World]
) -> None:
    alone, rehearsed = worlds("alone"), worlds("rehearsed")
    CHANGES[change](alone)
    CHANGES[change](rehearsed)

    after_alone = [alone.sync_report(), alone.sync_report()]
    code, out = rehearsed.memsync("sync", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["dry_run"] is True, out
    after_rehearsal = [rehearsed.sync_report(), rehearsed.sync_report()]

    assert rehearsed.picture(after_rehearsal) == alone.picture(after_alone)
    assert after_alone[0]["actions_total"] > 0 or change == "expiry", after_alone[0]
    assert after_alone[1]["actions_total"] == 0, after_alone[1]  # and then quiet


def _dump(database: Path) -> list[str]:
    connection = sqlite3.connect(database)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def test_a_dry_run_over_wildcard_scopes_leaves_the_staging_database_as_it_was(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery, every scope's mirror and plan: all in the scratch copy, none of it kept."""
    from tests.mem0_fixtures import Mem0App
    from tests.test_scopes import configure, insert

    configure(home)
    with Mem0App(home) as memory:
        insert(memory, "alice", ["likes tea", "works at Acme"])
    runner = CliRunner()
    assert runner.invoke(main, ["sync"], catch_exceptions=False).exit_code == 0
    with Mem0App(home) as memory:
        insert(memory, "alice", ["plays chess"])
        insert(memory, "dave", ["new here"])  # a scope no cycle has seen yet
    before = _dump(home / "state" / "staging.db")

    dry = runner.invoke(main, ["sync", "--dry-run", "--json"], catch_exceptions=False)
    planned = json.loads(dry.output)["actions"]

    assert dry.exit_code == 0, dry.output
    assert {(a["action"], a["provider"]) for a in planned} >= {
        ("create", "agents[user_id=dave]"),
        ("create", "agents[user_id=alice]"),
    }
    assert _dump(home / "state" / "staging.db") == before
    assert not (home / "agents" / "dave").exists()  # no store made for a dry run
    assert not list((home / "state").glob(".dry-run-*"))  # the scratch copy is gone
