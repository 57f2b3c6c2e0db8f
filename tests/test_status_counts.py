"""`memsync status` counts what each store serves; expired memories it hides are shown apart.

On the real Mem0 library and the real mnem SDK (with a PMM backup): once a memory's date has
passed, Mem0 hides it from default reads and memsync forgets it in mnem with a tombstone.
The mirror keeps it (hidden is not deleted), so status says "N (+1 expired, hidden)" and its
count matches what an agent is served. The backup keeps everything and counts it as held.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from memsync.cli import main
from tests import test_e2e_mnem
from tests.test_e2e_mem0 import App
from tests.test_e2e_mnem import Agent, backup_items, synced_then_expired

mnem = test_e2e_mnem.mnem  # the fixtures, shared
synced_cat = test_e2e_mnem.synced_cat


def test_status_counts_what_the_stores_serve_with_expired_ones_apart(
    synced_cat: Path, mnem: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = synced_cat
    synced_then_expired(home, monkeypatch, "In Lisbon this week")

    with App(home, "old") as memory:
        served_by_mem0 = len(memory.get_all(filters={"user_id": "alice"})["results"])
    with Agent(mnem, home / "agent") as agent:
        served_by_mnem = len(agent.store.working_memory())
    held_by_backup = len(backup_items(home / "pmm"))
    assert (served_by_mem0, served_by_mnem, held_by_backup) == (1, 1, 2)

    status = json.loads(CliRunner().invoke(main, ["status", "--json"]).output)["providers"]
    assert (status["old"]["records"], status["old"]["hidden"]) == (served_by_mem0, 1)
    assert (status["agent"]["records"], status["agent"]["hidden"]) == (served_by_mnem, 1)
    assert (status["backup"]["records"], status["backup"]["hidden"]) == (held_by_backup, 0)
    (scope,) = status["agent"]["scopes"]  # mnem's one scope, counted apart there too
    assert (status["agent"]["scopes"][scope], status["agent"]["hidden_scopes"]) == (1, {scope: 1})
    text = CliRunner().invoke(main, ["status"]).output
    assert "1 (+1 expired, hidden)" in text, text


def test_a_memory_dream_retired_is_counted_apart_where_memsync_forgot_it(
    tmp_path: Path,
) -> None:
    """Merged on the Platform: mnem holds memsync's tombstone of it (the current truth only),
    the Platform hides it from default reads, the PMM backup keeps it; verify explains it."""
    from memsync.base.paths import Paths
    from memsync.engine.verify import verify
    from memsync.orchestration.status import status_report
    from tests.test_dream import World

    world = World(tmp_path)
    rex = world.add("User has a dog named Rex")
    richer = world.add("User has a dog named Rex, a beagle")
    world.sync()
    world.platform.merge(rex, into=richer)
    world.sync()

    paths = Paths(tmp_path / "none.toml", tmp_path, tmp_path / "data", tmp_path / "run")
    providers = status_report(paths)["providers"]
    assert (providers["mnem"]["records"], providers["mnem"]["hidden_by"]) == (1, {"retired": 1})
    assert len(world.served_by_mnem()) == 1
    assert (providers["mem0"]["records"], providers["mem0"]["hidden"]) == (1, 1)
    assert (providers["backup"]["records"], providers["backup"]["hidden"]) == (2, 0)
    report = verify(world.providers["mem0"], world.providers["mnem"])
    assert report.reconciled, report.as_dict()
    assert [e.content for e in report.explained] == ["User has a dog named Rex"]
