"""Through the engine, a Mem0 server costs one request per memory written: creates are not
read back, and an update takes what it replaces from the staging store, not from a GET."""

from __future__ import annotations

from pathlib import Path

from memsync.base.secrets import Secret
from memsync.engine.report import SyncOptions
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore
from tests.contract import list_all
from tests.doubles.mem0_server_app import Mem0ServerDouble
from tests.engine_helpers import config_for

KEY = "m0sk_round-trips-0123456789"


def test_a_cycle_writes_each_memory_with_one_request(tmp_path: Path) -> None:
    server = Mem0ServerDouble(api_key=KEY)
    source = MemoryProvider("source", scope="alice")
    ids = [source.app_add(f"memory {i}", team="a", floor=i) for i in range(12)]
    remote = Mem0ServerProvider(
        "remote",
        "http://127.0.0.1:8888",
        {"user_id": "alice"},
        secret=Secret(KEY, "$KEY"),
        transport=server.transport(),
        retry=RetryPolicy(attempts=2, initial_backoff=0.01),
        concurrency=4,
    )
    providers = {"source": source, "remote": remote}
    config = config_for({"source": "both", "remote": "both"}, "source")

    def cycle() -> list[tuple[str, str]]:
        before = len(server.faults.seen)
        with StagingStore.open(tmp_path / "staging.db") as store:
            report = config.engine(store, providers).run_cycle(SyncOptions())  # type: ignore[arg-type]
        assert report.exit_code == 0, report.as_dict()
        return [(s.method, s.path) for s in server.faults.seen[before:]]

    first = cycle()
    assert [r for r in first if r[0] != "GET"] == [("POST", "/memories")] * 12
    for record_id in ids[:5]:  # the user edits five memories and drops a metadata key
        old = source.store.records[record_id]
        source.app_edit(record_id, old.content + " (edited)")
        source.store.records[record_id].metadata = {"team": "b"}
    second = cycle()
    writes = [r for r in second if r[0] != "GET"]
    assert [m for m, _ in writes] == ["PUT"] * 5
    reads_by_id = [p for m, p in second if m == "GET" and p.startswith("/memories/")]
    assert reads_by_id == []  # no GET before a PUT, none after
    records, _ = list_all(remote)
    held = {r.content: r.metadata for r in records}
    assert held == {
        **{f"memory {i} (edited)": {"team": "b"} for i in range(5)},
        **{f"memory {i}": {"team": "a", "floor": i} for i in range(5, 12)},
    }
