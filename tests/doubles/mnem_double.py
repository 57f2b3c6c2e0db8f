"""A TEST DOUBLE of the mnem 0.0.7 Python SDK (package ``mnem-agents``, module ``mnem``).

This is not mnem. The real SDK is built for the tests by `make mnem-sdk` (see
../shared/mnem-sdk); this stand-in, written from the 0.0.7 sdist (``python/mnem/_sdk.py``,
``agents.py``, ``crates/mnem-py/src/lib.rs``, ``crates/mnem-store/src/*.rs``), serves where
work is counted (the benches, the double-only provider tests) or a storage failure is
injected. tests/test_mnem_differential.py runs one script of calls on both and requires the
same answers, errors and their messages included. Use the module as you would ``mnem``: ``init``/``open``,
``Store``, the dataclasses, the exception names, and ``agents.remember/remember_many/forget``.

What it keeps from the real thing, because memsync depends on it:
- ``path/.mnem/`` on disk, found by ``open`` walking up the path *string* (no resolving);
  ``init`` refuses a store inside a store.
- The one-handle rule: opening takes an exclusive, non-blocking ``flock`` on the database
  file in ``.mnem``; a second handle, in this process or another, gets
  ``StoreIoError("storage error: Database already open. Cannot acquire lock.")``. There is
  no ``close()``: the lock goes when the ``Store`` is garbage-collected.
- Staging lives on disk and is shared; ``add`` stages (and lifts a tombstone), ``rm``
  tombstones or unstages (``InvalidRefError`` when the id is nowhere), ``commit`` always
  makes a commit, even an empty one. Working memory = HEAD state - tombstones + staging.
- ``diff(frm, to)``: ``frm=None`` is the HEAD commit (the empty state on an unborn branch),
  ``to=None`` is working memory; results in node-id order; ``modified`` when the node
  object differs (provenance or event_time alone count).
- Content is JSON: ``json.dumps`` on the way in (``TypeError`` if not serialisable,
  ``ValueError`` for NaN/Infinity), dict keys sorted on the way out, integers beyond
  i64/u64 become floats.
- Commit-ish resolution: exact branch name, else 4-64 lowercase hex naming one commit.

Where it differs (on purpose, none of it visible to memsync): storage is SQLite in
``.mnem/double.sqlite`` instead of redb; object ids are sha256 over canonical JSON instead
of BLAKE3 over canonical CBOR (same 64-hex shape); ``merge``, ``blame``, ``bisect`` and the
``branch()`` context manager are not provided.

Double-only instrument (not part of the SDK surface): ``stats`` counts node objects read
from storage, commits written, and calls whose cost the real SDK (0.0.7) pays in proportion
to the whole store (``store_scans``: ``working_memory``, ``working_node``, ``state_at``,
``diff``, ``rm``) in this process, for benchmarks and tests.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sqlite3
import time
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__version__ = "0.0.7"

STORE_DIR = ".mnem"
DB_FILE = "double.sqlite"
_LOCK_MESSAGE = "storage error: Database already open. Cannot acquire lock."
_I64 = (-(2**63), 2**63 - 1)
_U64_MAX = 2**64 - 1
_HEX = re.compile(r"^[0-9a-f]{4,64}$")


def version() -> str:
    return __version__


# --- the double-only instrument ---------------------------------------------------------


@dataclass
class DoubleStats:
    """Work done by this process against any double store (not an SDK feature)."""

    nodes_read: int = 0
    commits_written: int = 0
    store_scans: int = 0  # calls that read the whole head state in the real SDK

    def reset(self) -> None:
        self.nodes_read = 0
        self.commits_written = 0
        self.store_scans = 0


stats = DoubleStats()


# --- exceptions (same names and hierarchy as mnem._mnem) ----------------------------------


class MnemError(Exception):
    """Base of every mnem error (the real type's __name__ is MnemErrorException)."""


MnemError.__name__ = "MnemErrorException"
MnemError.__qualname__ = "MnemErrorException"


class NotFoundError(MnemError): ...


class InvalidRefError(MnemError): ...


class ConflictError(MnemError): ...


class CorruptStoreError(MnemError): ...


class FormatVersionError(MnemError): ...


class StoreExistsError(MnemError): ...


class NoStoreError(MnemError): ...


class StoreIoError(MnemError): ...


# --- data classes (same fields as mnem._sdk) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Provenance:
    """How a memory node came to exist. Every field is optional."""

    agent_step: str | None = None
    observation: str | None = None
    tool_call: str | None = None
    source: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_step": self.agent_step,
            "observation": self.observation,
            "tool_call": self.tool_call,
            "source": self.source,
            "note": self.note,
        }


@dataclass(slots=True)
class MemoryNode:
    """A memory node. ``content`` is any JSON-serialisable value."""

    id: str
    content: Any
    content_kind: str = "note"
    provenance: Provenance = field(default_factory=Provenance)
    event_time: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "content_kind": self.content_kind,
            "provenance": self.provenance.to_dict(),
            "event_time": self.event_time,
        }


@dataclass(frozen=True, slots=True)
class NodeChange:
    """One node's change between two states, as returned by ``Store.diff``."""

    id: str
    kind: str  # "added" | "removed" | "modified"
    old: MemoryNode | None
    new: MemoryNode | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "old": self.old.to_dict() if self.old is not None else None,
            "new": self.new.to_dict() if self.new is not None else None,
        }


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit, as returned by ``Store.log``."""

    id: str
    parents: tuple[str, ...]
    state: str
    message: str
    author: str
    time: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parents": list(self.parents),
            "state": self.state,
            "message": self.message,
            "author": self.author,
            "time": self.time,
        }


# --- the storage core (stands in for the Rust binding) ---------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (id TEXT PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refs (name TEXT PRIMARY KEY, commit_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS staging (node_id TEXT PRIMARY KEY, object_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS staging_tombstones (node_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS commit_nodes (
    commit_id TEXT NOT NULL, node_id TEXT NOT NULL, kind TEXT NOT NULL,
    PRIMARY KEY (commit_id, node_id)
);
"""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _object_id(kind: str, body: str) -> str:
    return hashlib.sha256(f"{kind}\0{body}".encode()).hexdigest()


def _json_text(content: Any) -> str:
    """``content`` as JSON text, or the ValueError serde_json raises for NaN and infinities.

    The SDK encodes with Python's json (which writes NaN, Infinity, -Infinity) and its Rust
    core parses that text with serde_json, which refuses them at their column.
    """
    text = json.dumps(content)
    at = _bare_constant(text)
    if at is not None:
        kind = "invalid number" if text[at - 1 : at] == "-" else "expected value"
        raise ValueError(f"content is not valid JSON: {kind} at line 1 column {at + 1}")
    return text


def _bare_constant(text: str) -> int | None:
    """Index of the first NaN/Infinity outside a JSON string, if any."""
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "NI":
            return index
    return None


def _serde_numbers(value: Any) -> Any:
    """What serde_json does to numbers: integers beyond i64/u64 become floats."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if _I64[0] <= value <= _U64_MAX else float(value)
    if isinstance(value, list):
        return [_serde_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _serde_numbers(v) for k, v in value.items()}
    return value


def _check_str(name: str, value: Any, optional: bool = True) -> None:
    """The SDK's own check (its Python layer), before anything reaches the Rust core."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"'{type(value).__name__}' object is not an instance of 'str'")


def _check_i64(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, int):
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
    if not _I64[0] <= value <= _I64[1]:
        raise OverflowError("Python int too large to convert to C long")


def _check_usize(name: str, value: Any) -> None:
    _check_i64(name, value)
    if value is not None and value < 0:
        raise OverflowError("can't convert negative int to unsigned")


def _find_store_dir(start: str) -> Path | None:
    """Walk up the path *string* like Rust's Path::parent: no resolving, '.' stops at ''."""
    current: str | None = start
    while current is not None:
        candidate = Path(current) / STORE_DIR
        if candidate.is_dir():
            return candidate
        current = _rust_parent(current)
    return None


def _rust_parent(path: str) -> str | None:
    stripped = path.rstrip("/") if path not in ("/", "") else path
    if stripped in ("/", ""):
        return None
    if "/" not in stripped:
        return ""
    head = stripped.rsplit("/", 1)[0]
    return head or "/"


class _Core:
    """One open store: the lock, the database, and the operations of mnem-store."""

    def __init__(self, mnem_dir: Path, create: bool) -> None:
        self.mnem_dir = mnem_dir
        db_path = mnem_dir / DB_FILE
        self._lock_fd = os.open(db_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise StoreIoError(_LOCK_MESSAGE) from None
        self.db = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=OFF")
        if create:
            self.db.executescript(_SCHEMA)
        self._states: dict[str, dict[str, str]] = {}

    def __del__(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
        if getattr(self, "_lock_fd", -1) >= 0:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = -1

    # transactions -------------------------------------------------------------------------

    def _write(self, action: Callable[[], Any]) -> Any:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            result = action()
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        return result

    # objects ------------------------------------------------------------------------------

    def _put_object(self, kind: str, body: str) -> str:
        object_id = _object_id(kind, body)
        self.db.execute(
            "INSERT OR IGNORE INTO objects (id, kind, body) VALUES (?, ?, ?)",
            (object_id, kind, body),
        )
        return object_id

    def _object(self, object_id: str) -> tuple[str, str]:
        row = self.db.execute(
            "SELECT kind, body FROM objects WHERE id = ?", (object_id,)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"object {object_id} not found")
        return row[0], row[1]

    def node(self, object_id: str) -> MemoryNode:
        kind, body = self._object(object_id)
        if kind != "node":
            raise CorruptStoreError(f"corrupt store: {object_id} is a {kind}, not a node")
        stats.nodes_read += 1
        data = json.loads(body)
        return MemoryNode(
            id=data["id"],
            content=data["content"],
            content_kind=data["content_kind"],
            provenance=Provenance(**data["provenance"]),
            event_time=data["event_time"],
        )

    def commit_object(self, commit_id: str) -> dict[str, Any]:
        kind, body = self._object(commit_id)
        if kind != "commit":
            raise InvalidRefError(f"invalid ref: {commit_id} is not a commit")
        data: dict[str, Any] = json.loads(body)
        return data

    def state_map(self, commit_id: str) -> dict[str, str]:
        state_id = self.commit_object(commit_id)["state"]
        if state_id not in self._states:  # states are immutable: cache, hand out read-only
            kind, body = self._object(state_id)
            if kind != "state":
                raise CorruptStoreError(f"corrupt store: {state_id} is not a state")
            self._states[state_id] = json.loads(body)
        return self._states[state_id]

    # refs and HEAD ------------------------------------------------------------------------

    def head_text(self) -> str:
        try:
            return (self.mnem_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise StoreIoError(f"storage error: {exc}") from None

    def set_head(self, text: str) -> None:
        tmp = self.mnem_dir / "HEAD.tmp"
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, self.mnem_dir / "HEAD")

    def branch_of_head(self) -> str | None:
        head = self.head_text()
        return head[len("ref: ") :] if head.startswith("ref: ") else None

    def ref(self, name: str) -> str | None:
        row = self.db.execute("SELECT commit_id FROM refs WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def head_commit(self) -> str | None:
        branch = self.branch_of_head()
        return self.ref(branch) if branch is not None else self.head_text()

    def head_state_map(self) -> dict[str, str]:
        head = self.head_commit()
        return self.state_map(head) if head is not None else {}

    def resolve(self, spec: str) -> str:
        by_branch = self.ref(spec)
        if by_branch is not None:
            return by_branch
        if not _HEX.match(spec):
            raise InvalidRefError(
                f"invalid ref: no branch named {json.dumps(spec)}, and it is not a commit id "
                "prefix (4 to 64 lowercase hex)"
            )
        rows = self.db.execute(
            "SELECT id FROM objects WHERE kind = 'commit' AND id LIKE ?", (spec + "%",)
        ).fetchall()
        if not rows:
            raise InvalidRefError(f"invalid ref: no commit matching {json.dumps(spec)}")
        if len(rows) > 1:
            raise InvalidRefError(
                f"invalid ref: ambiguous commit prefix {json.dumps(spec)}: {len(rows)} commits match"
            )
        return str(rows[0][0])

    # staging ------------------------------------------------------------------------------

    def staged(self) -> list[tuple[str, str]]:
        rows = self.db.execute("SELECT node_id, object_id FROM staging ORDER BY node_id")
        return [(r[0], r[1]) for r in rows]

    def tombstones(self) -> list[str]:
        rows = self.db.execute("SELECT node_id FROM staging_tombstones ORDER BY node_id")
        return [r[0] for r in rows]

    def working_state_map(self) -> dict[str, str]:
        nodes = dict(self.head_state_map())
        for node_id in self.tombstones():
            nodes.pop(node_id, None)
        nodes.update(dict(self.staged()))
        return nodes

    def stage(self, node: MemoryNode) -> str:
        body = _canonical(
            {
                "id": node.id,
                "content": node.content,
                "content_kind": node.content_kind,
                "provenance": node.provenance.to_dict(),
                "event_time": node.event_time,
            }
        )

        def go() -> str:
            object_id = self._put_object("node", body)
            self.db.execute(
                "INSERT OR REPLACE INTO staging (node_id, object_id) VALUES (?, ?)",
                (node.id, object_id),
            )
            self.db.execute("DELETE FROM staging_tombstones WHERE node_id = ?", (node.id,))
            return object_id

        result: str = self._write(go)
        return result

    def unstage(self, node_id: str) -> bool:
        def go() -> bool:
            a = self.db.execute("DELETE FROM staging WHERE node_id = ?", (node_id,)).rowcount
            b = self.db.execute(
                "DELETE FROM staging_tombstones WHERE node_id = ?", (node_id,)
            ).rowcount
            return bool(a or b)

        result: bool = self._write(go)
        return result

    def rm(self, node_id: str) -> None:
        staged = any(sid == node_id for sid, _ in self.staged())
        in_head = node_id in self.head_state_map()
        if not staged and not in_head:
            raise InvalidRefError(f"invalid ref: no node {json.dumps(node_id)} in memory")

        def go() -> None:
            self.db.execute("DELETE FROM staging WHERE node_id = ?", (node_id,))
            if in_head:
                self.db.execute(
                    "INSERT OR IGNORE INTO staging_tombstones (node_id) VALUES (?)", (node_id,)
                )

        self._write(go)

    def clear_staging(self) -> None:
        def go() -> None:
            self.db.execute("DELETE FROM staging")
            self.db.execute("DELETE FROM staging_tombstones")

        self._write(go)

    def commit(self, message: str, author: str, time_ms: int) -> str:
        branch = self.branch_of_head()
        if branch is None:
            raise InvalidRefError(
                "invalid ref: cannot commit from a detached HEAD; check out a branch first"
            )

        def go() -> str:
            parent = self.ref(branch)
            base = self.state_map(parent) if parent is not None else {}
            nodes = dict(base)
            nodes.update(dict(self.staged()))
            for node_id in self.tombstones():
                nodes.pop(node_id, None)
            state_id = self._put_object("state", _canonical(dict(sorted(nodes.items()))))
            body = _canonical(
                {
                    "parents": [parent] if parent else [],
                    "state": state_id,
                    "message": message,
                    "author": author,
                    "time": time_ms,
                }
            )
            commit_id = self._put_object("commit", body)
            for node_id, kind in _changes_between(base, nodes).items():
                self.db.execute(
                    "INSERT OR REPLACE INTO commit_nodes (commit_id, node_id, kind) "
                    "VALUES (?, ?, ?)",
                    (commit_id, node_id, kind),
                )
            if self.ref(branch) != parent:
                raise ConflictError(
                    f"the branch moved under you: branch {json.dumps(branch)} moved during commit"
                )
            self.db.execute(
                "INSERT OR REPLACE INTO refs (name, commit_id) VALUES (?, ?)", (branch, commit_id)
            )
            self.db.execute("DELETE FROM staging")
            self.db.execute("DELETE FROM staging_tombstones")
            return commit_id

        commit_id: str = self._write(go)
        stats.commits_written += 1
        return commit_id


def _changes_between(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for node_id in sorted(set(old) | set(new)):
        before, after = old.get(node_id), new.get(node_id)
        if before is None and after is not None:
            out[node_id] = "added"
        elif after is None and before is not None:
            out[node_id] = "removed"
        elif before != after:
            out[node_id] = "modified"
    return out


def _resolve_author(author: str | None) -> str:
    return author or os.environ.get("MNEM_AUTHOR") or "unknown"


def _now_ms() -> int:
    return int(time.time() * 1000)


# --- the Store (same methods and arguments as mnem._sdk.Store) ---------------------------------


class Store:
    """An open store (double). No close(): drop every reference to release the lock."""

    __slots__ = ("_inner",)

    def __init__(self, inner: _Core) -> None:
        self._inner = inner

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".") -> Store:
        root = Path(os.fspath(path))
        mnem_dir = root / STORE_DIR
        if mnem_dir.exists():
            raise StoreExistsError(f"a store already exists at {mnem_dir}")
        parent = _rust_parent(os.fspath(path))
        ancestor = _find_store_dir(parent) if parent is not None else None
        if ancestor is not None:
            raise StoreExistsError(f"a store already exists at {ancestor}")
        try:
            mnem_dir.mkdir(parents=True)
            (mnem_dir / "config").write_text(
                "# Mnemosyne store config. See docs/format/.\nformat_version = 1\n"
                "hash_algo = blake3\ndefault_branch = main\n# test double: mnem_double\n",
                encoding="utf-8",
            )
            (mnem_dir / "HEAD").write_text("ref: main\n", encoding="utf-8")
        except OSError as exc:
            raise StoreIoError(f"storage error: {exc}") from None
        return cls(_Core(mnem_dir, create=True))

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".") -> Store:
        start = os.fspath(path)
        mnem_dir = _find_store_dir(start)
        if mnem_dir is None:
            raise NoStoreError(f"no mnemosyne store at or above {start}")
        try:
            config = (mnem_dir / "config").read_text(encoding="utf-8")
        except OSError as exc:
            raise StoreIoError(f"storage error: {exc}") from None
        _check_config(config)
        if not (mnem_dir / DB_FILE).exists():
            raise CorruptStoreError(
                f"corrupt store: {mnem_dir} was not made by the test double (no {DB_FILE})"
            )
        return cls(_Core(mnem_dir, create=False))

    @property
    def root(self) -> Path:
        return self._inner.mnem_dir.parent

    @property
    def format_version(self) -> int:
        return 1

    def head(self) -> str:
        return self._inner.head_text()

    def add(
        self,
        id: str,
        content: Any,
        *,
        content_kind: str = "note",
        provenance: Provenance | None = None,
        event_time: int | None = None,
    ) -> str:
        p = provenance or Provenance()
        text = _json_text(content)
        _check_str("id", id, optional=False)
        _check_str("content_kind", content_kind, optional=False)
        for name in ("agent_step", "observation", "tool_call", "source", "note"):
            _check_str(name, getattr(p, name))
        _check_i64("event_time", event_time)
        value = json.loads(text)
        if content_kind not in ("note", "claim"):
            raise ValueError(
                f'content_kind must be "note" or "claim", got {json.dumps(content_kind)}'
            )
        node = MemoryNode(
            id=id,
            content=_serde_numbers(value),
            content_kind=content_kind,
            provenance=Provenance(
                agent_step=p.agent_step,
                observation=p.observation,
                tool_call=p.tool_call,
                source=p.source,
                note=p.note,
            ),
            event_time=event_time,
        )
        return self._inner.stage(node)

    def add_node(self, node: MemoryNode) -> str:
        return self.add(
            node.id,
            node.content,
            content_kind=node.content_kind,
            provenance=node.provenance,
            event_time=node.event_time,
        )

    def staged(self) -> list[tuple[str, str]]:
        return self._inner.staged()

    def unstage(self, node_id: str) -> bool:
        _check_str("id", node_id, optional=False)
        return self._inner.unstage(node_id)

    def commit(self, message: str, *, author: str | None = None, time_ms: int | None = None) -> str:
        _check_str("message", message, optional=False)
        _check_str("author", author)
        _check_i64("time_ms", time_ms)
        return self._inner.commit(
            message, _resolve_author(author), _now_ms() if time_ms is None else time_ms
        )

    def rm(self, node_id: str) -> None:
        stats.store_scans += 1
        _check_str("id", node_id, optional=False)
        self._inner.rm(node_id)

    def staged_deletions(self) -> list[str]:
        return self._inner.tombstones()

    def log(self, *, first_parent: bool = False, limit: int | None = None) -> list[Commit]:
        _check_usize("limit", limit)
        start = self._inner.head_commit()
        if start is None:
            return []
        out: list[Commit] = []
        if first_parent:
            current: str | None = start
            while current is not None and (limit is None or len(out) < limit):
                commit = self._commit(current)
                out.append(commit)
                current = commit.parents[0] if commit.parents else None
            return out
        seen: set[str] = set()
        stack = [start]
        while stack:
            commit_id = stack.pop()
            if commit_id in seen:
                continue
            seen.add(commit_id)
            commit = self._commit(commit_id)
            stack.extend(p for p in commit.parents if p not in seen)
            out.append(commit)
        out.sort(key=lambda c: (c.time, c.id), reverse=True)
        return out[:limit] if limit is not None else out

    def _commit(self, commit_id: str) -> Commit:
        data = self._inner.commit_object(commit_id)
        return Commit(
            id=commit_id,
            parents=tuple(data["parents"]),
            state=data["state"],
            message=data["message"],
            author=data["author"],
            time=data["time"],
        )

    def head_commit(self) -> str | None:
        return self._inner.head_commit()

    def resolve(self, spec: str) -> str:
        return self._inner.resolve(spec)

    def new_branch(self, name: str, *, start: str | None = None) -> None:
        if self._inner.ref(name) is not None:
            raise InvalidRefError(f"invalid ref: branch {json.dumps(name)} already exists")
        tip = self._inner.resolve(start) if start is not None else self._inner.head_commit()
        if tip is None:
            raise InvalidRefError(
                "invalid ref: cannot create a branch: HEAD does not point at a commit yet"
            )
        self._inner._write(
            lambda: self._inner.db.execute(
                "INSERT INTO refs (name, commit_id) VALUES (?, ?)", (name, tip)
            )
        )

    def branches(self) -> list[tuple[str, str]]:
        rows = self._inner.db.execute("SELECT name, commit_id FROM refs ORDER BY name")
        return [(r[0], r[1]) for r in rows]

    def checkout(
        self, target: str | None = None, *, create: str | None = None, discard: bool = False
    ) -> None:
        if create is not None:
            self.new_branch(create, start=target)
            target = create
        elif target is None:
            raise ValueError("checkout needs a target, or create= to make a branch")
        inner = self._inner
        new_head = f"ref: {target}" if inner.ref(target) is not None else inner.resolve(target)
        if inner.head_text() == new_head:
            return
        pending = sorted([sid for sid, _ in inner.staged()] + inner.tombstones())
        if pending and not discard:
            raise InvalidRefError(
                f"invalid ref: checkout refused: {len(pending)} pending change(s) "
                f"({', '.join(pending)}); commit them or pass discard"
            )
        if pending:
            inner.clear_staging()
        inner.set_head(new_head)

    def working_memory(self) -> dict[str, MemoryNode]:
        stats.store_scans += 1
        nodes = self._inner.working_state_map()
        return {node_id: self._inner.node(nodes[node_id]) for node_id in sorted(nodes)}

    def working_node(self, node_id: str) -> MemoryNode | None:
        stats.store_scans += 1
        _check_str("id", node_id, optional=False)
        for sid, object_id in self._inner.staged():
            if sid == node_id:
                return self._inner.node(object_id)
        if node_id in self._inner.tombstones():
            return None
        object_id = self._inner.head_state_map().get(node_id)
        return self._inner.node(object_id) if object_id is not None else None

    def state_at(self, commit: str) -> dict[str, MemoryNode]:
        stats.store_scans += 1
        nodes = self._inner.state_map(self._inner.resolve(commit))
        return {node_id: self._inner.node(nodes[node_id]) for node_id in sorted(nodes)}

    def diff(self, frm: str | None = None, to: str | None = None) -> list[NodeChange]:
        stats.store_scans += 1
        inner = self._inner
        if frm is not None:
            before = inner.state_map(inner.resolve(frm))
        else:
            head = inner.head_commit()
            before = inner.state_map(head) if head is not None else {}
        after = inner.state_map(inner.resolve(to)) if to is not None else inner.working_state_map()
        out: list[NodeChange] = []
        for node_id, kind in _changes_between(before, after).items():
            old = inner.node(before[node_id]) if kind != "added" else None
            new = inner.node(after[node_id]) if kind != "removed" else None
            out.append(NodeChange(id=node_id, kind=kind, old=old, new=new))
        return out

    def changed_by(self, commit: str) -> dict[str, str]:
        commit_id = self._inner.resolve(commit)
        rows = self._inner.db.execute(
            "SELECT node_id, kind FROM commit_nodes WHERE commit_id = ? ORDER BY node_id",
            (commit_id,),
        )
        return {r[0]: r[1] for r in rows}

    def __repr__(self) -> str:
        return f"<mnem.Store root={str(self.root)!r} (test double)>"


def _check_config(text: str) -> None:
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CorruptStoreError(f"corrupt store: config line {line!r} is not key = value")
        values[key.strip()] = value.strip()
    try:
        found = int(values["format_version"])
    except (KeyError, ValueError):
        raise CorruptStoreError("corrupt store: config has no valid format_version") from None
    if found > 1:
        raise FormatVersionError(
            f"unsupported format version {found}, this release supports up to 1"
        )
    if values.get("hash_algo") != "blake3":
        raise CorruptStoreError("corrupt store: config hash_algo must be blake3")


def init(path: str | os.PathLike[str] = ".") -> Store:
    """Create a store at ``path/.mnem`` and open it."""
    return Store.init(path)


def open(path: str | os.PathLike[str] = ".") -> Store:
    """Open the nearest store at or above ``path``."""
    return Store.open(path)


# --- mnem.agents (same signatures and quirks as python/mnem/agents.py) ----------------------------

_RETRIES = 4
_BACKOFF_MS = 25
T = TypeVar("T")


def _with_retry(action: Callable[[], T]) -> T:
    last: ConflictError | None = None
    for attempt in range(_RETRIES):
        try:
            return action()
        except ConflictError as exc:
            last = exc
            time.sleep(_BACKOFF_MS * (attempt + 1) / 1000)
    assert last is not None
    raise last


def _provenance(fields: Mapping[str, Any]) -> Provenance:
    return Provenance(
        agent_step=fields.get("step"),
        observation=fields.get("observation"),
        tool_call=fields.get("tool_call"),
        source=fields.get("source"),
        note=fields.get("note"),
    )


def _remember(
    store: Store,
    id: str,
    content: Any,
    *,
    source: str | None = None,
    step: str | None = None,
    observation: str | None = None,
    tool_call: str | None = None,
    note: str | None = None,
    summary: str | None = None,
    author: str = "agent",
    time_ms: int | None = None,
) -> str:
    prov = _provenance(
        {
            "step": step,
            "observation": observation,
            "tool_call": tool_call,
            "source": source,
            "note": note,
        }
    )

    def go() -> str:
        store.add(id, content, provenance=prov)
        return store.commit(summary or f"remember {id}", author=author, time_ms=time_ms)

    return _with_retry(go)


def _remember_many(
    store: Store,
    items: Iterable[Mapping[str, Any]],
    *,
    summary: str | None = None,
    author: str = "agent",
    time_ms: int | None = None,
) -> str:
    staged = [dict(item) for item in items]

    def go() -> str:
        for item in staged:
            store.add(item["id"], item["content"], provenance=_provenance(item))
        n = len(staged)
        message = summary or f"remember {n} node{'s' if n != 1 else ''}"
        return store.commit(message, author=author, time_ms=time_ms)

    return _with_retry(go)


def _forget(
    store: Store,
    id: str,
    *,
    summary: str | None = None,
    author: str = "agent",
    time_ms: int | None = None,
) -> str:
    def go() -> str:
        store.rm(id)
        return store.commit(summary or f"forget {id}", author=author, time_ms=time_ms)

    return _with_retry(go)


agents = types.ModuleType(__name__ + ".agents", "mnem.agents (test double)")
for _name, _function in (
    ("remember", _remember),
    ("remember_many", _remember_many),
    ("forget", _forget),
):
    _function.__name__ = _function.__qualname__ = _name
    setattr(agents, _name, _function)
agents.__all__ = ["forget", "remember", "remember_many"]  # type: ignore[attr-defined]
del _name, _function

__all__ = [
    "Commit",
    "ConflictError",
    "CorruptStoreError",
    "FormatVersionError",
    "InvalidRefError",
    "MemoryNode",
    "MnemError",
    "NoStoreError",
    "NodeChange",
    "NotFoundError",
    "Provenance",
    "Store",
    "StoreExistsError",
    "StoreIoError",
    "__version__",
    "agents",
    "init",
    "open",
    "stats",
    "version",
]
