"""Status folds a team's scopes into their provider as it reads staging, and says the same as
folding a report of every scope afterwards; at 5,000 users the page's look stays light.

Issue 40 timed the page's ``/api/status`` at 1.51 s at 5,000 users, and the daemon's memory
grew by a hundred megabytes at each look: every scope's last cycle (15,000 of them) was held at
once, then folded. Here a real staging store holds scopes in every state a fold must say
(ok, partial, refused, busy, error; hidden records, rollbacks, writes waiting, scopes of a
provider the config no longer names), and the folded report is compared with the old one.
Staging sums the plain cycles (ok or skipped, no copies kept out) in SQL from columns it makes
of each cycle's JSON (schema 13); a team of plain cycles alone is compared the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memsync.base.paths import resolve_paths
from memsync.base.records import Record
from memsync.base.write_kind import WriteKind
from memsync.orchestration.scopes.views import fold_scopes
from memsync.orchestration.status import page_status, status_report
from memsync.orchestration.status.collect import collect_status
from memsync.staging import StagingStore
from memsync.staging.rollbacks import Rollback
from memsync.staging.store import record_row
from tests.conftest import write_config

NOW = "2026-12-04T10:00:00.000Z"
CONFIG = '[sync]\nactive = "team"\n' + "".join(
    f'\n[providers.{name}]\ntype = "pmm-dir"\npath = "{{home}}/{name}"\n'
    for name in ("team", "agents")
)
IN_EVERY_STATE: list[dict[str, Any]] = [
    {"state": "ok", "complete": True, "added": 2, "written": 1, "synced_at": NOW},
    {"state": "partial", "partial_reason": "the listing was cut short", "listed": 4},
    {"state": "refused", "refused": "would delete 9 of 10", "refused_by": "max_delete"},
    {"state": "busy", "busy": True, "error": "held by pid 7", "busy_since": NOW},
    {"state": "error", "error": "the server answered 500", "outside": 3},
    {"state": "ok", "excluded_copies": {"agents[user_id=u1]": 2}, "changed": 1},
]
# Plain cycles (ok or skipped, no copies kept out), which staging sums in SQL rather than
# folding them one by one: every figure a fold keeps, in each form it takes.
PLAIN: list[dict[str, Any]] = [
    {"state": "skipped", "complete": True, "listed": 7, "synced_at": "2026-12-04T09:00:00.000Z"},
    {
        "state": "ok",
        "complete": False,
        "removed": 3,
        "failed": 1,
        "excluded": 2,
        "outside": 5,
        "unsynced_since": "2026-12-04T08:00:00.000Z",
        "excluded_copies": {},
    },
    {"state": "ok", "complete": True, "written": 4, "synced_at": "", "outside": 2},
]
STATES = IN_EVERY_STATE + PLAIN


def staged_team(home: Path, users: int, states: list[dict[str, Any]] = STATES) -> None:
    write_config(home, CONFIG.format(home=home))
    paths = resolve_paths()
    with StagingStore.open(paths.database) as store, store.transaction():
        runs = []
        for ended in (NOW, "2026-12-04T10:00:30.000Z"):  # runs of 0 and 30 s
            runs.append(store.runs.start(NOW, 1))
            store.runs.finish(runs[-1], ended, "attention", "{}")
        run_id = runs[0]
        for number in range(users):
            scope = f"user_id=u{number}" if number % 7 else f"user_id=u{number}%2Cx"
            for base, kind in (("team", "mem0-server"), ("agents", "mnem"), ("gone", "mnem")):
                name = f"{base}[{scope}]"
                store.providers.register(name, kind, name, NOW)  # both hide expired memories
                if (number + len(base)) % 5:  # some scopes never finished a cycle
                    cycle = {
                        **states[(number + len(base)) % len(states)],
                        "run_id": runs[number % 2],
                        "finished_at": f"2026-12-04T10:00:{number % 60:02d}.000Z",
                    }
                    for why in ("error", "partial_reason", "refused"):
                        if cycle.get(why):
                            cycle[why] = f"{cycle[why]} (scope {number})"
                    store.providers.save_last_cycle(name, json.dumps(cycle))
                expired = "2020-01-01T00:00:00Z" if number % 3 == 0 else None
                store.records.upsert(
                    record_row(
                        name,
                        f"link:{number}:{i}",
                        Record(id=f"{number}-{i}", content="t", expiration_date=expired),
                        run_id,
                    )
                    for i in range(number % 4 + 1)
                )
            if number % 4 == 1:
                store.outbox.enqueue(
                    run_id,
                    f"link:{number}:0",
                    f"agents[{scope}]",
                    WriteKind.CREATE,
                    None,
                    source=f"team[{scope}]",
                    source_link=None,
                    attempts=0,
                    now=NOW,
                )
            if number % 6 == 2:
                store.rollbacks.flag(
                    [
                        Rollback(
                            f"team[{scope}]", f"link:{number}:0", f"{number}-0", NOW, None, 1, NOW
                        )
                    ]
                )


def test_status_folded_as_it_reads_says_what_folding_every_scope_afterwards_said(
    home: Path,
) -> None:
    staged_team(home, 60)
    paths = resolve_paths()
    unfolded = collect_status(paths)
    assert len([n for n in unfolded["providers"] if n.startswith("team[")]) == 60
    fold_scopes(unfolded)
    folded = collect_status(paths, fold=True)
    assert json.dumps(folded, sort_keys=True) == json.dumps(unfolded, sort_keys=True)
    team = folded["providers"]["team"]
    assert team["scope_count"] == 60 and team["hidden"] == sum(n % 4 + 1 for n in range(0, 60, 3))
    assert "(scope 0)" in team["last_cycle"]["error"]  # the first scope in trouble is named
    assert list(team["scopes"]) == list(unfolded["providers"]["team"]["scopes"])  # same order
    assert [n for n in folded["providers"] if n.startswith("gone[")]  # not configured: its own
    assert status_report(paths) == folded


def test_plain_cycles_summed_in_sql_say_what_folding_each_of_them_said(home: Path) -> None:
    staged_team(home, 60, PLAIN)
    paths = resolve_paths()
    unfolded = collect_status(paths)
    fold_scopes(unfolded)
    folded = collect_status(paths, fold=True)
    assert json.dumps(folded, sort_keys=True) == json.dumps(unfolded, sort_keys=True)
    cycle = folded["providers"]["team"]["last_cycle"]
    assert cycle["states"] == {"ok": 32, "skipped": 16} and cycle["duration_s"] == 30.0
    assert (cycle["complete"], cycle["outside"], cycle["synced_at"]) == (
        False,
        5,
        NOW[:11] + "09:00:00.000Z",
    )


def test_the_page_at_a_thousand_scopes_is_one_folded_row_per_provider(home: Path) -> None:
    staged_team(home, 1000)
    page = page_status(resolve_paths())
    team = page["providers"]["team"]
    assert team["scope_count"] == 1000 and len(team["scopes"]) == 50
    assert team["state"]["kind"] == "refused"
    assert not [n for n in page["providers"] if n.startswith(("team[", "agents["))]
