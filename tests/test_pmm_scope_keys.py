"""The PMM backup keeps each memory in its own scope: every record a scope's file holds names
that scope as its ``scope_key`` (a PMM tool, OpenMem's import, Mem0's ``user_id``, files it
under that key), whichever store the memory came through; older files are repaired on their
next write.

Real parts: Mem0's library offline, the real mnem SDK, a pmm-dir backup.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import mnem  # the real SDK: a missing build is an error, not a skip

from memsync.base.pmm import Header, write_pmm_file
from memsync.base.records import Outgoing, Record
from memsync.config import load_config
from memsync.providers import build_provider
from memsync.providers.pmm_dir import PmmDirProvider
from tests.conftest import write_config
from tests.mem0_fixtures import DIMS


def configure(home: Path) -> None:
    stores = home / "stores"
    write_config(
        home,
        f"""
[sync]
active = "mem0"

[providers.mem0]
type = "mem0-oss"
scope = {{ user_id = "erin" }}
embedder = "hash"
mem0_config = {{ vector_store = {{ provider = "qdrant", config = {{ collection_name = "erin", path = "{stores / "qdrant"}", embedding_model_dims = {DIMS} }} }}, history_db_path = "{stores / "history.db"}" }}

[providers.mn]
type = "mnem"
path = "{home / "mn"}"
create = true

[providers.backup]
type = "pmm-dir"
path = "{home / "backup"}"
direction = "push"
""",
    )


def records_in(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def test_memories_an_agent_edits_or_writes_in_mnem_stay_in_erins_backup(
    home: Path, cli: Any
) -> None:
    configure(home)
    provider: Any = build_provider("mem0", load_config(home / "config" / "config.toml"))
    provider.open()
    added = provider.memory.add("erin keeps bees", user_id="erin", infer=False)
    provider.memory.add("erin rows on Sundays", user_id="erin", infer=False)
    provider.close()
    assert cli("sync").exit_code == 0
    store = mnem.open(str(home / "mn"))
    memory_id = added["results"][0]["id"]
    mnem.agents.remember(store, f"mem0:{memory_id}", "erin keeps two hives")  # an agent's edit
    mnem.agents.remember(store, "diary", "erin starts a diary")  # an agent's own memory
    del store
    gc.collect()
    assert cli("sync").exit_code == 0
    assert sorted(p.name for p in (home / "backup").iterdir()) == ["erin.pmm.jsonl"]
    backup = records_in(home / "backup" / "erin.pmm.jsonl")
    assert {r["content"] for r in backup} == {
        "erin keeps two hives",
        "erin rows on Sundays",
        "erin starts a diary",
    }
    assert {r["scope_key"] for r in backup} == {"erin"}


def test_a_backup_written_before_the_fix_is_repaired_on_its_next_write(tmp_path: Path) -> None:
    path = tmp_path / "erin.pmm.jsonl"
    write_pmm_file(
        path,
        Header(source_provider="memsync", scope={"scope_key": "erin"}),
        [
            Record(id="mem0:1", content="erin keeps bees", scope_key="erin"),
            Record(id="mem0:2", content="erin keeps two hives", scope_key="mn"),
        ],
    )
    backup = PmmDirProvider("backup", tmp_path)
    backup.create(Outgoing(origin="mnem:diary", content="erin starts a diary", scope_key="erin"))
    assert [r["scope_key"] for r in records_in(path)] == ["erin", "erin", "erin"]
