"""The config is validated on load: every mistake names its key and what is expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsync.base.errors import ConfigError
from memsync.base.secrets import resolve_secret
from memsync.config import load_config, parse_config, parse_duration

VALID = """
[sync]
active = "mem0"
conflict = "newest"
max_delete = "25%"
max_delete_count = 100
interval = "5m"

[backup]
interval = "1h"
keep = 24

[providers.mem0]
type = "mem0-oss"
direction = "both"
scope = { user_id = "alice" }

[providers.backup]
type = "pmm-dir"
path = "~/memsync-pmm"
direction = "push"
"""


def test_the_documented_example_loads() -> None:
    config = parse_config(VALID)
    assert config.sync.active == "mem0"
    assert config.sync.interval == 300 and config.backup.interval == 3600
    assert config.sync.adopt == "content"  # the default: adopt what both sides already hold
    assert config.sync.max_delete == 25.0
    assert config.providers["backup"].path == Path("~/memsync-pmm").expanduser()  # type: ignore[union-attr]


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(VALID.replace("~/memsync-pmm", "pmm"))
    assert load_config(path).providers["backup"].path == tmp_path / "pmm"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (('direction = "push"', 'directon = "push"'), "providers.backup.directon: unknown key"),
        (('direction = "push"', 'direction = "sideways"'), "providers.backup.direction: expected"),
        (('type = "pmm-dir"', 'type = "pmm-dri"'), "providers.backup: unknown provider type"),
        (('active = "mem0"', 'active = "mnem"'), "'mnem' names no configured provider"),
        (
            ('scope = { user_id = "alice" }', "scope = {}"),
            "providers.mem0.scope: expected at least",
        ),
        (('scope = { user_id = "alice" }', 'scope = { usr = "a" }'), "unknown scope key"),
        (('interval = "5m"', 'interval = "five"'), "sync.interval: expected a duration"),
        (('max_delete = "25%"', 'max_delete = "150%"'), "sync.max_delete: expected a percentage"),
        (('conflict = "newest"', 'conflict = "oldest"'), "sync.conflict: expected"),
        (('conflict = "newest"', 'adopt = "text"'), "sync.adopt: expected 'content' or 'off'"),
        (("keep = 24", "keep = 0"), "backup.keep"),
        (("keep = 24", 'keep = "many"'), "backup.keep"),
        (("[backup]", "[backups]"), "backups: unknown key"),
    ],
)
def test_mistakes_name_the_key_and_what_is_expected(edit: tuple[str, str], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(VALID.replace(*edit))
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_sync_section_is_named() -> None:
    with pytest.raises(ConfigError, match="sync: required key is missing"):
        parse_config('[providers.a]\ntype = "pmm-dir"\npath = "p"\n')


def test_invalid_toml_gives_line_and_column() -> None:
    with pytest.raises(ConfigError, match=r"invalid TOML: .*line 2"):
        parse_config("[sync]\nactive = \n")


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="memsync init"):
        load_config(tmp_path / "nope.toml")


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        load_config(path)


@pytest.mark.parametrize("key", ["api_key", "token", "password"])
def test_literal_secrets_are_rejected_with_how_to_pass_them(key: str) -> None:
    text = (
        VALID
        + f'\n[providers.cloud]\ntype = "mem0-platform"\nscope = {{ user_id = "a" }}\n{key} = "m0-SECRET"\n'
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    message = str(caught.value)
    assert "api_key_env" in message and "api_key_file" in message
    assert "m0-SECRET" not in message


def test_a_key_pasted_into_api_key_env_is_refused_without_echoing_it() -> None:
    text = (
        VALID
        + '\n[providers.cloud]\ntype = "mem0-platform"\nscope = { user_id = "a" }\napi_key_env = "m0-abc.def"\n'
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert "NAME of an environment variable" in str(caught.value)
    assert "m0-abc.def" not in str(caught.value)


def test_not_yet_built_types_are_accepted_by_the_schema() -> None:
    text = VALID + '\n[providers.hs]\ntype = "hindsight"\nbase_url = "http://127.0.0.1:8888"\n'
    assert parse_config(text).providers["hs"].type == "hindsight"


def test_secret_from_env_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_API_KEY", "m0-topsecret")
    secret = resolve_secret("cloud", "MEM0_API_KEY", None)
    assert secret is not None and secret.reveal() == "m0-topsecret"
    assert "topsecret" not in repr(secret) and "topsecret" not in str(secret)
    assert "$MEM0_API_KEY" in repr(secret)


def test_unset_secret_variable_says_what_to_export(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(ConfigError, match="export NOPE_KEY="):
        resolve_secret("cloud", "NOPE_KEY", None)


def test_secret_from_file(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("m0-fromfile\n")
    secret = resolve_secret("cloud", None, key)
    assert secret is not None and secret.reveal() == "m0-fromfile"


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("1d", 86400), (90, 90)]
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


SERVER = '[providers.server]\ntype = "mem0-server"\nbase_url = "https://m.test"\nscope = { user_id = "alice" }\n'
NOTES = '[providers.notes]\ntype = "pmm-dir"\npath = "/tmp/n"\n'


@pytest.mark.parametrize(
    ("sync", "providers", "full_pass"),
    [
        ('probe = "5s"', SERVER, 3600.0),  # beside a probe: the full pass docs/daemon.md gives
        ('probe = "1s"', SERVER + 'database_url_env = "DB"\n', 86400.0),  # a probe that sees all
        ('probe = "5s"\ninterval = "5m"', SERVER, 300.0),  # what the user wrote stands
        ('probe = "off"', SERVER, 300.0),
        ("", SERVER, 300.0),
    ],
    ids=["probe", "database-probe", "probe-and-interval", "probe-off", "neither"],
)
def test_a_probe_without_an_interval_makes_the_full_pass_rare(
    sync: str, providers: str, full_pass: float
) -> None:
    """README's example plus probe = "5s" made a quiet team of 100 cost 32 requests a minute:
    a full pass every 5 minutes beside the probes."""
    config = parse_config(f'[sync]\nactive = "notes"\n{sync}\n{NOTES}{providers}')
    assert config.sync.interval == full_pass
