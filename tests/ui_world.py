"""A cutover in progress, built through the real CLI on pmm-dir stores, for the status page tests.

Three providers (old is active, new takes over, backup is push-only), memories in two scopes,
a few cycles of history, a backup, and one memory edited on both old and new with the
`error` policy, so a conflict waits for a person.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from memsync.base.paths import resolve_paths
from memsync.base.records import Outgoing
from memsync.cli import main
from memsync.config import load_config
from memsync.orchestration.backups import take_backups
from memsync.providers import build_provider

SCOPES = {"alice": 7, "bob": 4}
CONFLICTED_TEXT = "Alice prefers tea in the morning"


@dataclass
class CutoverWorld:
    home: Path
    conflict_id: int
    conflicted_link: str

    def memsync(self, *args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return result.exit_code, result.output

    def add(self, provider: str, scope: str, text: str) -> None:
        """A new memory, written the way an application writing that store would."""
        config = load_config(self.home / "config" / "config.toml")
        with build_provider(provider, config) as store:
            store.create(Outgoing(origin=f"app:{text}", content=text, scope_key=scope))

    def edit(self, provider: str, link_id: str, text: str) -> None:
        """Change one memory's text the way an application writing that store would."""
        config = load_config(self.home / "config" / "config.toml")
        with build_provider(provider, config) as store:
            for page in store.listing().pages():
                for record in page.records:
                    if store.origin_of(record) == link_id:
                        item = Outgoing.from_record(record, link_id)
                        item.content = text
                        store.update(record.id, item)
                        return
        raise AssertionError(f"{link_id} not in {provider}")


def write_cutover_config(home: Path) -> None:
    stores = home / "stores"
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(
        '[sync]\nactive = "old"\nconflict = "error"\n\n'
        f'[providers.old]\ntype = "pmm-dir"\npath = "{stores / "old"}"\n\n'
        f'[providers.new]\ntype = "pmm-dir"\npath = "{stores / "new"}"\n\n'
        f'[providers.backup]\ntype = "pmm-dir"\npath = "{stores / "backup"}"\n'
        'direction = "push"\n'
    )


def build_cutover(home: Path) -> CutoverWorld:
    """The world above; MEMSYNC_HOME must already point at HOME."""
    write_cutover_config(home)
    runner = CliRunner()

    def memsync(*args: str) -> tuple[int, str]:
        result = runner.invoke(main, list(args), catch_exceptions=False)
        return result.exit_code, result.output

    config = load_config(home / "config" / "config.toml")
    with build_provider("old", config) as old:
        for scope, count in SCOPES.items():
            for i in range(count):
                text = CONFLICTED_TEXT if (scope, i) == ("alice", 0) else f"{scope} memory {i}"
                old.create(
                    Outgoing(
                        origin=f"app:{scope}-{i}",
                        content=text,
                        metadata={"topic": "drinks" if i == 0 else "misc", "n": i},
                        scope_key=scope,
                        provenance={"source": f"{scope}-agent"},
                    )
                )
    code, out = memsync("sync")
    assert code == 0, out
    world = CutoverWorld(home, 0, "app:alice-0")
    world.edit("new", "app:alice-3", "alice memory 3, edited in new")
    code, out = memsync("sync")
    assert code == 0, out
    take_backups(resolve_paths(), config)
    world.edit("old", world.conflicted_link, "Alice prefers green tea in the morning")
    world.edit("new", world.conflicted_link, "Alice prefers coffee in the morning, no sugar")
    code, out = memsync("sync")
    assert code == 1, out  # the conflict waits for a decision
    code, out = memsync("conflicts", "--json")
    (conflict,) = json.loads(out)
    world.conflict_id = conflict["id"]
    return world


def build_team(home: Path, users: int) -> None:
    """A team of USERS users on a Mem0 server (the double, in-process), synced once per user
    into a pmm-dir beside it: staging holds a scope per user, as a daemon's would. Built in a
    thread of its own: the in-process double runs an event loop per request, which a browser
    driver's loop in this thread would forbid."""
    import threading

    failed: list[BaseException] = []

    def build() -> None:
        try:
            _build_team(home, users)
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)

    thread = threading.Thread(target=build)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


def _build_team(home: Path, users: int) -> None:
    from memsync.config import parse_config
    from memsync.engine.report import SyncOptions
    from memsync.orchestration.scopes.cycle import run_scoped_cycle
    from memsync.providers.mem0.server import Mem0ServerProvider
    from memsync.providers.pmm_dir import PmmDirProvider
    from memsync.staging import StagingStore
    from tests.doubles.mem0_server_app import Mem0ServerDouble

    double = Mem0ServerDouble(indexed=True)
    for number in range(users):
        double.insert_many([f"user {number} likes tea"], user_id=f"u{number:04d}")
    text = (
        '[sync]\nactive = "server"\n[providers.server]\ntype = "mem0-server"\n'
        'base_url = "https://mem0.test"\nauth = "none"\nscope = { user_id = "*" }\n'
        f'[providers.backup]\ntype = "pmm-dir"\npath = "{home / "backup"}"\ndirection = "push"\n'
    )
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(text)
    server = Mem0ServerProvider(
        "server", "https://mem0.test", {"user_id": "*"}, auth="none", transport=double.transport()
    )
    backup = PmmDirProvider("backup", home / "backup")
    paths = resolve_paths()
    paths.ensure()
    with StagingStore.open(paths.database) as store:
        report = run_scoped_cycle(
            parse_config(text), store, {"server": server, "backup": backup}, SyncOptions()
        )
    assert report.exit_code == 0, report.as_dict()["scopes"]
