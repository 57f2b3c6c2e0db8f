"""What memsync's stores take on disk, and how fast they grow: `status`, the page's
``/api/status`` and ``/metrics`` say the same figures, measured from the store files; `check`
warns when a layout grows past its ``growth_budget`` at the measured rate, naming the layout
that costs less.

Real parts: Mem0's library offline, the real mnem SDK. The cycles' own sampling
(``sample_disk``, at each cycle's end) measures the real files; the only thing a test moves is
the clock of one sample (two minutes on), since a rate needs samples a minute apart and a test
does not wait.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memsync.base.paths import resolve_paths
from memsync.config import load_config
from memsync.orchestration.disk import sample_disk, size
from memsync.orchestration.status.page import page_status
from memsync.orchestration.ui.metrics import Metrics
from memsync.providers.mnem import disk as mnem_disk
from memsync.staging import StagingStore
from memsync.staging.store_sizes import SizeSample
from tests.mem0_fixtures import Mem0App
from tests.test_layouts_agents import ALICE, BOB, add, configure, sync
from tests.test_layouts_sharded import configure_sharded
from tests.test_metrics import samples, value


def allocated(root: Path) -> tuple[int, int]:
    """Bytes of every .mnem directory under ROOT, as du counts them, and how many stores."""
    total, stores = 0, 0
    for where, _dirs, files in os.walk(root):
        if Path(where).name == ".mnem":
            stores += 1
        if ".mnem" in Path(where).parts:
            total += sum(os.stat(os.path.join(where, f)).st_blocks * 512 for f in files)
    return total, stores


def grow_and_sample(home: Path, cli: Any) -> tuple[int, int]:
    """A cycle that writes, then the cycles' sampling two minutes after the first cycle's: the
    bytes at the first sample and at the second."""
    paths = resolve_paths()
    config = load_config(paths.config_file)
    with StagingStore.open(paths.database, create=False) as store:
        first = store.store_sizes.newest("agents")
    assert first is not None  # the first sync's end sampled it
    with Mem0App(home) as memory:
        add(memory, "alice", {f"alice fact {n}": {} for n in range(20)})
    sync(cli)
    later = datetime.fromisoformat(first.at.replace("Z", "+00:00")) + timedelta(minutes=2)
    with StagingStore.open(paths.database, create=False) as store:
        sample_disk(store, config, now=later)
        second = store.store_sizes.newest("agents")
    assert second is not None and second.at > first.at
    return first.bytes, second.bytes


def test_status_the_page_and_metrics_show_each_stores_size_and_growth(home: Path, cli: Any) -> None:
    configure_sharded(home)
    with Mem0App(home) as memory:
        add(memory, "alice", ALICE)
        add(memory, "bob", BOB)
    sync(cli)
    before, after = grow_and_sample(home, cli)
    assert after > before  # a commit costs disk: what the figures are about
    on_disk, stores = allocated(home / "agents")
    assert stores == 2
    per_day = (after - before) / 120 * 86_400

    report = json.loads(cli("status", "--json").output)["disk"]["agents"]
    assert (report["bytes"], report["stores"]) == (on_disk, 2)
    assert report["per_day"] == per_day and report["over_s"] == 120
    assert report["budget"] == 10**9 and not report["over_budget"]
    line = (
        f"agents: {size(on_disk)} on disk in 2 stores, growing {size(per_day)} a day (over 2 min)"
    )
    assert line in cli("status").output

    assert page_status(resolve_paths())["disk"]["agents"]["line"] == line  # what the page polls

    found = samples(Metrics(resolve_paths()).render(None)[0].decode())
    assert value(found, "memsync_store_disk_bytes", provider="agents") == on_disk
    assert value(found, "memsync_store_disk_stores", provider="agents") == 2
    assert value(found, "memsync_store_growth_bytes_per_day", provider="agents") == per_day
    assert not [s for s in found if s.labels.get("provider") == "mem0" and "disk" in s.name]


def team_store_with_a_budget(home: Path, cli: Any, budget: str) -> Path:
    """One store for every user (each commit costs the whole team's memories) with BUDGET a
    day, synced once with alice's memories; its config file."""
    configure(home)
    config = home / "config" / "config.toml"
    config.write_text(
        config.read_text().replace("create = true", f'create = true\ngrowth_budget = "{budget}"')
    )
    with Mem0App(home) as memory:
        add(memory, "alice", ALICE)
    sync(cli)
    return config


def test_check_warns_when_a_team_store_grows_past_its_budget_and_names_a_cheaper_layout(
    home: Path, cli: Any
) -> None:
    config = team_store_with_a_budget(home, cli, "1MB")
    assert "WARNING" not in cli("check").output  # no rate measured yet: nothing said
    before, after = grow_and_sample(home, cli)
    per_day = (after - before) / 120 * 86_400
    assert per_day > 10**6

    checked = cli("check")
    assert checked.exit_code == 0, checked.output  # a warning, not a failure
    warning = next(line for line in checked.output.splitlines() if line.startswith("WARNING"))
    assert warning.startswith(
        f"WARNING agents: its stores grow {size(per_day)} a day at the current rate (measured "
        'over 2 min), past growth_budget = "1.0 MB"'
    )
    assert 'stores = "per-namespace"' in warning and "every user's memories" in warning
    assert "WARNING agents" in cli("status").output
    config.write_text(config.read_text().replace('growth_budget = "1MB"', 'growth_budget = "1TB"'))
    assert "WARNING" not in cli("check").output


def test_a_size_budget_that_is_not_one_is_refused_in_one_line(home: Path, cli: Any) -> None:
    configure(home)
    config = home / "config" / "config.toml"
    config.write_text(
        config.read_text().replace("create = true", 'create = true\ngrowth_budget = "lots"')
    )
    result = cli("check")
    assert result.exit_code != 0
    assert "growth_budget" in result.output and "expected a size such as '1GB'" in result.output
    assert "Traceback" not in result.output


def test_samples_older_than_two_days_are_dropped(home: Path, cli: Any) -> None:
    configure_sharded(home)
    with Mem0App(home) as memory:
        add(memory, "alice", ALICE)
    sync(cli)
    paths = resolve_paths()
    config = load_config(paths.config_file)
    now = datetime.now(UTC)
    with StagingStore.open(paths.database, create=False) as store:
        first = store.store_sizes.newest("agents")
        assert first is not None
        sample_disk(store, config, now=now + timedelta(days=3))
        assert store.store_sizes.oldest_since("agents", "") == store.store_sizes.newest("agents")


def test_a_look_takes_a_fresh_sample_as_the_size_and_reads_the_files_past_it(
    home: Path, cli: Any
) -> None:
    """The page polls every 5 s: with thousands of stores, walking them all costs each poll a
    fifth of a second, so a sample a cycle's end took in the last 5 minutes is the size."""
    configure_sharded(home)
    with Mem0App(home) as memory:
        add(memory, "alice", ALICE)
    sync(cli)
    on_disk, stores = allocated(home / "agents")
    paths = resolve_paths()
    now = datetime.now(UTC)

    def sampled_at(moment: datetime, size_then: int) -> dict[str, Any]:
        with StagingStore.open(paths.database, create=False) as store:
            store.store_sizes.prune((now + timedelta(days=1)).isoformat())  # none left
            at = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            store.store_sizes.add("agents", SizeSample(at, size_then, stores))
        disk: dict[str, Any] = json.loads(cli("status", "--json").output)["disk"]["agents"]
        return disk

    assert sampled_at(now - timedelta(minutes=1), 12_345)["bytes"] == 12_345
    assert sampled_at(now - timedelta(minutes=10), 12_345)["bytes"] == on_disk


def test_a_look_past_the_budget_names_the_cheaper_layout_without_reading_the_stores(
    home: Path, cli: Any, monkeypatch: Any
) -> None:
    """Past its budget, a look once walked every store for the advice the layout alone gives:
    at 5,000 users, over half of each page poll while agents wrote (issue 40 §7)."""
    team_store_with_a_budget(home, cli, "1MB")
    grow_and_sample(home, cli)  # its newest sample is fresh, and the rate past the budget
    walked: list[Path] = []
    monkeypatch.setattr(mnem_disk, "store_bytes", lambda store: walked.append(store) or 0)

    disk = json.loads(cli("status", "--json").output)["disk"]["agents"]
    assert disk["over_budget"] and 'stores = "per-namespace"' in disk["warning"]
    page = page_status(resolve_paths())["disk"]["agents"]
    assert page["warning"] == disk["warning"]
    assert walked == []  # the sample's size, the layout's advice: no store read
