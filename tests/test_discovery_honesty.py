"""A team that cannot be shown whole is never "ok": every command says "N users found, more
may exist" until it is resolved, and then stops saying it.

A Mem0 server (the double, its memories in a real PostgreSQL table) holds alice, then 10,000
memories of an agent, then carol: upstream's ``GET /entities`` scans 10,000 memories in no
order, so it finds alice and never carol. ``memsync`` runs as a process of its own against
the double served over a loopback socket: ``check``, ``sync``, ``status`` (and ``--json``),
``verify`` and ``/metrics`` all say it; given the server's database (``database_url_env``),
every one of them finds carol and the warning goes. The database URL's password is printed
nowhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memsync.base.paths import Paths
from memsync.orchestration.ui.metrics import Metrics
from tests.conftest import run_memsync, write_config
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.live_world import serve

ADMIN = "admin-key-0123456789abcdef"


@pytest.fixture
def server(mem0_database: str) -> Iterator[tuple[Mem0ServerDouble, str]]:
    double = Mem0ServerDouble(api_key=ADMIN, database_url=mem0_database)
    double.insert_many(["alice likes tea"], user_id="alice")
    double.insert_many([f"bot note {n}" for n in range(10_000)], agent_id="bot")
    double.insert_many(["carol rides a bike"], user_id="carol")
    with serve(double.app) as url:
        yield double, url


def configure(home: Path, url: str, extra: str = "") -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    write_config(
        home,
        f'[sync]\nactive = "cloud"\n[providers.cloud]\ntype = "mem0-server"\n'
        f'base_url = "{url}"\nallow_insecure_http = true\napi_key_env = "MEM0_SERVER_KEY"\n'
        f'scope = {{ user_id = "*" }}\n{extra}'
        f'[providers.backup]\ntype = "pmm-dir"\npath = "{home / "backup"}"\n'
        'direction = "push"\n',
    )


def memsync(home: Path, *args: str, **env: str) -> Any:
    return run_memsync(home, *args, env_extra={"MEM0_SERVER_KEY": ADMIN, **env})


def discovery_gauges(home: Path) -> dict[str, float]:
    paths = Paths(
        config_file=home / "config" / "config.toml",
        state_dir=home / "state",
        data_dir=home / "data",
        runtime_dir=home / "run",
    )
    text = Metrics(paths).render(None)[0].decode()
    found = {}
    for line in text.splitlines():
        if line.startswith(("memsync_discovery_complete{", "memsync_discovered_scopes{")):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def test_every_command_says_more_may_exist_until_the_database_resolves_it(
    server: tuple[Mem0ServerDouble, str], mem0_database: str, tmp_path: Path
) -> None:
    _, url = server
    home = tmp_path / "home"
    configure(home, url)
    warning = "cloud: 1 users found, more may exist"

    check = memsync(home, "check")
    assert check.returncode == 1, check.stdout + check.stderr
    (line,) = [line for line in check.stdout.splitlines() if line.startswith("cloud ")]
    assert "INCOMPLETE: 1 users found, more may exist" in line
    assert "database_url_env" in line and "docs/mem0-server.md" in line

    sync = memsync(home, "sync")
    assert sync.returncode == 1, sync.stdout + sync.stderr  # not ok, and not silent
    assert warning in sync.stdout and sync.stderr == ""
    again = memsync(home, "sync")
    assert again.returncode == 1 and warning in again.stdout  # stays a warning

    status = memsync(home, "status", "--json")
    found = json.loads(status.stdout)["discovery"]["cloud"]
    assert found["complete"] is False and found["scopes"] == 1
    assert found["warning"].startswith(warning)
    assert f"WARNING {warning}" in memsync(home, "status").stdout

    verify = memsync(home, "verify", "cloud", "backup")
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert "1 scope(s): 1 reconciled" in verify.stdout  # alice is, but not the team:
    assert f"{warning}" in verify.stdout and "not reconciled" in verify.stdout
    assert discovery_gauges(home) == {
        'memsync_discovery_complete{provider="cloud"}': 0.0,
        'memsync_discovered_scopes{provider="cloud"}': 1.0,
    }
    assert not (home / "backup" / "carol.pmm.jsonl").exists()

    configure(home, url, 'database_url_env = "MEM0_DATABASE_URL"\n')
    password = mem0_database.split(":")[2].split("@")[0]
    env = {"MEM0_DATABASE_URL": mem0_database}
    check = memsync(home, "check", **env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "2 users discovered through database" in check.stdout
    sync = memsync(home, "sync", **env)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert "cloud: discovered 2 users through database" in sync.stdout
    assert (home / "backup" / "carol.pmm.jsonl").exists()
    status = memsync(home, "status", "--json", **env)
    assert json.loads(status.stdout)["discovery"]["cloud"]["warning"] is None
    assert "WARNING" not in memsync(home, "status", **env).stdout
    verify = memsync(home, "verify", "cloud", "backup", **env)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "2 scope(s): 2 reconciled" in verify.stdout
    assert discovery_gauges(home)['memsync_discovery_complete{provider="cloud"}'] == 1.0
    for result in (check, sync, status, verify):
        assert password not in result.stdout + result.stderr
        assert mem0_database not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("written", "password"),
    [  # an unencoded '@', as a generated password may hold: libpq reads host 'word-s3cret@...'
        ("postgresql://memsync:{password}@127.0.0.1:{port}/mem0", "Pa55@word-s3cret"),
        ("postgresql://memsync:{password}@[::1/mem0", "s3cret-Pa55word"),  # quoted whole back
    ],
)
def test_a_database_url_that_fails_is_said_without_its_password(
    postgres: Any, tmp_path: Path, written: str, password: str
) -> None:
    """Runs that fail on the URL, where libpq's own error quotes it (or the part of the password
    it took for the host): the commands say which variable to fix, never the password, nor any
    part of it that libpq read as another part of the URL."""
    double = Mem0ServerDouble(api_key=ADMIN)
    double.insert_many(["alice likes tea"], user_id="alice")
    env = {"MEM0_DATABASE_URL": written.format(password=password, port=postgres.port)}
    home = tmp_path / "home"
    with serve(double.app) as url:
        configure(home, url, 'database_url_env = "MEM0_DATABASE_URL"\n')
        check = memsync(home, "check", **env)
        sync = memsync(home, "sync", **env)
        status = memsync(home, "status", **env)
        as_json = memsync(home, "status", "--json", **env)
    assert check.returncode != 0 and sync.returncode != 0, check.stdout + sync.stdout
    assert "$MEM0_DATABASE_URL" in check.stdout + check.stderr
    assert "$MEM0_DATABASE_URL" in sync.stdout + sync.stderr
    for result in (check, sync, status, as_json):
        said = result.stdout + result.stderr
        for part in (password, *password.split("@")):
            assert part not in said, f"memsync {' '.join(result.args[3:])} printed {part!r}: {said}"


def test_a_database_url_in_the_config_itself_is_refused_with_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "home"
    configure(
        home,
        "http://127.0.0.1:9",
        'database_url = "postgresql://memsync:s3cret@db/mem0"\n',
    )
    result = memsync(home, "check")
    assert result.returncode == 2
    assert "database_url_env" in result.stdout + result.stderr
    assert "s3cret" not in result.stdout + result.stderr
