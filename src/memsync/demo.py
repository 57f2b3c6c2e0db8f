"""`make demo`: memsync's main job, Mem0 -> mnem, on real local stores, offline, no accounts.

A real local Mem0 store (the old agents') and a real mnem store (the new agents', with the
SDK `make demo` builds as `make test` does) are the two sides of a cutover, plus a directory
of PMM backups. The demo seeds them as applications would, runs the real `memsync` commands
in a throwaway MEMSYNC_HOME, changes both sides (an add, an edit, a delete, one conflict),
syncs again, and proves with `memsync verify` that both hold the same memories, the conflict
settled for the later edit (under `conflict = "newest"`, a mnem edit is as new as the commit
that made it). Two memories show that text is carried byte for byte: one spelled in decomposed
Unicode (NFD), one padded with spaces and a newline; the demo reads them back from the new side
and the backup. The mnem agent also keeps a chat session the way mnem's session adapters do,
with a counter node beside it that `exclude` keeps out of Mem0.

Where the mnem SDK cannot be built (no Rust toolchain, no ../shared), a second Mem0 store
takes the new side, and the demo says why.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import logging
import os
import shlex
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

from memsync.config import load_config
from memsync.providers import build_provider

SEED_OLD = [
    ("Prefers tea over coffee", {"topic": "drinks"}),
    ("Works on the Lisbon platform team", {"topic": "work"}),
    ("Allergic to peanuts", {"topic": "health"}),
    ("Wants weekly summaries on Mondays", {"topic": "preferences"}),
    ("Uses vim keybindings everywhere", {"topic": "tools"}),
    ("Has a cat called Miso", {"topic": "life"}),
]
SEED_NEW = [("Speaks Portuguese and English", {"topic": "languages"})]
SESSION = "support-chat"  # a chat session kept as mnem's session adapters keep one
SESSION_ITEM = "Asked for invoices as PDF"
COUNTER = f"{SESSION}:_seq"  # the adapter's bookkeeping node: not a memory
# Texts a normalising tool would change: memsync must hand them back byte for byte.
NFD_TEXT = unicodedata.normalize("NFD", "Favourite café: Zoë's on Rua Augusta")
PADDED_TEXT = "  Badge code for the Porto office: 4711  \n"
EXACT = [(NFD_TEXT, {"topic": "places"}), (PADDED_TEXT, {"topic": "work"})]


def mem0_table(name: str, home: Path) -> str:
    store = home / "stores" / name
    return f"""[providers.{name}]
type = "mem0-oss"
direction = "both"
scope = {{ user_id = "alice" }}
embedder = "hash"   # offline hashing embedder: fine for sync and backup, not for search

[providers.{name}.mem0_config]
history_db_path = "{store / "history.db"}"

[providers.{name}.mem0_config.vector_store]
provider = "qdrant"
config = {{ collection_name = "memories", path = "{store / "qdrant"}", embedding_model_dims = 64 }}
"""


def write_config(home: Path, use_mnem: bool) -> Path:
    new_side = (
        f'[providers.new]\ntype = "mnem"\npath = "{home / "stores" / "mnem"}"\n'
        'scope_key = "alice"  # whose memories the store holds (default: its directory name)\n'
        "# counters that mnem's session adapters keep beside the memories: not memories\n"
        'exclude = { ids = ["*:_seq"] }\n'
        if use_mnem
        else mem0_table("new", home)
    )
    text = f"""# memsync demo: the old Mem0 store and the new side, kept in sync, with PMM backups.
[sync]
active = "new"
conflict = "newest"

[backup]
keep = 3

{mem0_table("old", home)}
{new_side}
[providers.backup]
type = "pmm-dir"
path = "{home / "pmm-backup"}"
direction = "push"
"""
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    print(f"\n$ memsync {shlex.join(args)}", flush=True)
    env = {**os.environ, "MEMSYNC_HOME": str(home), "MEM0_TELEMETRY": "False"}
    result = subprocess.run(
        [sys.executable, "-m", "memsync", *args], env=env, text=True, capture_output=True
    )
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if check and result.returncode != 0:
        raise SystemExit(f"demo step `memsync {' '.join(args)}` failed (exit {result.returncode})")
    return result


class Application:
    """What an agent does to its own store: write memories directly with the library."""

    def __init__(self, home: Path, name: str) -> None:
        os.environ["MEMSYNC_HOME"] = str(home)
        config = load_config(home / "config" / "config.toml")
        self.provider: Any = build_provider(name, config)

    def __enter__(self) -> Application:
        self.provider.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.provider.close()  # agents must let go: a local store admits one process at a time

    def texts(self) -> set[str]:
        listing = self.provider.listing()
        return {record.content for page in listing.pages() for record in page.records}

    def add(self, text: str, metadata: dict[str, Any]) -> None:
        memory = self.provider.memory
        memory.add(text, user_id="alice", metadata=metadata, infer=False)

    def find(self, text: str) -> str:
        items = self.provider.memory.get_all(filters={"user_id": "alice"}, top_k=1000)["results"]
        return str(next(item["id"] for item in items if item["memory"] == text))

    def edit(self, text: str, new_text: str) -> None:
        self.provider.memory.update(self.find(text), new_text)

    def delete(self, text: str) -> None:
        self.provider.memory.delete(self.find(text))


class MnemAgent:
    """What an agent does to its mnem store: remember and forget with the SDK's helpers."""

    def __init__(self, home: Path) -> None:
        import mnem

        self.sdk: Any = mnem
        self.path = home / "stores" / "mnem"

    def __enter__(self) -> MnemAgent:
        if (self.path / ".mnem").exists():
            self.store = self.sdk.open(self.path)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self.store = self.sdk.init(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store  # mnem has no close(): the handle (and the store's lock) goes here
        gc.collect()

    def add(self, text: str, metadata: dict[str, Any]) -> None:
        node_id = "note-" + hashlib.sha256(text.encode()).hexdigest()[:12]
        self.sdk.agents.remember(self.store, node_id, text, source="new-agent")

    def session_item(self, session: str, text: str) -> None:
        """As mnem-openai-agents' add_items: the item and the session's counter, one commit."""
        counter = self.store.working_node(f"{session}:_seq")
        seq = 0 if counter is None else counter.content
        self.store.add(f"{session}:{seq:010d}", text)
        self.store.add(f"{session}:_seq", seq + 1)
        self.store.commit(f"add 1 item to {session}", author="new-agent")

    def node(self, node_id: str) -> Any:
        found = self.store.working_node(node_id)
        return None if found is None else found.content

    def find(self, text: str) -> str:
        nodes = self.store.working_memory().items()
        return str(next(node_id for node_id, node in nodes if node.content == text))

    def edit(self, text: str, new_text: str) -> None:
        self.sdk.agents.remember(self.store, self.find(text), new_text, source="new-agent")

    def delete(self, text: str) -> None:
        self.sdk.agents.forget(self.store, self.find(text))

    def texts(self) -> set[str]:
        return {str(node.content) for node in self.store.working_memory().values()}


def show_exact_bytes(home: Path, use_mnem: bool) -> None:
    """Read the NFD and the padded memory back from the new side and the backup, byte for byte."""
    print("\n# text is carried byte for byte: read back from the new side and the PMM backup")
    held = {}
    with MnemAgent(home) if use_mnem else Application(home, "new") as new:
        held["new"] = new.texts()
    with Application(home, "backup") as backup:
        held["backup"] = backup.texts()
    for text, what in ((NFD_TEXT, "decomposed (NFD)"), (PADDED_TEXT, "padded")):
        nfc = unicodedata.normalize("NFC", text).strip()
        where = [name for name in held if text in held[name]]
        if len(where) != len(held) or any(nfc != text and nfc in held[n] for n in held):
            raise SystemExit(f"demo: the {what} memory {text!r} did not arrive unchanged")
        size = len(text.encode())
        print(f"{what} memory {text!r} ({size} bytes) arrived unchanged in new and backup")


def show_counter_stays(home: Path) -> None:
    """The session's counter node is still the agent's, and no other store holds a copy."""
    print(f"\n# exclude: the adapter's counter node {COUNTER} stays in mnem, copied nowhere")
    with MnemAgent(home) as new:
        counter = new.node(COUNTER)
    with Application(home, "old") as old:
        in_old = old.texts()
    with Application(home, "backup") as backup:
        in_backup = backup.texts()
    if counter != 1 or str(counter) in in_old | in_backup or SESSION_ITEM not in in_old:
        raise SystemExit(f"demo: {COUNTER} was copied or changed ({counter!r})")
    print(f"{COUNTER} = {counter} in mnem only; the session's item reached old and backup")


def show_newest_won(home: Path) -> None:
    """The memory both sides edited holds the later edit everywhere: the new side's."""
    print("\n# the newest edit won: the tea memory was edited on the new side last")
    with Application(home, "old") as old:
        in_old = old.texts()
    if "Prefers matcha over coffee" not in in_old or "Prefers green tea over coffee" in in_old:
        raise SystemExit("demo: the later edit (the new side's) did not win")
    print("old now holds 'Prefers matcha over coffee', the edit made after Mem0's")


def sdk_importable() -> bool:
    try:
        importlib.import_module("mnem")
    except ImportError:
        return False
    return True


def sdk_missing_reason() -> str:
    """Why mnem's SDK is not here: what `make mnem-sdk` said, or how to build it."""
    try:
        return (Path(sys.prefix) / "mnem-sdk-unavailable").read_text().strip()
    except FileNotFoundError:
        return "run `make demo` (it builds the SDK from ../shared/mnem-sdk as `make test` does)"


def main() -> None:
    started = time.monotonic()
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    logging.getLogger("mem0").setLevel(logging.ERROR)  # optional-extra warnings, not ours
    use_mnem = sdk_importable()
    home = Path(tempfile.mkdtemp(prefix="memsync-demo-"))
    write_config(home, use_mnem)
    if use_mnem:  # the agents' mnem store exists before memsync is pointed at it
        import mnem

        (home / "stores" / "mnem").mkdir(parents=True)
        mnem.init(str(home / "stores" / "mnem"))
    print(f"memsync demo in {home}")
    print(
        "old = a Mem0 store the old agents write; new = "
        + (
            "a mnem store"
            if use_mnem
            else f"a second Mem0 store (mnem's SDK is not importable here: {sdk_missing_reason()})"
        )
        + "; backup = PMM files"
    )

    print("\n# the applications write their memories")
    with Application(home, "old") as old:
        for text, metadata in SEED_OLD + EXACT:
            old.add(text, metadata)
    with MnemAgent(home) if use_mnem else Application(home, "new") as new:
        for text, metadata in SEED_NEW:
            new.add(text, metadata)
        if isinstance(new, MnemAgent):
            new.session_item(SESSION, SESSION_ITEM)

    run(home, "check")
    run(home, "sync", "--dry-run")
    run(home, "sync")
    run(home, "verify", "old", "new")
    show_exact_bytes(home, use_mnem)
    if use_mnem:
        show_counter_stays(home)

    print("\n# both sides change: an add and a delete on the old side, an edit on the new,")
    print("# and the same memory edited on both (a conflict: the newest edit wins)")
    with Application(home, "old") as old:
        old.add("Moved to the Porto office", {"topic": "work"})
        old.delete("Uses vim keybindings everywhere")
        old.edit("Prefers tea over coffee", "Prefers green tea over coffee")
    time.sleep(0.05)
    with MnemAgent(home) if use_mnem else Application(home, "new") as new:
        new.edit("Has a cat called Miso", "Has two cats, Miso and Tofu")
        new.edit("Prefers tea over coffee", "Prefers matcha over coffee")

    run(home, "sync")
    run(home, "verify", "old", "new")
    show_newest_won(home)
    run(home, "conflicts", "--all")
    run(home, "status")
    run(home, "export", "--provider", "backup")
    print(f"\ndemo finished in {time.monotonic() - started:.1f}s; everything is in {home}")


if __name__ == "__main__":
    main()
