"""/metrics: scraped over HTTP, parsed with Prometheus's own text parser
(``prometheus_client.parser``), and held against what `memsync status` and the runs table
say: one set of numbers behind all three.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from memsync.base.paths import resolve_paths
from memsync.base.records import parse_instant, utc_now_iso
from memsync.base.scopes import Scope, scoped_name
from memsync.base.write_kind import WriteKind
from memsync.orchestration.status import cycle_history
from memsync.orchestration.ui.auth import METRICS_TOKEN_FILE, load_or_create_token
from memsync.orchestration.ui.metrics import Metrics
from memsync.staging import StagingStore
from tests.conftest import run_memsync, write_config
from tests.engine_helpers import World
from tests.live_world import served_mem0_server
from tests.test_daemon import CONFIG, DaemonProcess, add_memories, contents, edit_config, wait_until
from tests.test_live_watch import DEADLINE, agent_writes, nodes_of
from tests.test_stopping import free_port


def samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(found: Iterable[Sample], name: str, **labels: str) -> float:
    """The one sample NAME whose labels include LABELS."""
    matching = [
        s for s in found if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(matching) == 1, (name, labels, matching)
    return float(matching[0].value)


def test_the_daemons_metrics_parse_and_agree_with_status_and_the_runs(home: Path) -> None:
    port = free_port()
    text = CONFIG.format(home=home, interval="1h") + f'\n[ui]\nlisten = "127.0.0.1:{port}"\n'
    # Not watched: the second cycle is the one the config change starts, nothing sooner.
    text = text.replace('interval = "1h"\n', 'interval = "1h"\nwatch = false\n', 1)
    config = write_config(home, text)
    add_memories(home, ("m1", "likes green tea"))
    daemon = DaemonProcess(home)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        daemon.wait_for_line("sync #1 ok")
        add_memories(home, ("m2", "walks at dawn"))
        # A valid config change starts a cycle at once (the interval is an hour).
        edit_config(
            config,
            text.replace('[backup]\ninterval = "1h"\n', '[backup]\ninterval = "1h"\nkeep = 23\n'),
        )
        wait_until(lambda: "walks at dawn" in contents(home / "copy"), 60, "the second cycle")
        daemon.wait_for_line("sync #2 ok")
        paths = resolve_paths()
        scraper = {"Authorization": f"Bearer {load_or_create_token(paths, METRICS_TOKEN_FILE)}"}
        page = {"Authorization": f"token {load_or_create_token(paths)}"}
        assert httpx.get(url, timeout=60).status_code == 403
        assert httpx.get(url.replace("/metrics", "/api/status"), headers=scraper).status_code == 403
        assert httpx.get(url, headers=page, timeout=60).status_code == 200
        scrape = httpx.get(url, headers=scraper, timeout=60)
        status = json.loads(run_memsync(home, "status", "--json").stdout)
    finally:
        daemon.stop()
        daemon.kill()
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
    found = samples(scrape.text)
    assert value(found, "memsync_staging_up") == 1
    assert value(found, "memsync_cycles_total", outcome="ok") == 2
    assert value(found, "memsync_writes_total", provider="copy", kind="create", outcome="ok") == 2
    for state in ("pending", "failed", "dead"):
        expected = status["providers"]["copy"]["outbox"][state]
        assert value(found, "memsync_outbox_actions", provider="copy", state=state) == expected
    assert value(found, "memsync_conflicts_open") == status["conflicts"]["open"]
    for name in ("notes", "copy"):
        last_ok = parse_instant(status["providers"][name]["last_cycle"]["last_ok_at"])
        assert last_ok is not None
        seen = value(found, "memsync_provider_last_success_timestamp_seconds", provider=name)
        assert seen == pytest.approx(last_ok.timestamp())
    with StagingStore.open(home / "state" / "staging.db", create=False) as store:
        runs = cycle_history(store)
    assert value(found, "memsync_cycle_duration_seconds_count", trigger="full") == len(runs) == 2
    durations = sum(run["duration_s"] for run in runs)
    took = value(found, "memsync_cycle_duration_seconds_sum", trigger="full")
    assert took == pytest.approx(durations)
    # Each memory was seen and written within one cycle: its lag is inside that cycle.
    assert value(found, "memsync_propagation_lag_seconds_count") == 2
    assert 0 <= value(found, "memsync_propagation_lag_seconds_sum") <= durations
    assert not [s for s in found if s.labels.get("scope")]  # per_scope was not asked


def test_failed_and_dead_writes_are_counted_and_lag_waits_for_the_last_target(
    home: Path,
) -> None:
    paths = resolve_paths()
    directions = {"a": "both", "b": "both", "c": "both"}
    world = World(paths.database.parent, directions, "a", max_attempts=1)
    write_config(  # names the providers, so each has its outbox series even at zero
        home,
        '[sync]\nactive = "a"\n'
        + "".join(f'\n[providers.{n}]\ntype = "pmm-dir"\npath = "{home}/{n}"\n' for n in "abc"),
    )
    metrics = Metrics(paths)
    world.providers["a"].app_add("to b at once, to c later")
    world.providers["c"].faults.fail_writes = 1
    first = world.sync()
    metrics.cycle_ended(first.run_id, per_scope=False)
    after_first = samples(metrics.render(None)[0].decode())
    revived = world.sync(retry_dead=True)  # the parked write is planned again, and lands
    metrics.cycle_ended(revived.run_id, per_scope=False)
    after_all = samples(metrics.render(None)[0].decode())

    writes = "memsync_writes_total"
    assert value(after_first, writes, provider="b", kind="create", outcome="ok") == 1
    assert value(after_first, writes, provider="c", kind="create", outcome="dead") == 1
    assert value(after_first, "memsync_outbox_actions", provider="c", state="dead") == 1
    assert value(after_first, "memsync_cycles_total", outcome="attention") == 1
    # b has it, c does not yet: the memory has not reached its last target, so no lag yet.
    assert value(after_first, "memsync_propagation_lag_seconds_count") == 0
    assert world.contents("c") == ["to b at once, to c later"]
    assert value(after_all, writes, provider="c", kind="create", outcome="ok") == 1
    assert value(after_all, "memsync_outbox_actions", provider="c", state="dead") == 0
    assert value(after_all, "memsync_cycles_total", outcome="ok") == 1
    # Counted once, from when the first cycle saw it to the second cycle's write into c.
    assert value(after_all, "memsync_propagation_lag_seconds_count") == 1
    with StagingStore.open(paths.database, create=False) as store:
        runs = {run["id"]: run for run in cycle_history(store)}
    edges = [
        parse_instant(runs[run][edge])
        for run in (first.run_id, revived.run_id)
        for edge in ("started_at", "finished_at")
    ]
    assert None not in edges
    first_start, first_end, second_start, second_end = edges  # type: ignore[misc]
    lag = value(after_all, "memsync_propagation_lag_seconds_sum")
    assert (second_start - first_end).total_seconds() <= lag  # seen in the first cycle,
    assert lag <= (second_end - first_start).total_seconds()  # acknowledged in the second


def test_scopes_fold_into_their_provider_unless_per_scope_is_asked(home: Path) -> None:
    paths = resolve_paths()
    alice, bob = Scope.parse("user_id=alice"), Scope.parse("user_id=bob")
    config = (
        f'[sync]\nactive = "notes"\n\n[providers.notes]\ntype = "pmm-dir"\npath = "{home}/n"\n\n'
        f'[providers.copy]\ntype = "pmm-dir"\npath = "{home}/c"\n'
    )
    write_config(home, config)
    older, newer = "2026-11-30T09:00:00.000Z", "2026-11-30T10:00:00.000Z"
    with StagingStore.open(paths.database) as store, store.transaction():
        for scope, last_ok in ((alice, older), (bob, newer)):
            name = scoped_name("notes", scope)
            store.providers.register(name, "pmm-dir", name, utc_now_iso())
            store.providers.save_last_cycle(name, json.dumps({"last_ok_at": last_ok}))
        for scope, pending in ((alice, 2), (bob, 1)):
            for n in range(pending):
                store.outbox.enqueue(
                    1,
                    f"{scope.label}-{n}",
                    scoped_name("copy", scope),
                    WriteKind.CREATE,
                    None,
                    source=scoped_name("notes", scope),
                    source_link=None,
                    attempts=0,
                    now=utc_now_iso(),
                )
    folded = samples(Metrics(paths).render(None)[0].decode())
    assert value(folded, "memsync_outbox_actions", provider="copy", state="pending") == 3
    newest = parse_instant(newer)
    assert newest is not None
    last = "memsync_provider_last_success_timestamp_seconds"
    assert value(folded, last, provider="notes") == newest.timestamp()
    assert not [s for s in folded if s.labels.get("scope")]

    write_config(home, config + "\n[metrics]\nper_scope = true\n")
    split = samples(Metrics(paths).render(None)[0].decode())
    pending = "memsync_outbox_actions"
    assert value(split, pending, provider="copy", state="pending", scope="user_id=alice") == 2
    assert value(split, pending, provider="copy", state="pending", scope="user_id=bob") == 1
    assert value(split, last, provider="notes", scope="user_id=bob") == newest.timestamp()


LIVE_ONLY = """
[sync]
active = "server"
interval = "1h"
probe = "1s"

[backup]
interval = "1h"

[ui]
listen = "127.0.0.1:{port}"

[providers.server]
type = "mem0-server"
base_url = "{url}"
auth = "none"
scope = {{ user_id = "*" }}

[providers.agents]
type = "mnem"
path = "{home}/agents/{{user_id}}/memory"
create = true
"""


def test_every_cycle_is_counted_when_changes_arrive_only_through_the_watcher_and_the_probe(
    home: Path,
) -> None:
    """Issue 40 saw 15 runs in a live daemon and memsync_cycles_total at 1: only the full pass
    was counted. Here the interval is an hour, so after the first sync every cycle is a live
    one: a server add the probe finds, an agent's write the watcher sees."""
    port = free_port()
    with served_mem0_server() as server:
        server.add("alice likes tea", user_id="alice")
        write_config(home, LIVE_ONLY.format(port=port, url=server.url, home=home))
        daemon = DaemonProcess(home)
        try:
            daemon.wait_for_line("sync #1 ok", timeout=DEADLINE)
            store = home / "agents" / "alice" / "memory"
            server.add("alice walks to work", user_id="alice")  # found by the probe
            wait_until(lambda: "alice walks to work" in nodes_of(store).values(), 60, "probe")
            agent_writes(store, "reads", "alice reads at night")  # seen by the watcher
            wait_until(lambda: "alice reads at night" in server.texts("alice"), 60, "watch")
            paths = resolve_paths()
            page = {"Authorization": f"token {load_or_create_token(paths)}"}
            url = f"http://127.0.0.1:{port}/metrics"
            scraped: list[list[Sample]] = []

            def counted_every_run() -> bool:
                with StagingStore.open(paths.database, create=False) as store_db:
                    ran = len(cycle_history(store_db))
                found = samples(httpx.get(url, headers=page, timeout=60).text)
                scraped[:] = [found]
                cycles = [s for s in found if s.name == "memsync_cycles_total"]
                return ran >= 3 and sum(s.value for s in cycles) == ran

            wait_until(counted_every_run, 60, "every run in the runs table counted")
        finally:
            daemon.stop()
            daemon.kill()
    found = scraped[0]
    with StagingStore.open(resolve_paths().database, create=False) as store_db:
        runs = cycle_history(store_db)
    live = len(runs) - 1  # the first sync is the one full pass
    assert value(found, "memsync_cycles_total", outcome="ok", trigger="full") == 1
    assert value(found, "memsync_cycles_total", outcome="ok", trigger="live") == live >= 2
    assert value(found, "memsync_cycle_duration_seconds_count", trigger="live") == live
    durations = sum(run["duration_s"] for run in runs)
    assert sum(
        value(found, "memsync_cycle_duration_seconds_sum", trigger=t) for t in ("full", "live")
    ) == pytest.approx(durations)
    # The first sync wrote tea into alice's store; the live cycles wrote walks there and
    # reads to the server: each carried memory is one write and one lag observation.
    writes = "memsync_writes_total"
    assert value(found, writes, provider="agents", kind="create", outcome="ok") == 2
    assert value(found, writes, provider="server", kind="create", outcome="ok") == 1
    assert value(found, "memsync_propagation_lag_seconds_count") == 3
