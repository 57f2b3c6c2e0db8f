"""The data behind each status page, checked against the staging database and the CLI.

The overview and cutover pages show `collect_status` (what `memsync status --json` prints),
the conflict page `list_conflicts` (`memsync conflicts`), the memory page `memory_history`
(`memsync history`): these tests hold the page data to the database and to those commands.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memsync.base.errors import ConfigError
from memsync.base.paths import resolve_paths
from memsync.config import parse_config
from memsync.orchestration.status import collect_status, cycle_history, cycle_state
from memsync.orchestration.ui.data import conflict_views, find_memories, memory_timeline, word_diff
from memsync.staging import StagingStore
from tests.ui_world import CONFLICTED_TEXT, SCOPES, CutoverWorld, build_cutover


@pytest.fixture
def world(home: Path) -> CutoverWorld:
    return build_cutover(home)


def db(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / "state" / "staging.db")


def test_overview_counts_every_provider_and_scope_as_the_database_holds_them(
    world: CutoverWorld,
) -> None:
    report = collect_status(resolve_paths())
    with db(world.home) as conn:
        counts = conn.execute(
            "SELECT provider, scope_key, COUNT(*) FROM records GROUP BY provider, scope_key"
        ).fetchall()
    assert {(p, s, n) for p, s, n in counts} == {
        (provider, scope, n) for provider in ("old", "new", "backup") for scope, n in SCOPES.items()
    }
    for provider, scope, n in counts:
        entry = report["providers"][provider]
        assert entry["scopes"][scope] == n
        assert entry["records"] == sum(SCOPES.values())
        assert entry["state"]["kind"] == "ok"
        assert entry["outbox"] == {"pending": 0, "failed": 0, "dead": 0}
        assert entry["last_cycle"]["finished_at"] and entry["last_cycle"]["duration_s"] >= 0
    assert report["conflicts"]["open"] == 1
    assert set(report["backups"]) == {"old", "new", "backup"}


def test_status_json_is_the_overview_data(world: CutoverWorld) -> None:
    """One source: the CLI's --json and the page's /api/status are the same function."""
    code, out = world.memsync("status", "--json")
    assert code == 0
    assert json.loads(out) == json.loads(json.dumps(collect_status(resolve_paths()), default=str))


def test_outbox_rows_are_counted_per_provider(world: CutoverWorld) -> None:
    with db(world.home) as conn:
        for state, provider in (("pending", "new"), ("failed", "new"), ("dead", "backup")):
            conn.execute(
                "INSERT INTO outbox (run_id, link_id, provider, kind, state, attempts, "
                "last_error, created_at, updated_at) VALUES (1, 'x', ?, 'update', ?, 5, "
                "'503 from the server', 'now', 'now')",
                (provider, state),
            )
    report = collect_status(resolve_paths())
    assert report["providers"]["new"]["outbox"] == {"pending": 1, "failed": 1, "dead": 0}
    assert report["providers"]["backup"]["outbox"]["dead"] == 1
    assert report["outbox"]["dead_actions"][0]["last_error"] == "503 from the server"
    pair = {p["b"]: p for p in report["cutover"]}
    assert pair["new"]["outbox"] == {"pending": 1, "failed": 1, "dead": 0}
    assert pair["backup"]["outbox"]["dead"] == 1


@pytest.mark.parametrize(
    ("cycle", "kind", "why"),
    [
        ({"state": "ok", "complete": True}, "ok", None),
        ({"state": "partial", "partial_reason": "page 3 timed out"}, "partial", "page 3 timed out"),
        ({"state": "busy", "busy": True, "error": "store locked"}, "busy", "store locked"),
        ({"state": "refused", "refused": "listed no memories"}, "refused", "listed no memories"),
        ({"state": "error", "error": "401 from the server"}, "error", "401 from the server"),
    ],
)
def test_each_cycle_state_carries_its_reason(cycle: dict[str, object], kind: str, why: str) -> None:
    state = cycle_state(cycle)
    assert state is not None and state["kind"] == kind
    assert state.get("gate", state.get("reason")) == why


def test_cycle_history_follows_the_runs_table(world: CutoverWorld) -> None:
    with StagingStore.open(world.home / "state" / "staging.db") as store:
        runs = cycle_history(store)
    assert [r["id"] for r in runs] == [1, 2, 3]
    assert [r["status"] for r in runs] == ["ok", "ok", "attention"]
    assert runs[0]["providers"]["old"]["added"] == sum(SCOPES.values())
    assert runs[0]["providers"]["new"]["written"] == runs[0]["providers"]["backup"]["written"]
    assert runs[0]["providers"]["new"]["written"] == sum(SCOPES.values())
    assert runs[1]["providers"]["new"]["changed"] == 1  # alice memory 3, edited in new
    assert runs[2]["providers"]["old"]["changed"] == runs[2]["providers"]["new"]["changed"] == 1
    assert all(r["duration_s"] is not None and r["duration_s"] >= 0 for r in runs)


def test_word_diff_marks_what_each_side_alone_has() -> None:
    diff = word_diff("Alice prefers green tea", "Alice prefers coffee")
    assert ["-", "green tea"] in diff and ["+", "coffee"] in diff
    assert "".join(t for op, t in diff if op != "+") == "Alice prefers green tea"
    assert "".join(t for op, t in diff if op != "-") == "Alice prefers coffee"


def test_conflict_view_has_both_versions_as_memsync_conflicts_lists_them(
    world: CutoverWorld,
) -> None:
    with StagingStore.open(world.home / "state" / "staging.db") as store:
        (view,) = conflict_views(store)
    code, out = world.memsync("conflicts", "--json")
    assert code == 0, out
    (listed,) = json.loads(out)
    assert view["versions"] == listed["versions"] and view["id"] == listed["id"]
    assert sorted(view["sides"]) == ["new", "old"]
    texts = {side: view["versions"][side]["content"] for side in view["sides"]}
    assert texts == {
        "old": "Alice prefers green tea in the morning",
        "new": "Alice prefers coffee in the morning, no sugar",
    }
    assert view["metadata_diff"] == []


def test_find_memories_by_id_provider_id_and_text(world: CutoverWorld) -> None:
    with StagingStore.open(world.home / "state" / "staging.db") as store:
        by_text = find_memories(store, "coffee")
        by_id = find_memories(store, world.conflicted_link)
        nothing = find_memories(store, "50%_off")
    assert [m["link_id"] for m in by_text] == [world.conflicted_link]
    assert by_text[0]["providers"] == ["backup", "new", "old"]
    assert [m["link_id"] for m in by_id] == [world.conflicted_link]
    assert nothing == []


def test_memory_timeline_shows_every_version_and_who_wrote_it(world: CutoverWorld) -> None:
    with StagingStore.open(world.home / "state" / "staging.db") as store:
        timeline = memory_timeline(store, world.conflicted_link)
    code, out = world.memsync("history", world.conflicted_link, "--json")
    assert code == 0, out
    assert [e["seq"] for e in timeline] == [e["seq"] for e in json.loads(out)]
    steps = [(e["provider"], e["kind"], e["who"], e["content"]) for e in timeline]
    assert steps[0] == ("old", "added", "alice-agent via old", CONFLICTED_TEXT)
    assert sorted(steps[1:3]) == [  # the replay's order between the two is its own
        ("backup", "written", "memsync, copying old's version", CONFLICTED_TEXT),
        ("new", "written", "memsync, copying old's version", CONFLICTED_TEXT),
    ]
    assert sorted(steps[3:]) == [
        ("new", "changed", "alice-agent via new", "Alice prefers coffee in the morning, no sugar"),
        ("old", "changed", "alice-agent via old", "Alice prefers green tea in the morning"),
    ]


def test_cutover_is_safe_only_when_verified_and_nothing_waits(world: CutoverWorld) -> None:
    pair = {p["b"]: p for p in collect_status(resolve_paths())["cutover"]}["new"]
    assert not pair["safe"]
    assert {c["name"]: c["ok"] for c in pair["checks"]} == {
        "verify": False,
        "outbox": True,
        "dead letters": True,
        "conflicts": False,
    }
    assert "memsync" not in pair["switch"][0] and 'active = "new"' in pair["switch"][1]

    code, out = world.memsync("resolve", str(world.conflict_id), "--keep", "new")
    assert code == 0, out
    code, out = world.memsync("verify", "old", "new")
    assert code == 0, out
    pair = {p["b"]: p for p in collect_status(resolve_paths())["cutover"]}["new"]
    assert pair["safe"], pair["checks"]
    assert pair["verify"]["reconciled"] and pair["verify"]["count"] == {"old": 11, "new": 11}

    # A change after the verify makes it stale: verify again before switching.
    world.edit("new", "app:bob-1", "bob memory 1, edited after the verify")
    code, out = world.memsync("sync")
    assert code == 0, out
    pair = {p["b"]: p for p in collect_status(resolve_paths())["cutover"]}["new"]
    assert not pair["safe"]
    assert "change(s) since" in next(c["text"] for c in pair["checks"] if c["name"] == "verify")


def test_a_verify_that_could_not_compare_is_kept_with_why(world: CutoverWorld) -> None:
    (world.home / "stores" / "new" / "alice.pmm.jsonl").write_text("not a pmm file\n")
    code, out = world.memsync("verify", "old", "new")
    assert code != 0, out
    pair = {p["b"]: p for p in collect_status(resolve_paths())["cutover"]}["new"]
    assert pair["verify"]["error"] and not pair["verify"]["reconciled"]
    assert next(c for c in pair["checks"] if c["name"] == "verify")["text"].startswith(
        "could not verify"
    )


@pytest.mark.parametrize(
    ("ui", "error"),
    [
        ('listen = "0.0.0.0:8767"', "not a loopback address"),
        ('listen = "192.168.1.5:8767"', "allow_remote"),
        ('listen = "8767"', "expected HOST:PORT"),
        ('listen = "::1:8767"', "brackets"),
        ('listen = "127.0.0.1:99999"', "out of range"),
        ("lisen = 1", "ui.lisen: unknown key"),
    ],
)
def test_ui_config_refuses_what_it_cannot_serve_safely(ui: str, error: str) -> None:
    base = '[sync]\nactive = "a"\n[providers.a]\ntype = "pmm-dir"\npath = "/tmp/a"\n[ui]\n'
    with pytest.raises(ConfigError, match=error):
        parse_config(base + ui)


def test_ui_config_is_off_by_default_and_takes_loopback_or_an_allowed_remote() -> None:
    base = '[sync]\nactive = "a"\n[providers.a]\ntype = "pmm-dir"\npath = "/tmp/a"\n'
    assert parse_config(base).ui.listen is None
    assert parse_config(base + '[ui]\nlisten = "[::1]:9000"\n').ui.listen == "[::1]:9000"
    remote = parse_config(base + '[ui]\nlisten = "0.0.0.0:8767"\nallow_remote = true\n')
    assert remote.ui.allow_remote
