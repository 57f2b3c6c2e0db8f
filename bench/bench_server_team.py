"""A self-hosted Mem0 server at the size of a team: requests per cycle for twenty users, and
one user's 2,500 memories listed past the 1,000 cap of ``GET /memories``.

The server double (tests/doubles/mem0_server_app.py, answering as upstream 8d5b786 does)
makes every request wait 50 ms, a network round trip. The floor of a run is the requests it
needed times that latency (scopes are listed one after the other, so nothing overlaps): each
time below is a ratio to that floor, and each request count is compared with the fewest the
server's API allows.

- Team: ``user_id = "*"`` over twenty users into a pmm-dir, a first cycle and a quiet one.
  The fewest a cycle can do: one ``/openapi.json`` (what the server supports), one
  ``/entities`` (who is there) and one ``GET /memories`` per user. Before this round the
  schema was read once per scope (twenty times), 37% of a quiet cycle's requests.
- Big scope: 2,500 memories of one user. ``GET /memories`` stops at 1,000; memsync counts the
  scope (``GET /entities``) and reads the rest with one ``POST /search``: three requests for a
  complete listing. Its time includes the double's own work (a local Qdrant ranking 2,500
  points), which a real server does too.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("MEM0_TELEMETRY", "False")

from tests.doubles.mem0_server_app import Mem0ServerDouble

from bench._common import QUICK, report
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.engine.report import SyncOptions
from memsync.orchestration.scopes.cycle import run_scoped_cycle
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.mem0.server import Mem0ServerProvider
from memsync.providers.pmm_dir import PmmDirProvider
from memsync.staging import StagingStore

LATENCY = 0.05
USERS = 20
PER_USER = 10 if QUICK else 50
BIG = 2_500
KEY = "bench-admin-key-0123456789"
PATIENT = RetryPolicy(attempts=2, max_elapsed=600.0)


def provider(double: Mem0ServerDouble, scope: dict[str, str]) -> Mem0ServerProvider:
    return Mem0ServerProvider(
        "cloud",
        "http://127.0.0.1:8888",
        scope,
        secret=Secret(KEY, "$KEY"),
        transport=double.transport(),
        retry=PATIENT,
    )


def team(work: Path) -> None:
    double = Mem0ServerDouble(api_key=KEY)
    for n in range(USERS):
        double.insert_many([f"user {n} memory {i}" for i in range(PER_USER)], user_id=f"u{n}")
    config = parse_config(
        f"""
[sync]
active = "cloud"
[providers.cloud]
type = "mem0-server"
base_url = "http://127.0.0.1:8888"
scope = {{ user_id = "*" }}
[providers.backup]
type = "pmm-dir"
path = "{work / "backup"}"
direction = "push"
"""
    )
    double.faults.latency = LATENCY
    fewest = 2 + USERS
    for label in ("first", "quiet"):
        before = len(double.faults.seen)
        cloud = provider(double, {"user_id": "*"})
        backup = PmmDirProvider("backup", work / "backup")
        started = time.perf_counter()
        with StagingStore.open(work / "staging.db") as store:
            result = run_scoped_cycle(
                config, store, {"cloud": cloud, "backup": backup}, SyncOptions()
            )
        seconds = time.perf_counter() - started
        assert result.exit_code == 0, result.as_dict()
        asked = double.faults.seen[before:]
        kinds = Counter(s.path if s.path != "/memories" else "/memories" for s in asked)
        report(
            f"mem0-server {USERS}-user team, {label} cycle: requests",
            len(asked),
            "",
            f"fewest the API allows: {fewest} (1 schema, 1 entities, 1 listing per user); "
            f"schema reads {kinds['/openapi.json']}",
            len(asked) == fewest and kinds["/openapi.json"] == 1,
        )
        floor = len(asked) * LATENCY
        bound = 6 if label == "first" else 4  # a first cycle also writes every memory out
        report(
            f"mem0-server {USERS}-user team, {label} cycle: time / floor",
            seconds / floor,
            "x",
            f"floor {floor:.2f}s = {len(asked)} requests x {LATENCY * 1000:.0f} ms; < {bound}x",
            seconds / floor < bound,
        )


def big_scope() -> None:
    double = Mem0ServerDouble(api_key=KEY)
    double.insert_many([f"memory {i} of a long-serving agent" for i in range(BIG)], user_id="big")
    double.faults.latency = LATENCY
    source = provider(double, {"user_id": "big"})
    started = time.perf_counter()
    listing = source.listing()
    records = [r for page in listing.pages() for r in page.records]
    seconds = time.perf_counter() - started
    asked = len(double.faults.seen)
    report(
        f"mem0-server scope of {BIG:,} memories: listed, complete",
        len(records),
        "",
        f"all {BIG:,}, proven complete: {listing.complete}",
        len(records) == BIG and listing.complete,
    )
    report(
        f"mem0-server scope of {BIG:,} memories: requests",
        asked,
        "",
        "4: schema, GET /memories (1,000), GET /entities (the count), POST /search (the rest)",
        asked == 4,
    )
    floor = asked * LATENCY
    report(
        f"mem0-server scope of {BIG:,} memories: listing time / floor",
        seconds / floor,
        "x",
        f"floor {floor:.2f}s = {asked} requests x {LATENCY * 1000:.0f} ms, plus the server's "
        "ranking; < 20x",
        seconds / floor < 20,
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="memsync-bench-server-") as work:
        team(Path(work))
    big_scope()


if __name__ == "__main__":
    main()
