"""A Mem0 server's features are read once a process, and again when a route answers as if they
changed; not once a cycle.

Issue 40 counted 276 ``GET /openapi.json`` beside 532 listings in five minutes of a daemon at a
thousand users: every hinted cycle built its provider afresh and asked for the schema first.
Here the daemon's ``Live`` runs hinted cycles as the daemon does, against the Mem0 server
double (a real mem0 ``Memory``) on a loopback socket, and the double counts what it is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memsync.config import parse_config
from tests.doubles import Fault
from tests.live_world import ServedServer
from tests.test_live_watch import Running, nodes_of, paths_in, running, server, wait_until

__all__ = ["running", "server"]  # the fixtures, shared with test_live_watch


def config_for(tmp_path: Path, url: str, probe: bool = True) -> str:
    return f"""
[sync]
active = "server"
interval = "1d"
{'probe = "1s"' if probe else ""}

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{tmp_path / "agents" / "{user_id}" / "memory"}"
create = true
"""


def schema_reads(server: ServedServer) -> int:
    return len(server.double.faults.requests("GET", "/openapi.json"))


def test_hinted_cycles_read_the_servers_schema_once_a_process(
    tmp_path: Path, server: ServedServer, running: Callable[..., Running]
) -> None:
    for user in ("alice", "bob", "carol"):
        server.add(f"{user} likes tea", user_id=user)
    r = running(paths_in(tmp_path), parse_config(config_for(tmp_path, server.url)))
    r.live.start()
    r.full_pass()
    assert schema_reads(server) == 1
    for number, user in enumerate(("alice", "bob", "carol"), start=1):
        server.add(f"{user} walks to work", user_id=user)  # found by the probe: a hinted cycle
        store = tmp_path / "agents" / user / "memory"
        wait_until(lambda s=store, u=user: f"{u} walks to work" in nodes_of(s).values(), user)
        wait_until(lambda n=number: r.live.cycles >= n, f"hinted cycle {number}")
    listed = len(server.requests(path="/memories"))
    assert listed >= 6  # three scopes in the full pass, one in each hinted cycle
    assert schema_reads(server) == 1, f"{schema_reads(server)} schema reads beside {listed}"


def test_a_route_that_answers_as_if_the_server_changed_has_the_schema_read_again(
    tmp_path: Path, server: ServedServer, running: Callable[..., Running]
) -> None:
    server.add("alice likes tea", user_id="alice")
    r = running(paths_in(tmp_path), parse_config(config_for(tmp_path, server.url, probe=False)))
    r.full_pass()
    r.full_pass()
    assert schema_reads(server) == 1
    # GET /entities, which the schema lists, answers 404 (a server rolled back, say).
    server.double.faults.inject(Fault.error(404), method="GET", path="/entities")
    r.full_pass()  # finds it out; its scopes come from what staging knows
    assert schema_reads(server) == 1
    r.full_pass()
    assert schema_reads(server) == 2  # read again, once
    r.full_pass()
    assert schema_reads(server) == 2
