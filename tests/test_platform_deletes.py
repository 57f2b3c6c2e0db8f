"""Changes on the Platform reach mnem live, deletes included, with webhooks and without (issue 39).

The daemon's ``Live`` runs as the daemon runs it, against the Platform double served on a
loopback socket (its webhooks POST to memsync's listener over real HTTP) and real mnem
stores, one per user from a path template. Another program deletes and adds memories through
Mem0's own ``MemoryClient``.

The bounds stated in docs/daemon.md, "Deletes on the Platform":

- with webhooks: one hinted cycle after the event arrives (the probe here is an hour apart,
  so nothing else could carry it);
- without: within ``delete_check`` + ``probe`` + one hinted cycle, for a memory created before
  the probe's last window began (here 2 s + 1 s; the full pass is a day away).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported

from memsync.base.paths import Paths
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.orchestration.live.webhook_setup import WebhookSetup
from memsync.orchestration.status.collect import collect_status
from memsync.orchestration.status.webhooks import webhook_line
from memsync.orchestration.ui.metrics import Metrics
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mem0.platform_probe import PlatformChangesProbe
from memsync.staging import StagingStore
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.live_world import serve
from tests.test_live_watch import Running, nodes_of, paths_in, running, wait_until

__all__ = ["running"]

KEY = "m0-deletes-key-0123456789"
USERS = ("alice", "bob", "carol")
SLACK = 20.0  # a hinted cycle on a busy machine; the bound's own terms are added to it


def config_for(home: Path, url: str, *, probe: str, delete_check: str, webhooks: bool) -> str:
    listen = '[webhooks]\nlisten = "127.0.0.1:0"\nallow_insecure_http = true\n'
    return f"""
[sync]
active = "cloud"
interval = "1d"
probe = "{probe}"

{listen if webhooks else ""}
[providers.cloud]
type = "mem0-platform"
base_url = "{url}"
allow_insecure_http = true
api_key_env = "MEM0_DELETES_KEY"
scope = {{ user_id = "*" }}
delete_check = "{delete_check}"

[providers.agents]
type = "mnem"
path = "{home / "agents" / "{user_id}" / "memory"}"
create = true
"""


class Platform:
    """The double on a socket, and Mem0's own client writing to it as another program."""

    def __init__(self, double: Mem0PlatformDouble, url: str) -> None:
        from mem0 import MemoryClient

        self.double = double
        self.url = url
        self.client = MemoryClient(api_key=KEY, host=url, client=httpx.Client(base_url=url))

    def delete(self, memory_id: str) -> None:
        self.client.delete(memory_id)

    def ids(self, text: str) -> str:
        (found,) = [i for i, m in self.double.memories.items() if m["memory"] == text]
        return found


@pytest.fixture
def platform() -> Iterator[Platform]:
    double = Mem0PlatformDouble(api_key=KEY)
    old = datetime.now(UTC) - timedelta(days=30)
    for user in USERS:
        for i in range(3):
            double.insert(f"{user} memory {i}", created_at=old, user_id=user)
    os.environ["MEM0_DELETES_KEY"] = KEY
    try:
        with serve(double.app) as url:
            yield Platform(double, url)
    finally:
        os.environ.pop("MEM0_DELETES_KEY", None)
        double.webhooks.close()


def texts(home: Path, user: str) -> set[str]:
    return set(nodes_of(home / "agents" / user / "memory").values())


def started(
    tmp_path: Path, platform: Platform, make: Callable[..., Running], **settings: Any
) -> tuple[Running, Paths]:
    paths = paths_in(tmp_path)
    text = config_for(tmp_path, platform.url, **settings)
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(text)  # what status and /metrics read
    config = parse_config(text)
    r = make(paths, config)
    r.live.start()  # the listener starts with the live side
    if settings.get("webhooks"):
        receiver = r.live.pushes.receiver
        assert receiver is not None
        # The user's proxy or tunnel would forward the public URL here: the test calls it.
        public = {"public_url": receiver.base_url}
        hooks = config.webhooks.model_copy(update=public)
        WebhookSetup(paths, config.model_copy(update={"webhooks": hooks})).register("cloud")
    r.full_pass()  # the daemon's first sync: a store per user
    for user in USERS:
        assert texts(tmp_path, user) == {f"{user} memory {i}" for i in range(3)}
    return r, paths


def test_a_delete_on_the_platform_reaches_mnem_by_its_event(
    tmp_path: Path, platform: Platform, running: Callable[..., Running]
) -> None:
    r, paths = started(tmp_path, platform, running, probe="1h", delete_check="off", webhooks=True)
    cycles = r.live.cycles
    doomed = platform.ids("bob memory 1")
    deleted = time.monotonic()
    platform.delete(doomed)
    wait_until(lambda: "bob memory 1" not in texts(tmp_path, "bob"), "the delete in bob's store")
    took = time.monotonic() - deleted
    assert took <= SLACK, took
    assert texts(tmp_path, "bob") == {"bob memory 0", "bob memory 2"}
    assert texts(tmp_path, "alice") == {f"alice memory {i}" for i in range(3)}
    # A hinted cycle carried it (the probe is an hour away, the full pass a day).
    wait_until(lambda: r.live.cycles > cycles, "the hinted cycle to end")
    wait_until(lambda: r.live.pushes.announcements.state("cloud") == "arriving", "arriving")
    r.live.pushes.announcements.note(paths.database, {"cloud": 60.0}, force=True)
    with StagingStore.open(paths.database) as store:
        ours = store.webhooks.of("cloud")
    assert ours is not None and ours.state == "arriving" and ours.events.get("delete") == 1
    said = collect_status(paths)["providers"]["cloud"]["webhooks"]
    assert said["state"] == "arriving" and said["received"] == 1
    scraped = Metrics(paths).render(None)[0].decode()
    assert 'memsync_webhook_up{provider="cloud"} 1.0' in scraped
    assert 'memsync_webhook_events_total{event="delete",provider="cloud"} 1.0' in scraped


def test_an_event_lost_is_found_by_the_probe_said_missed_and_the_probe_speeds_up_again(
    tmp_path: Path, platform: Platform, running: Callable[..., Running]
) -> None:
    r, paths = started(tmp_path, platform, running, probe="1s", delete_check="off", webhooks=True)
    pushes = r.live.pushes
    pushes.slow_probe, pushes.announcements.grace = 3.0, 0.5  # 60 s and 30 s, scaled down
    platform.client.add([{"role": "user", "content": "bob sails"}], user_id="bob", infer=False)
    wait_until(lambda: "bob sails" in texts(tmp_path, "bob"), "bob's add, by its event")
    wait_until(lambda: r.live.probing.slower.get("cloud") == 3.0, "the probe slowed down")

    platform.double.webhooks.drop_every = 1  # every event from now on is lost
    platform.client.add([{"role": "user", "content": "bob rows"}], user_id="bob", infer=False)
    wait_until(lambda: "bob rows" in texts(tmp_path, "bob"), "bob's add, by the probe")
    wait_until(lambda: pushes.announcements.state("cloud") == "silent", "the events silent")
    wait_until(lambda: "cloud" not in r.live.probing.slower, "the probe at its own period")
    pushes.announcements.note(paths.database, {"cloud": 1.0}, force=True)
    said = collect_status(paths)["providers"]["cloud"]["webhooks"]
    assert said["state"] == "silent" and said["missed"] == 1, said
    with StagingStore.open(paths.database) as store:
        noted = store.webhooks.of("cloud")
    assert noted is not None  # as `status` says it while the daemon runs:
    assert webhook_line(noted, daemon_running=True).startswith("cloud: webhooks SILENT (last")
    scraped = Metrics(paths).render(None)[0].decode()
    assert 'memsync_webhook_missed_total{provider="cloud"} 1.0' in scraped
    assert 'memsync_webhook_up{provider="cloud"} 0.0' in scraped


def test_a_delete_on_the_platform_reaches_mnem_by_the_count_check_without_webhooks(
    tmp_path: Path, platform: Platform, running: Callable[..., Running]
) -> None:
    r, _ = started(tmp_path, platform, running, probe="1s", delete_check="2s", webhooks=False)
    (probe,) = r.live.probes
    assert isinstance(probe, PlatformChangesProbe) and probe.deletes is not None
    wait_until(lambda: probe.deletes is not None and probe.deletes.requests >= 1, "a count check")
    before = probe.deletes.requests
    doomed = platform.ids("carol memory 2")
    deleted = time.monotonic()
    platform.delete(doomed)
    wait_until(lambda: "carol memory 2" not in texts(tmp_path, "carol"), "the delete in carol's")
    took = time.monotonic() - deleted
    assert took <= 2 + 1 + SLACK, took
    assert texts(tmp_path, "carol") == {"carol memory 0", "carol memory 1"}
    assert texts(tmp_path, "alice") == {f"alice memory {i}" for i in range(3)}
    # One count across every scope, then bisection over three users: a handful of counts.
    assert probe.deletes.requests - before <= 8


# --- the probe, narrowed -------------------------------------------------------------------------


def platform_probe(double: Mem0PlatformDouble, clock: list[datetime]) -> PlatformChangesProbe:
    provider = Mem0PlatformProvider(
        "cloud",
        {"user_id": "*"},
        secret=Secret(KEY, "$KEY"),
        base_url="https://api.mem0.test",
        transport=double.transport(),
    )
    return PlatformChangesProbe("cloud", provider, ("user_id",), now=lambda: clock[0])


def test_past_its_pages_the_probe_splits_its_window_and_never_lists_every_scope() -> None:
    """Issue 39 §5: 1,300 changes in a window (more than 5 pages of 200) listed every scope."""
    double = Mem0PlatformDouble(api_key=KEY)
    old = datetime.now(UTC) - timedelta(days=30)
    for user in range(50):
        for i in range(4):
            double.insert(f"u{user} {i}", created_at=old, user_id=f"u{user:02d}")
    clock = [datetime.now(UTC)]
    probe = platform_probe(double, clock)
    probe.ask({})  # the first probe sets the window
    for number in range(1300):
        double.insert(f"new {number}", user_id=f"u{number % 10:02d}")
    clock[0] = datetime.now(UTC) + timedelta(seconds=1)
    asked = probe.requests
    flags = probe.ask({})
    assert flags.everything is None
    assert flags.scopes == {f"user_id=u{user:02d}" for user in range(10)}
    assert sum(len(ids) for ids in flags.changed.values()) == 1300
    # Each memory read once (7 pages) plus the halves that split the window: far below the
    # 51 requests of listing every scope, and proportional to the changes.
    assert probe.requests - asked <= 30, probe.requests - asked
    clock[0] += timedelta(seconds=5)  # the next probe's window overlaps the burst...
    asked = probe.requests
    assert probe.ask({}).scopes == set()
    assert probe.requests - asked <= 3  # ...whose count says it holds nothing new: not reread


def test_each_probe_asks_only_since_the_one_before() -> None:
    double = Mem0PlatformDouble(api_key=KEY)
    clock = [datetime.now(UTC)]
    probe = platform_probe(double, clock)
    probe.ask({})
    first = clock[0]
    clock[0] += timedelta(seconds=5)
    probe.ask({})
    (asked,) = [s for s in double.faults.seen if s.path == "/v3/memories/"][-1:]
    (window,) = [c["updated_at"] for c in asked.body["filters"]["AND"] if "updated_at" in c]
    since = datetime.fromisoformat(window["gte"].replace("Z", "+00:00"))
    assert since == first - timedelta(seconds=30)  # not the ten-minute look-back
