"""Remote stores are probed: one cheap request says which scopes changed, so only those are listed.

The server double answers ``GET /entities`` as upstream's ``server/routers/entities.py``
computes it, over a real mem0 ``Memory``; writes come from another Mem0 client through its
routes. ``Live`` runs as the daemon runs it, against the double on a loopback socket.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memsync.base.paths import Paths
from memsync.base.records import Outgoing
from memsync.base.scopes import Scope
from memsync.base.secrets import Secret
from memsync.config import Config, parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.live.triggers import Live
from memsync.orchestration.runner import run_sync
from memsync.providers.change_probe import WHOLE, ProbeUnsure
from memsync.providers.hindsight.probe import HindsightDocumentsProbe
from memsync.providers.hindsight.provider import HindsightProvider
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mem0.platform_probe import PlatformChangesProbe
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.mem0.server_probes import ServerEntitiesProbe
from tests.doubles import Fault
from tests.doubles.hindsight_app import HindsightDouble
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.live_world import ServedServer, served_mem0_server

DEADLINE = 60.0
ALICE = Scope.of({"user_id": "alice"}).label
BOB = Scope.of({"user_id": "bob"}).label


def wait_until(condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def server_probe(double: Mem0ServerDouble, **scope: str) -> ServerEntitiesProbe:
    provider = Mem0ServerProvider(
        "server",
        "https://mem0.test",
        scope or {"user_id": "*"},
        auth="none",
        transport=double.transport(),
    )
    keys = tuple(k for k, v in (scope or {"user_id": "*"}).items() if v == "*")
    fixed = {k: v for k, v in (scope or {}).items() if v != "*"}
    return ServerEntitiesProbe("server", provider, keys, fixed)


def add(double: Mem0ServerDouble, text: str, user_id: str, **metadata: Any) -> str:
    """Another Mem0 client adds a memory through the server's route."""
    import httpx

    with httpx.Client(transport=double.transport(), base_url="https://mem0.test") as client:
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": text}],
            "user_id": user_id,
            "infer": False,
        }
        if metadata:
            body["metadata"] = metadata
        answer = client.post("/memories", json=body)
        answer.raise_for_status()
        return str(answer.json()["results"][0]["id"])


def call(double: Mem0ServerDouble, method: str, path: str, **kwargs: Any) -> None:
    import httpx

    with httpx.Client(transport=double.transport(), base_url="https://mem0.test") as client:
        client.request(method, path, **kwargs).raise_for_status()


# --- what the server's /entities really moves ----------------------------------------------------


def test_the_server_probe_flags_a_scope_for_an_add_an_edit_and_a_delete() -> None:
    double = Mem0ServerDouble()
    probe = server_probe(double)
    first = add(double, "likes tea", "alice")
    add(double, "likes chess", "bob")
    known = probe.ask({}).tokens
    assert set(known) == {ALICE, BOB}
    assert probe.ask(known).scopes == set()  # nothing changed: nothing flagged

    second = add(double, "walks to work", "alice")
    flags = probe.ask(known)
    assert flags.scopes == {ALICE}
    known = flags.tokens

    call(double, "PUT", f"/memories/{first}", json={"text": "likes green tea"})
    flags = probe.ask(known)
    assert flags.scopes == {ALICE}, "an edit stamps updated_at"
    known = flags.tokens

    call(double, "DELETE", f"/memories/{second}")
    flags = probe.ask(known)
    assert flags.scopes == {ALICE}, "a delete moves the count"
    known = flags.tokens

    call(double, "DELETE", f"/memories/{first}")
    flags = probe.ask(known)
    assert flags.scopes == {ALICE}, "a scope whose last memory went is flagged too"
    assert probe.ask(flags.tokens).scopes == set()


def test_an_expired_memory_still_counts_so_its_expiry_moves_nothing() -> None:
    """Upstream's scan includes expired memories, as memsync's listing does (show_expired)."""
    double = Mem0ServerDouble()
    probe = server_probe(double)
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    import httpx

    with httpx.Client(transport=double.transport(), base_url="https://mem0.test") as client:
        client.post(
            "/memories",
            json={
                "messages": [{"role": "user", "content": "was here yesterday"}],
                "user_id": "alice",
                "infer": False,
                "expiration_date": yesterday,
            },
        ).raise_for_status()
        hidden = client.get("/memories", params={"user_id": "alice"}).json()["results"]
    assert hidden == []  # expired: hidden from the default listing
    assert probe.ask({}).tokens[ALICE].startswith("1/")  # and still counted by /entities


def test_a_probe_on_a_scope_of_one_reads_only_its_entities() -> None:
    double = Mem0ServerDouble()
    probe = server_probe(double, user_id="alice")
    add(double, "likes tea", "alice")
    known = probe.ask({}).tokens
    assert set(known) == {WHOLE}
    add(double, "likes chess", "bob")
    assert probe.ask(known).scopes == set()
    add(double, "walks to work", "alice")
    assert probe.ask(known).scopes == {WHOLE}


def test_pairs_are_flagged_by_either_entity_and_a_new_entity_lists_every_scope() -> None:
    double = Mem0ServerDouble()
    probe = server_probe(double, user_id="*", agent_id="*")
    call(
        double,
        "POST",
        "/memories",
        json={
            "messages": [{"role": "user", "content": "pair memory"}],
            "user_id": "alice",
            "agent_id": "bot",
            "infer": False,
        },
    )
    pair = Scope.of({"user_id": "alice", "agent_id": "bot"}).label
    flags = probe.ask({pair: ""})
    assert flags.scopes == {pair} and flags.everything is None
    flags = probe.ask(flags.tokens)
    assert flags.scopes == set()
    add(double, "carol's first", "carol")
    assert probe.ask(flags.tokens).everything == "new on the server: user_id=carol"


def test_a_server_past_the_scan_limit_of_entities_is_not_trusted() -> None:
    class Http:
        def get(self, path: str, **kwargs: Any) -> Any:
            return [
                {"id": "alice", "type": "user", "total_memories": 6000},
                {"id": "bob", "type": "user", "total_memories": 4000},
            ]

    class Provider:
        http = Http()

        def close(self) -> None:
            pass

    probe = ServerEntitiesProbe("server", Provider(), ("user_id",), {})  # type: ignore[arg-type]
    with pytest.raises(ProbeUnsure, match="at least 10000 memories"):
        probe.ask({})


# --- what a probe can miss is found by the full pass ------------------------------------------


def config_for(url: str, home: Path, **sync: str) -> Config:
    extra = "".join(f'{k} = "{v}"\n' for k, v in sync.items())
    return parse_config(
        f"""
[sync]
active = "server"
interval = "1h"
{extra}
[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.copy]
type = "pmm-dir"
path = "{home / "copy"}"
"""
    )


def paths_in(home: Path) -> Paths:
    paths = Paths(home / "config.toml", home / "state", home / "data", home / "run")
    paths.ensure()
    return paths


def copy_of(home: Path, user: str) -> set[str]:
    import json

    path = home / "copy" / f"{user}.pmm.jsonl"
    if not path.exists():
        return set()
    lines = path.read_text().splitlines()[1:]
    return {json.loads(line)["content"] for line in lines if line.strip()}


def test_an_add_and_a_delete_that_hide_from_the_probe_are_found_by_the_full_pass(
    tmp_path: Path,
) -> None:
    """The one mix of upstream writes that leaves /entities unmoved: a delete, and an add whose
    metadata backdates created_at (memsync's own writes do this) to between the oldest and
    the newest, in one probe window. The probes miss it; the next full pass lists the scope,
    and nothing is lost."""
    with served_mem0_server() as server:
        t = datetime(2026, 1, 1, tzinfo=UTC)
        server.add("oldest", user_id="alice", metadata={"created_at": t.isoformat()})
        middle = server.add(
            "middle", user_id="alice", metadata={"created_at": (t + timedelta(days=1)).isoformat()}
        )
        server.add("newest", user_id="alice")
        running = Probing(server, tmp_path)
        try:
            running.live.start()
            running.full_pass()  # keeps each scope's token as it was before the listing
            assert copy_of(tmp_path, "alice") == {"oldest", "middle", "newest"}

            double = server.double
            with double.lock:  # both writes fall between two probes (GET /entities waits)
                double.memory.delete(middle)
                double.memory.add(
                    [{"role": "user", "content": "backdated"}],
                    user_id="alice",
                    metadata={"created_at": (t + timedelta(days=2)).isoformat()},
                    infer=False,
                )
            probes = running.probes()
            wait_until(lambda: running.probes() >= probes + 3, "three probes")
            assert running.live.cycles == 0, "the probes cannot see this mix"
            assert copy_of(tmp_path, "alice") == {"oldest", "middle", "newest"}

            running.full_pass()  # the interval's full pass
            assert copy_of(tmp_path, "alice") == {"oldest", "newest", "backdated"}
            assert server.texts("alice") == {"oldest", "newest", "backdated"}
        finally:
            running.close()


# --- the daemon's probing ------------------------------------------------------------------------


class Probing:
    def __init__(self, server: ServedServer, home: Path, **sync: str) -> None:
        self.server = server
        self.home = home
        self.paths = paths_in(home)
        self.config = config_for(server.url, home, probe="1s", **sync)
        self.stop = threading.Event()
        self.live = Live(self.paths, self.config, self.stop)

    def full_pass(self) -> None:
        run_sync(self.paths, self.config, SyncOptions(stop=self.stop), observer=self.live)

    def probes(self) -> int:
        return len(self.server.requests(path="/entities"))

    def close(self) -> None:
        self.stop.set()
        self.live.close()
        self.live.join(30)


@pytest.fixture
def probing(tmp_path: Path) -> Iterator[Probing]:
    with served_mem0_server() as server:
        running = Probing(server, tmp_path)
        try:
            yield running
        finally:
            running.close()


def test_a_quiet_team_costs_one_request_a_probe(probing: Probing) -> None:
    for user in ("alice", "bob", "carol"):
        probing.server.add(f"{user} was here", user_id=user)
    probing.live.start()
    probing.full_pass()
    listed = len(probing.server.requests())
    probes = probing.probes()
    wait_until(lambda: probing.probes() >= probes + 3, "three probes")
    assert len(probing.server.requests()) == listed  # no listing at all
    assert probing.live.cycles == 0


def test_a_change_on_the_server_is_listed_in_its_scope_only_and_reaches_the_other_side(
    probing: Probing,
) -> None:
    for user in ("alice", "bob", "carol"):
        probing.server.add(f"{user} was here", user_id=user)
    probing.live.start()
    probing.full_pass()
    before = len(probing.server.double.faults.seen)
    probing.server.add("bob plays chess", user_id="bob")
    wait_until(lambda: "bob plays chess" in copy_of(probing.home, "bob"), "bob's copy")
    listed = {
        s.query["user_id"][0] for s in probing.server.requests(before) if "user_id" in s.query
    }
    assert listed == {"bob"}


def test_the_tokens_outlive_the_daemon_so_a_restart_lists_nothing_new(probing: Probing) -> None:
    probing.server.add("alice was here", user_id="alice")
    probing.live.start()
    probing.full_pass()
    probing.close()  # the daemon stops; a new one starts on the same staging store
    again = Probing(probing.server, probing.home)
    try:
        again.live.start()
        listed = len(again.server.requests())
        probes = again.probes()
        wait_until(lambda: again.probes() >= probes + 2, "two probes")
        assert len(again.server.requests()) == listed
        assert again.live.cycles == 0
    finally:
        again.close()


def test_a_probe_that_fails_lists_the_provider_in_full_once_and_says_so_once(
    probing: Probing, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memsync")
    probing.server.add("alice was here", user_id="alice")
    probing.live.start()
    probing.full_pass()
    probing.server.double.faults.inject(Fault.error(500), path="/entities", times=1_000_000)
    probing.server.add("alice walks to work", user_id="alice")
    wait_until(lambda: "alice walks to work" in copy_of(probing.home, "alice"), "the full listing")
    probes = probing.probes()
    wait_until(lambda: probing.probes() >= probes + 2, "two more (failing) probes")
    failed = [r.getMessage() for r in caplog.records if "probe of server failed" in r.getMessage()]
    assert len(failed) == 1 and "listing it in full now" in failed[0], failed
    probing.server.double.faults.clear()
    wait_until(
        lambda: any("probe of server answers again" in r.getMessage() for r in caplog.records),
        "the probe to answer again",
    )


def test_a_qdrant_backed_servers_empty_entities_are_not_trusted(
    probing: Probing, caplog: pytest.LogCaptureFixture
) -> None:
    """Upstream on Qdrant answers [] to GET /entities (seen on upstream's server, run offline):
    read as "no memories anywhere", the probe would never flag a change again."""
    caplog.set_level(logging.INFO, logger="memsync")
    for user in ("alice", "bob"):
        probing.server.add(f"{user} was here", user_id=user)
    probing.server.double.faults.inject(
        Fault.error(200, body=[]), path="/entities", times=1_000_000
    )
    probing.live.start()
    probing.full_pass()  # the listings find memories the probe's answer says are not there
    said = [r.getMessage() for r in caplog.records if "cannot be trusted" in r.getMessage()]
    assert said == [
        "probe of server cannot be trusted (GET /entities counts 0 memories for user_id=bob "
        "where the listing found 1 (a Qdrant-backed server answers [] to it)); its changes "
        "are found by the sync every 3600s"
    ]
    probing.server.add("alice walks to work", user_id="alice")
    (probe,) = probing.live.probes
    asked: list[object] = []
    answer = probe.ask
    probe.ask = lambda known: asked.append(known) or answer(known)  # type: ignore[method-assign]
    probing.full_pass()  # the full pass carries on alone, without asking the probe
    assert asked == []
    assert "alice walks to work" in copy_of(probing.home, "alice")


# --- the Platform and Hindsight ------------------------------------------------------------------


def platform_probe(double: Mem0PlatformDouble, clock: list[datetime]) -> PlatformChangesProbe:
    provider = Mem0PlatformProvider(
        "cloud",
        {"user_id": "*"},
        secret=Secret("m0-key-0123456789", "$KEY"),
        base_url="https://api.mem0.test",
        transport=double.transport(),
    )
    provider.open()
    return PlatformChangesProbe("cloud", provider, ("user_id",), now=lambda: clock[0])


def test_the_platform_probe_names_the_scopes_of_adds_and_edits_once_each() -> None:
    double = Mem0PlatformDouble(api_key="m0-key-0123456789")
    clock = [datetime.now(UTC)]
    probe = platform_probe(double, clock)
    alice = double.insert("alice was here", user_id="alice")
    assert probe.ask({}).scopes == set()  # the first probe sets the window
    clock[0] += timedelta(seconds=5)
    double.insert("bob likes chess", user_id="bob")
    assert probe.ask({}).scopes == {BOB}
    clock[0] += timedelta(seconds=5)
    assert probe.ask({}).scopes == set(), "a change is flagged once"
    double._touch(double.memories[alice], "alice likes tea", None)
    clock[0] += timedelta(seconds=5)
    assert probe.ask({}).scopes == {ALICE}
    seen = [s for s in double.faults.seen if s.path == "/v3/memories/"]
    assert all({"user_id": "*"} in s.body["filters"]["AND"] for s in seen[1:]), (
        "one list over every scope"
    )


def test_the_hindsight_probe_sees_a_retain_and_a_delete() -> None:
    double = HindsightDouble()
    provider = HindsightProvider(
        "hs", "https://hs.test", bank="alice", transport=double.transport()
    )
    provider.open()
    probe = HindsightDocumentsProbe("hs", provider)
    record = provider.create(Outgoing(origin="pmm:1", content="likes tea", scope_key="alice"))
    known = probe.ask({}).tokens
    assert probe.ask(known).scopes == set()
    provider.create(Outgoing(origin="pmm:2", content="likes chess", scope_key="alice"))
    flags = probe.ask(known)
    assert flags.scopes == {WHOLE}
    provider.delete(record.id)
    assert probe.ask(flags.tokens).scopes == {WHOLE}


# --- the setting ----------------------------------------------------------------------------------


def test_the_probe_setting_takes_a_duration_or_off_and_refuses_less_than_a_second() -> None:
    from memsync.base.errors import ConfigError

    def sync(line: str) -> Any:
        return parse_config(
            f'[sync]\nactive = "a"\n{line}\n[providers.a]\ntype = "pmm-dir"\npath = "/tmp/a"\n'
        ).sync

    assert sync("").probe is None and sync("").watch is True
    assert sync('probe = "5s"').probe == 5.0
    assert sync('probe = "off"').probe is None
    with pytest.raises(ConfigError, match=r"sync\.probe: a probe more often than once a second"):
        sync('probe = "500ms"')
    assert sync("watch = false").watch is False


def test_an_unexpected_probe_error_is_said_once_and_neither_the_full_pass_nor_watching_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memsync")

    class Broken:
        """A provider whose client fails in a way no provider error describes."""

        class http:  # stands in for the provider's attribute
            @staticmethod
            def get(path: str, **kwargs: Any) -> Any:
                raise RuntimeError("the client broke")

        def close(self) -> None:
            pass

    with served_mem0_server() as server:
        server.add("alice was here", user_id="alice")
        running = Probing(server, tmp_path)
        running.live = Live(
            running.paths,
            running.config,
            running.stop,
            build=lambda name, config: Broken(),  # type: ignore[arg-type,return-value]
        )
        try:
            running.live.start()
            running.full_pass()
            wait_until(
                lambda: any(
                    "probe of server failed (the client broke)" in r.getMessage()
                    for r in caplog.records
                ),
                "the error to be logged",
            )
            # Still alive: a file another program writes is still picked up.
            import json

            copy = tmp_path / "copy" / "alice.pmm.jsonl"
            lines = copy.read_text().splitlines()
            lines.append(
                json.dumps(
                    {"id": "m9", "content": "alice naps", "metadata": {}, "scope_key": "alice"}
                )
            )
            (tmp_path / "copy" / "tmp").write_text("\n".join(lines) + "\n")
            (tmp_path / "copy" / "tmp").replace(copy)
            wait_until(lambda: "alice naps" in server.texts("alice"), "the file's memory")
            broke = [r for r in caplog.records if "the client broke" in r.getMessage()]
            assert len(broke) == 1
        finally:
            running.close()
