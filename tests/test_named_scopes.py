"""A team that names its users (``scopes_file``, ``scopes_command``) where the server's routes
cannot show them all: the list is taken as complete, users the routes find beside it are synced
and said, a line memsync cannot read is an error naming it. And the config keys of a database
connection: never the URL itself, one source, psycopg named when it is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memsync.base.errors import ConfigError, ProviderError
from memsync.base.scopes import Scope
from memsync.config import parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.providers import build_provider
from memsync.providers.mem0 import server_database
from memsync.providers.named_scopes import NamedScopes, parse_scopes
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.test_server_database import ADMIN, provider

SERVER = """
[sync]
active = "cloud"
[providers.cloud]
type = "mem0-server"
base_url = "https://mem0.test"
api_key_env = "MEM0_SERVER_KEY"
scope = {{ user_id = "*" }}
{extra}
[providers.backup]
type = "pmm-dir"
path = "{backup}"
direction = "push"
"""


def test_a_named_team_is_complete_and_users_found_beside_it_are_synced_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsync.providers.mem0 import server_entities

    double = Mem0ServerDouble(api_key=ADMIN)
    double.insert_many(["alice likes tea"], user_id="alice")
    double.insert_many(["carol rides a bike"], user_id="carol")
    double.entity_scan_limit = 1  # /entities sees alice or carol, never both
    monkeypatch.setattr(server_entities, "SCAN_LIMIT", 1)
    team = tmp_path / "team.txt"
    team.write_text("# our users\nalice\n\nuser_id=carol\n")
    cloud = provider(double, None)
    cloud.scopes_file = team
    config = parse_config(SERVER.format(extra="", backup=tmp_path / "backup"))
    backup = PmmDirProvider("backup", tmp_path / "backup")
    with StagingStore.open(tmp_path / "staging.db") as store:
        report = run_scoped_cycle(config, store, {"cloud": cloud, "backup": backup}, SyncOptions())
    assert report.exit_code == 0, report.as_dict()
    assert set(report.scopes) == {"user_id=alice", "user_id=carol"}
    assert report.discovery["cloud"]["complete"] is True
    assert (tmp_path / "backup" / "carol.pmm.jsonl").exists()

    double.insert_many(["dan, unlisted"], user_id="dan")
    double.entity_scan_limit = 10  # now the routes see dan too, who is not in the file
    monkeypatch.setattr(server_entities, "SCAN_LIMIT", 10)
    with StagingStore.open(tmp_path / "staging.db") as store:
        report = run_scoped_cycle(config, store, {"cloud": cloud, "backup": backup}, SyncOptions())
    assert "user_id=dan" in report.scopes
    assert "the server also holds user_id=dan, not in scopes_file" in "\n".join(
        report.scope_lines()
    )


def test_a_command_prints_the_team_and_its_failure_is_one_line(tmp_path: Path) -> None:
    script = [sys.executable, "-c", "print('alice'); print('bob')"]
    named = NamedScopes("cloud", command=tuple(script))
    assert named.read(("user_id",), {}) == {Scope.of({"user_id": u}) for u in ("alice", "bob")}
    failing = NamedScopes(
        "cloud", command=(sys.executable, "-c", "import sys; sys.exit('no directory today')")
    )
    with pytest.raises(ProviderError, match="exited 1: no directory today"):
        failing.read(("user_id",), {})
    missing = NamedScopes("cloud", command=(str(tmp_path / "nope"),))
    with pytest.raises(ConfigError, match="not found"):
        missing.read(("user_id",), {})


def test_two_wildcards_take_key_value_pairs_and_a_bad_line_is_named() -> None:
    keys = ("user_id", "agent_id")
    found = parse_scopes("user_id=alice agent_id=bot\n", keys, where="scopes_file t")
    assert found == {Scope.of({"user_id": "alice", "agent_id": "bot"})}
    with pytest.raises(ConfigError, match=r"line 2: expected user_id=\.\.\. agent_id=\.\.\."):
        parse_scopes("user_id=alice agent_id=bot\nalice\n", keys, where="scopes_file t")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ('database_url = "postgresql://u:pw@h/db"', "database_url_env"),
        ('database_url_env = "postgresql://u:pw@h/db"', "NAME of an environment variable"),
        ('database_url_env = "A"\ndatabase_url_file = "f"', "not both"),
        ('database_url_env = "A"\nscopes_file = "f"', "not both"),
        ('scopes_command = "list-users"', "list of words"),
        ('database_table = "memories; drop"', "table name"),
    ],
)
def test_database_and_team_keys_are_checked_on_load(extra: str, said: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=said) as caught:
        parse_config(SERVER.format(extra=extra, backup=tmp_path))
    assert "pw@" not in str(caught.value)


def test_a_database_without_psycopg_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = parse_config(
        SERVER.format(extra='database_url_env = "MEM0_DATABASE_URL"', backup=tmp_path)
    )
    monkeypatch.setenv("MEM0_SERVER_KEY", ADMIN)
    monkeypatch.setenv("MEM0_DATABASE_URL", "postgresql://u:pw@127.0.0.1:9/db")
    assert build_provider("cloud", config).database is not None  # type: ignore[attr-defined]
    real = server_database.importlib.util.find_spec
    monkeypatch.setattr(
        server_database.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "psycopg" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install 'memsync\[postgres\]'"):
        build_provider("cloud", config)
