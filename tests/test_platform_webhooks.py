"""The Platform's webhooks: the double as the docs show them, Mem0's own client driving it, and
memsync's side (the listener, `memsync webhook register|list|remove`).

The Platform cannot be reached from here: its double (``tests/doubles/mem0_platform_webhooks.py``)
follows the documented routes and payload, and Mem0's ``MemoryClient`` (mem0ai 2.2.1) must be
able to call it, as upstream's own check of the double.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported

from memsync.base.paths import Paths
from memsync.base.secrets import Secret
from memsync.config import parse_config
from memsync.orchestration.live.webhook_receiver import WebhookReceiver
from memsync.orchestration.live.webhook_setup import WebhookSetup, read_secret
from memsync.providers.mem0.platform import Mem0PlatformProvider
from memsync.providers.mem0.platform_webhooks import PlatformWebhooks
from memsync.providers.pushed import PushedEvent
from memsync.staging import StagingStore
from tests.conftest import run_memsync, write_config
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.live_world import serve

KEY = "m0-webhook-key-0123456789"
HOOKS = ["memory_add", "memory_update", "memory_delete"]


def client(double: Mem0PlatformDouble) -> Any:
    from mem0 import MemoryClient

    return MemoryClient(
        api_key=KEY, host="https://api.mem0.test", client=httpx.Client(transport=double.transport())
    )


def test_memoryclient_creates_lists_updates_and_deletes_a_webhook_on_the_double() -> None:
    double = Mem0PlatformDouble(api_key=KEY)
    mem0 = client(double)
    assert mem0.project_id == "proj_test"  # learnt from GET /v1/ping/, as upstream does
    made = mem0.create_webhook(
        url="https://hooks.example.com/a", name="memsync", project_id="proj_test", event_types=HOOKS
    )
    assert made["webhook_id"].startswith("wh_") and made["event_types"] == HOOKS
    assert made["is_active"] is True and made["project"] == "proj_test"
    listed = mem0.get_webhooks(project_id="proj_test")
    assert [h["webhook_id"] for h in listed] == [made["webhook_id"]]
    updated = mem0.update_webhook(webhook_id=made["webhook_id"], url="https://hooks.example.com/b")
    assert updated == {"message": "Webhook updated successfully"}
    assert mem0.get_webhooks(project_id="proj_test")[0]["url"] == "https://hooks.example.com/b"
    assert mem0.delete_webhook(webhook_id=made["webhook_id"]) == {
        "message": "Webhook deleted successfully"
    }
    assert mem0.get_webhooks(project_id="proj_test") == []

    from mem0.exceptions import MemoryError as Mem0Error

    with pytest.raises(Mem0Error):  # a missing field is a 400, field by field
        mem0.create_webhook(url="", name="x", project_id="proj_test", event_types=HOOKS)
    with pytest.raises(Mem0Error):
        mem0.delete_webhook(webhook_id=made["webhook_id"])  # gone: 404


class Received:
    """memsync's listener on loopback, recording each request's raw body and parsed event."""

    def __init__(self, provider: Mem0PlatformProvider, secret: str) -> None:
        self.bodies: list[bytes] = []
        self.events: list[PushedEvent] = []
        self.refused: list[tuple[str | None, str]] = []
        webhooks = PlatformWebhooks(provider)
        parse = webhooks.parse

        def recording(body: bytes) -> PushedEvent:
            self.bodies.append(body)
            return parse(body)

        webhooks.parse = recording  # type: ignore[method-assign]
        self.receiver = WebhookReceiver(
            "127.0.0.1",
            0,
            routes={"cloud": webhooks},
            secret=lambda name: secret if name == "cloud" else None,
            on_event=lambda name, event: self.events.append(event),
            on_refused=lambda name, why: self.refused.append((name, why)),
        )
        self.receiver.start_in_thread()
        self.url = f"{self.receiver.base_url}/hooks/cloud/{secret}"

    def close(self) -> None:
        self.receiver.stop()


@pytest.fixture
def received() -> Iterator[tuple[Mem0PlatformDouble, Received]]:
    double = Mem0PlatformDouble(api_key=KEY)
    provider = Mem0PlatformProvider(
        "cloud",
        {"user_id": "*"},
        secret=Secret(KEY, "$K"),
        base_url="https://api.mem0.test",
        transport=double.transport(),
    )
    listening = Received(provider, "s" * 43)
    yield double, listening
    listening.close()
    double.webhooks.close()


def wait_for(condition: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_the_double_posts_each_event_as_the_docs_show_and_the_listener_reads_it(
    received: tuple[Mem0PlatformDouble, Received],
) -> None:
    double, listening = received
    mem0 = client(double)
    mem0.create_webhook(
        url=listening.url, name="memsync", project_id="proj_test", event_types=HOOKS
    )
    added = mem0.add([{"role": "user", "content": "likes tea"}], user_id="alice", infer=False)
    memory_id = added["results"][0]["id"]
    mem0.update(memory_id, text="likes green tea")
    mem0.delete(memory_id)
    wait_for(lambda: len(listening.events) == 3, "three events")
    assert [json.loads(body) for body in listening.bodies] == [
        {"event_details": {"id": memory_id, "data": {"memory": text}, "event": kind}}
        for kind, text in (
            ("ADD", "likes tea"),
            ("UPDATE", "likes green tea"),
            ("DELETE", "likes green tea"),
        )
    ]
    assert [(e.kind, e.memory_id, e.text) for e in listening.events] == [
        ("add", memory_id, "likes tea"),
        ("update", memory_id, "likes green tea"),
        ("delete", memory_id, "likes green tea"),
    ]
    assert [status for *_, status in double.webhooks.delivered] == [204, 204, 204]


def test_the_listener_refuses_a_wrong_secret_path_or_body_and_never_logs_the_secret(
    received: tuple[Mem0PlatformDouble, Received], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="memsync")
    _, listening = received
    base = listening.receiver.base_url
    event = {"event_details": {"id": str(uuid.uuid4()), "data": {"memory": "x"}, "event": "ADD"}}
    with httpx.Client() as http:
        assert http.post(f"{base}/hooks/cloud/{'t' * 43}", json=event).status_code == 404
        assert http.post(f"{base}/hooks/other/{'s' * 43}", json=event).status_code == 404
        assert http.get(listening.url).status_code == 404
        assert http.post(listening.url, content=b"{").status_code == 400
        wrong = {"event_details": {"id": "not-a-uuid", "event": "ADD"}}
        assert http.post(listening.url, json=wrong).status_code == 400
        assert http.post(listening.url, content=b"x" * 70_000).status_code == 413
        assert http.post(listening.url, json=event).status_code == 204
    assert len(listening.events) == 1
    assert {why for _, why in listening.refused} >= {"a wrong secret", "not a webhook route"}
    assert "s" * 43 not in caplog.text


# --- memsync webhook register | list | remove, against the double on a socket ------------------


def platform_config(home: Path, url: str, listen: str = "127.0.0.1:0") -> str:
    return f"""
[sync]
active = "cloud"

[webhooks]
listen = "{listen}"
public_url = "https://hooks.example.com/memsync"

[providers.cloud]
type = "mem0-platform"
base_url = "{url}"
allow_insecure_http = true
api_key_env = "MEM0_TEST_KEY"
scope = {{ user_id = "*" }}

[providers.copy]
type = "pmm-dir"
path = "{home / "copy"}"
"""


def test_register_list_and_remove_go_through_the_platforms_routes_and_keep_the_secret_private(
    home: Path,
) -> None:
    double = Mem0PlatformDouble(api_key=KEY)
    with serve(double.app) as url:
        write_config(home, platform_config(home, url))
        env = {"MEM0_TEST_KEY": KEY}
        done = run_memsync(home, "webhook", "register", "cloud", env_extra=env)
        assert done.returncode == 0, done.stderr
        (hook,) = double.webhooks.hooks.values()
        secret = read_secret(_paths(home), "cloud")
        assert secret is not None and hook["url"] == (
            f"https://hooks.example.com/memsync/hooks/cloud/{secret}"
        )
        assert hook["event_types"] == HOOKS and hook["project"] == "proj_test"
        assert done.stdout.splitlines()[0] == (
            f"registered webhook {hook['webhook_id']} on project proj_test "
            "(memory_add, memory_update, memory_delete) -> "
            "https://hooks.example.com/memsync/hooks/cloud/****"
        )
        state = home / "state" / "webhook-secret-cloud"
        assert state.stat().st_mode & 0o777 == 0o600

        again = run_memsync(home, "webhook", "register", "cloud", env_extra=env)
        assert again.stdout.startswith(f"kept webhook {hook['webhook_id']}"), again.stdout
        assert len(double.webhooks.hooks) == 1

        listed = run_memsync(home, "webhook", "list", "--json", env_extra=env)
        assert listed.returncode == 0, listed.stderr
        shown = json.loads(listed.stdout)["cloud"]
        assert shown["webhooks"][0]["memsync"] is True
        assert shown["health"]["state"] == "waiting"
        status = run_memsync(home, "status", "--json", env_extra=env)
        for said in (done.stdout, again.stdout, listed.stdout, status.stdout, status.stderr):
            assert secret not in said

        gone = run_memsync(home, "webhook", "remove", "cloud", env_extra=env)
        assert gone.returncode == 0, gone.stderr
        assert gone.stdout.startswith(f"removed webhook {hook['webhook_id']} of cloud")
        assert double.webhooks.hooks == {} and not state.exists()


def _paths(home: Path) -> Paths:
    return Paths(home / "config" / "config.toml", home / "state", home / "data", home / "run")


def test_register_says_in_one_line_what_is_missing(home: Path) -> None:
    double = Mem0PlatformDouble(api_key=KEY)
    with serve(double.app) as url:
        write_config(
            home,
            platform_config(home, url).replace(
                'public_url = "https://hooks.example.com/memsync"\n', ""
            ),
        )
        refused = run_memsync(
            home, "webhook", "register", "cloud", env_extra={"MEM0_TEST_KEY": KEY}
        )
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert "set [webhooks] public_url" in refused.stderr
        plain = run_memsync(
            home,
            "webhook",
            "register",
            "cloud",
            "--public-url",
            "http://hooks.example.com",
            env_extra={"MEM0_TEST_KEY": KEY},
        )
        assert "is plain HTTP" in plain.stderr and plain.returncode != 0
        other = run_memsync(
            home, "webhook", "register", "copy", "--public-url", "https://x.example"
        )
        assert "pushes no changes memsync can receive" in other.stderr
        assert double.webhooks.hooks == {}


def test_a_registration_pointing_elsewhere_moves_to_the_new_secret(tmp_path: Path) -> None:
    double = Mem0PlatformDouble(api_key=KEY)
    with serve(double.app) as url:
        paths = _paths(tmp_path)
        paths.ensure()
        os.environ["MEM0_TEST_KEY"] = KEY
        try:
            config = parse_config(platform_config(tmp_path, url))
            setup = WebhookSetup(paths, config)
            first = setup.register("cloud")
            rotated = setup.register("cloud", rotate=True)
        finally:
            del os.environ["MEM0_TEST_KEY"]
        assert (first.how, rotated.how) == ("registered", "moved")
        assert rotated.subscription.id == first.subscription.id
        (hook,) = double.webhooks.hooks.values()
        assert hook["url"].endswith(f"/hooks/cloud/{read_secret(paths, 'cloud')}")
        with StagingStore.open(paths.database) as store:
            ours = store.webhooks.of("cloud")
        assert ours is not None and ours.url.endswith("/hooks/cloud/****")


def test_a_restarted_daemon_takes_up_events_that_arrived_within_the_hour(tmp_path: Path) -> None:
    """A restart must not speed the probe back up until the next event: the health noted in
    staging says events were arriving five minutes ago."""
    from datetime import UTC, datetime, timedelta

    from memsync.orchestration.live.announcements import Announcements

    paths = _paths(tmp_path)
    paths.ensure()
    recent = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    with StagingStore.open(paths.database) as store, store.transaction():
        store.webhooks.register("cloud", "wh_1", "project proj_test", "https://x/****", recent)
        store.webhooks.note(
            "cloud",
            state="arriving",
            last_event_at=recent,
            events={"add": 3},
            missed=0,
            rejected=0,
            probe_every=60.0,
            now=recent,
        )
    restarted = Announcements(lambda name: "s" * 43)
    restarted.pushed = {"cloud": object()}  # type: ignore[dict-item]
    assert restarted.state("cloud") == "waiting"
    restarted.resume(paths.database)
    assert restarted.state("cloud") == "arriving"
