"""App scopes: the Mem0 Platform's fourth entity type, wherever user, agent and run work.

One user, two apps on the Platform (its double, spoken to by the real command line): with
``scope = { user_id = "alice", app_id = "*" }`` each app is a scope of its own, discovered
from alice's memories, with its own mnem store (``{app_id}`` in the path template) and its own
PMM file; a memory written in one app's store goes back to the Platform under that app;
``--scope app_id=...``, status and the status page speak per app. Where a store has no app
key (the Mem0 library, the self-hosted server), an app scope is a config error.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import httpx
import mnem  # the real SDK: a missing build is an error, not a skip
import pytest

from memsync.base.errors import ConfigError
from memsync.base.paths import resolve_paths
from memsync.base.scopes import Scope
from memsync.base.secrets import resolve_secret
from memsync.config import Config, Mem0PlatformConfig, parse_config
from memsync.orchestration.ui.server import UiServer
from memsync.providers.mem0 import platform as platform_module
from memsync.providers.mem0.platform import Mem0PlatformProvider
from tests.conftest import write_config
from tests.doubles.mem0_platform_app import Mem0PlatformDouble
from tests.test_scopes import mnem_texts, pmm_texts, sync_json

KEY = "m0-apps-key-0123456789"
APPS = {
    "web": ["alice prefers dark mode", "alice shops on Sundays"],
    "support": ["alice reported a billing bug"],
}


def configure(home: Path, scope: str = '{ user_id = "alice", app_id = "*" }') -> None:
    write_config(
        home,
        f"""
[sync]
active = "cloud"

[providers.cloud]
type = "mem0-platform"
base_url = "https://api.mem0.test"
api_key_env = "MEM0_API_KEY"
scope = {scope}

[providers.apps]
type = "mnem"
path = "{home / "apps"}/{{app_id}}/memory"
create = true

[providers.backup]
type = "pmm-dir"
path = "{home / "backup"}"
direction = "push"
""",
    )


@pytest.fixture
def platform(home: Path, monkeypatch: pytest.MonkeyPatch) -> Mem0PlatformDouble:
    """The Platform double, reached by the providers the command line builds."""
    double = Mem0PlatformDouble(api_key=KEY)
    for app, texts in APPS.items():
        for text in texts:
            double.insert(text, user_id="alice", app_id=app)
    double.insert("bob uses the web app", user_id="bob", app_id="web")
    double.insert("alice outside any app", user_id="alice")

    def build(name: str, entry: Mem0PlatformConfig, config: Config) -> Mem0PlatformProvider:
        return Mem0PlatformProvider(
            name,
            entry.scope,
            secret=resolve_secret(name, entry.api_key_env, entry.api_key_file),
            base_url=entry.base_url,
            transport=double.transport(),
            latest_only=entry.latest_only,
        )

    monkeypatch.setattr(platform_module, "build", build)
    monkeypatch.setenv("MEM0_API_KEY", KEY)
    configure(home)
    return double


def test_two_apps_of_one_user_are_two_scopes_each_with_its_own_stores(
    home: Path, cli: Any, platform: Mem0PlatformDouble
) -> None:
    code, report = sync_json(cli)
    assert code == 0, report
    assert set(report["scopes"]) == {"app_id=support", "app_id=web"}
    for app, texts in APPS.items():
        assert mnem_texts(home / "apps" / app / "memory") == set(texts)
        assert pmm_texts(home / "backup" / f"{app}.pmm.jsonl") == set(texts)
    # bob's memory is not alice's; alice's memory outside any app is in no app scope
    held = {t for app in APPS for t in mnem_texts(home / "apps" / app / "memory")}
    assert not any("bob" in t or "outside" in t for t in held)
    code, again = sync_json(cli)
    assert code == 0 and again["actions_total"] == 0  # nothing crosses apps


def test_a_memory_written_in_one_apps_store_reaches_the_platform_under_that_app(
    home: Path, cli: Any, platform: Mem0PlatformDouble
) -> None:
    assert cli("sync").exit_code == 0
    store = mnem.open(str(home / "apps" / "support" / "memory"))
    try:
        mnem.agents.remember(store, "ticket-7", "alice's refund was approved")
    finally:
        del store
        gc.collect()
    code, report = sync_json(cli)
    assert code == 0, report
    (written,) = [
        m for m in platform.memories.values() if m["memory"] == "alice's refund was approved"
    ]
    assert (written["user_id"], written["app_id"]) == ("alice", "support")
    (add,) = platform.faults.requests("POST", "/v3/memories/add/")
    assert add.body["app_id"] == "support" and add.body["user_id"] == "alice"
    assert "alice's refund was approved" not in mnem_texts(home / "apps" / "web" / "memory")


def test_status_log_and_the_page_speak_per_app(
    home: Path, cli: Any, platform: Mem0PlatformDouble
) -> None:
    assert cli("sync").exit_code == 0
    status = json.loads(cli("status", "--json").output)
    assert status["providers"]["cloud"]["scopes"] == {"app_id=support": 1, "app_id=web": 2}
    one = json.loads(cli("status", "--json", "--scope", "app_id=web").output)
    assert set(one["providers"]) == {"cloud[app_id=web]", "apps[app_id=web]", "backup[app_id=web]"}
    log = json.loads(cli("log", "--json", "--scope", "app_id=support").output)
    assert {e["content"] for e in log if e["kind"] == "added"} == set(APPS["support"])
    assert all(e["provider"].endswith("[app_id=support]") for e in log)

    page = UiServer(resolve_paths(), "127.0.0.1", 0)
    page.start_in_thread()
    try:
        answer = httpx.get(
            f"{page.base_url}/api/status",
            headers={"Authorization": f"token {page.token}"},
            timeout=60,
        )
    finally:
        page.stop()
    assert answer.status_code == 200
    # the page shows each app as a scope of its provider, as status does (folded: a team of a
    # thousand is one group, fifty scopes at a time, not a row per scoped name)
    shown = answer.json()["providers"]
    assert shown["cloud"]["scopes"] == {"app_id=support": 1, "app_id=web": 2}
    assert not any(name.startswith("cloud[") for name in shown)


def test_apps_are_discovered_from_the_platforms_entities_too(
    home: Path, cli: Any, platform: Mem0PlatformDouble
) -> None:
    configure(home, '{ app_id = "*" }')  # every app of the project, whoever's
    code, report = sync_json(cli)
    assert code == 0, report
    assert set(report["scopes"]) == {"app_id=support", "app_id=web"}
    assert mnem_texts(home / "apps" / "web" / "memory") == {*APPS["web"], "bob uses the web app"}


def test_scope_option_takes_app_id() -> None:
    assert Scope.parse("user_id=alice,app_id=web").as_dict() == {
        "user_id": "alice",
        "app_id": "web",
    }


@pytest.mark.parametrize("kind", ["mem0-oss", "mem0-server"])
@pytest.mark.parametrize("value", ["web", "*"])
def test_an_app_scope_where_the_store_has_no_app_key_is_a_config_error(
    kind: str, value: str
) -> None:
    extra = 'base_url = "https://mem0.test"' if kind == "mem0-server" else 'embedder = "hash"'
    with pytest.raises(ConfigError) as refused:
        parse_config(
            f"""
[sync]
active = "m"
[providers.m]
type = "{kind}"
{extra}
scope = {{ user_id = "alice", app_id = "{value}" }}
"""
        )
    message = str(refused.value)
    assert message.startswith("config: providers.m.scope: app_id is a Mem0 Platform key")
    assert "\n" not in message


def test_an_app_scope_in_a_config_file_exits_2_with_one_line(home: Path, cli: Any) -> None:
    write_config(
        home,
        """
[sync]
active = "m"
[providers.m]
type = "mem0-server"
base_url = "https://mem0.test"
scope = { user_id = "alice", app_id = "web" }
""",
    )
    result = cli("check")
    assert result.exit_code == 2
    assert "app_id is a Mem0 Platform key" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
