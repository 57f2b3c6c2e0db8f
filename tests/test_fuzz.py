"""Fuzzing the two readers of untrusted input: the PMM reader and the config loader.

Only typed memsync errors with a message may come out, never an unhandled exception. The
default run is short; `pytest -m slow tests/test_fuzz.py` (or MEMSYNC_FUZZ_EXAMPLES) runs
10,000 generated inputs per reader.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsync.base.errors import ConfigError, PMMError
from memsync.base.pmm import Rejected, open_pmm
from memsync.base.records import Record
from memsync.config import parse_config

SHORT = int(os.environ.get("MEMSYNC_FUZZ_EXAMPLES", "400"))
LONG = 10_000


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


# --- PMM -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "pmm_version": st.sampled_from([1, 1, 1, 2, "1", None, 1.0, True]),
        "exported_at": st.sampled_from(["2026-11-30T09:00:00Z", "yesterday", "", 5]),
        "source_provider": st.sampled_from(["mem0", "", None, 3]),
        "scope": st.sampled_from([{}, {"user_id": "a"}, [], "x"]),
        "records": json_values,
    },
)
records = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.none(), st.text(max_size=10), st.integers()),
        "content": st.one_of(st.text(max_size=40), st.integers(), st.none(), json_values),
        "metadata": json_values,
        "scope_key": st.one_of(st.text(max_size=10), st.integers(), st.none()),
    },
)


@st.composite
def pmm_documents(draw: Any) -> bytes:
    header = draw(headers)
    body = draw(st.lists(records, max_size=6))
    if draw(st.booleans()):  # JSONL
        lines = [json.dumps(header)] + [json.dumps(r) for r in body]
        data = ("\n".join(lines) + "\n").encode()
    else:
        data = json.dumps({**header, "records": body}).encode()
    mutation = draw(st.sampled_from(["none", "truncate", "flip", "insert", "none"]))
    if mutation == "truncate" and data:
        data = data[: draw(st.integers(0, len(data)))]
    elif mutation == "flip" and data:
        index = draw(st.integers(0, len(data) - 1))
        data = data[:index] + bytes([draw(st.integers(0, 255))]) + data[index + 1 :]
    elif mutation == "insert":
        index = draw(st.integers(0, len(data)))
        data = data[:index] + draw(st.binary(max_size=8)) + data[index:]
    return data


def read_everything(data: bytes) -> None:
    try:
        reader = open_pmm(io.BufferedReader(io.BytesIO(data)), max_content_bytes=64)  # type: ignore[arg-type]
    except PMMError as exc:
        assert str(exc)
        return
    with reader:
        for item in reader:
            assert isinstance(item, Record | Rejected)
            if isinstance(item, Rejected):
                assert item.reason and item.location


@fuzz_settings(SHORT)
@given(pmm_documents() | st.binary(max_size=200))
def test_pmm_reader_only_raises_typed_errors(data: bytes) -> None:
    read_everything(data)


@pytest.mark.slow
@fuzz_settings(LONG)
@given(pmm_documents() | st.binary(max_size=200))
def test_pmm_reader_only_raises_typed_errors_long(data: bytes) -> None:
    read_everything(data)


# --- config --------------------------------------------------------------------------------

KEYS = [
    "sync",
    "backup",
    "pmm",
    "providers",
    "active",
    "conflict",
    "max_delete",
    "max_delete_count",
    "interval",
    "keep",
    "gzip",
    "type",
    "direction",
    "scope",
    "path",
    "base_url",
    "api_key",
    "api_key_env",
    "api_key_file",
    "user_id",
    "mem0_config",
    "embedder",
    "bank",
    "dataset",
    "branch",
    "max_content_bytes",
    "allow_insecure_http",
]
VALUES = [
    "mem0-oss",
    "pmm-dir",
    "mnem",
    "hindsight",
    "cognee",
    "mem0-server",
    "mem0-platform",
    "both",
    "push",
    "pull",
    "newest",
    "error",
    "25%",
    "5m",
    "1h",
    "hash",
    "http://x",
    "https://127.0.0.1:1",
    "~/p",
    "a",
]

toml_scalars = (
    st.sampled_from(VALUES) | st.text(max_size=10) | st.integers(-5, 10**6) | st.booleans()
)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
        )
    return json.dumps(value)


@st.composite
def config_documents(draw: Any) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=200))
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        table = draw(st.sampled_from(["sync", "backup", "pmm", "providers.a", "providers.b", "x"]))
        lines.append(f"[{table}]")
        for _ in range(draw(st.integers(0, 5))):
            key = draw(st.sampled_from(KEYS))
            value = draw(
                toml_scalars | st.dictionaries(st.sampled_from(KEYS), toml_scalars, max_size=3)
            )
            lines.append(f"{key} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


def load(text: str) -> None:
    try:
        parse_config(text)
    except ConfigError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message


@fuzz_settings(SHORT)
@given(config_documents())
def test_config_loader_only_raises_typed_errors(text: str) -> None:
    load(text)


@pytest.mark.slow
@fuzz_settings(LONG)
@given(config_documents())
def test_config_loader_only_raises_typed_errors_long(text: str) -> None:
    load(text)
