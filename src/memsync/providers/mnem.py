"""``mnem``: a Mnemosyne store (version-controlled agent memory, SDK ``mnem-agents``) as a provider.

mnem keeps every write as a commit, so memsync reads deltas, not snapshots: a listing from a
cursor is ``diff(cursor, head)`` with the head commit id as the next cursor, and a cycle with
no new commit reads no node at all. The full listing (no cursor, or a cursor commit the store
does not know because the store was replaced) is ``working_memory()``.

How a memsync memory is a mnem node (the single place this mapping is defined):

- **Id.** The node id is the logical memory's origin key (ADR-0024): ``mem0:{memory_id}``,
  ``pmm:{id}``...; a memory that came from mnem (origin ``mnem:X``) goes back to node ``X``.
  A node memsync did not write has origin ``mnem:{id}``, unless its id already carries an
  import family prefix (``mem0:``, ``pmm:``, ``hindsight:``, ``cognee:``), as a future SDK
  ``import_mem0`` would write it.
- **Content.** Text is stored as a JSON string with ``content_kind = "note"``. A node whose
  content is not a string (native agents may store any JSON value) is carried as its
  canonical JSON text (sorted keys, no spaces) and marked ``provenance["mnem_content"] =
  "json"``, so writing it back restores the JSON value; a ``claim`` node is marked
  ``provenance["mnem_content_kind"] = "claim"``. Null, empty text and empty containers are
  skipped as empty content.
- **Provenance.** mnem has five provenance fields and no metadata. ``source`` (Mem0's
  ``actor_id``, else ``role``), ``agent_step``, ``observation`` and ``tool_call`` are written
  to mnem's own fields. Everything else lives in ``provenance.note`` as one JSON object,
  ``{"memsync": 1, "origin", "metadata", "provenance", "created_at"}``: the user's
  metadata, the remaining provenance (a native note among it), and ``created_at`` verbatim.
  ``created_at`` is also ``event_time`` (Unix ms); on reading, the verbatim string wins while
  it still names the same millisecond, so offsets and microseconds survive the round trip.
- **Version token.** sha256 over the node's canonical JSON: it changes exactly when mnem's
  own node object id does (content, kind, provenance or event_time).
- **updated_at** is not known per node (it would take a blame per node) and is left empty.

Agent rewrites: an agent that edits a memory through mnem's own API (``mnem.agents.remember``,
``Store.add``) replaces the whole node, memsync's note with it. Such a node is read with
``Record.detached`` set and a ``bare-`` version token. When the version the mirror staged for
that node did carry the note, the text and mnem's native provenance fields are the agent's
change, and the user's metadata, ``created_at``, ``expiration_date`` and origin are carried
over from the staged version (nothing is lost, the edit flows on as a text change); the mirror
then queues a write back into mnem that restores the note (unless mnem is ``pull`` only or the
run is a dry run: then the next listing that returns the node tries again). A node memsync
never saw with a note (a native memory) is read as it is; a note that lists no metadata is a
real removal.

Expiry (mnem has none): a memory's ``expiration_date`` lives in the note. Once it has passed,
memsync forgets the node with a tombstone commit ("memsync: forgot N expired ...") so agents
stop being served it the same day, while mnem's history keeps it. That happens when memsync
writes an already-expired memory (added, then forgotten) and in a sweep at the first listing
of each UTC day in a process (one scan of working memory). The mirror keeps an expired memory
that vanished (hidden is not deleted), and an update to it (the date cleared or moved)
brings the node back.

Writes: one ``write_many`` call is one commit (author ``memsync``, a message that says what
moved), none when nothing changed. Deletes are ``rm`` (a tombstone; history keeps the node).
A create never overwrites a node memsync did not write for the same origin: an id collision
with other content is reported as ``NodeIdCollision``; ``update`` is the overwrite path.

One open handle per store, across processes (mnem holds an exclusive lock while a ``Store``
lives): ``open`` retries with backoff while an agent holds the store, then raises
``ProviderBusy``; ``close`` drops every reference so the agent can have it back.

Staged changes found at open belong to someone else (an agent that crashed between ``add``
and ``commit``, or staged and has not committed yet). mnem's staging is shared on disk and
any commit sweeps it in, so memsync neither commits nor discards them: it keeps reading
committed history, and refuses to write (``StagedChangesPresent``) until they are committed
or unstaged by whoever owns them. memsync unstages its own half-staged batch when a write
fails, so it never leaves such leftovers itself (short of being killed mid-batch).
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypeVar

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
    wait_random,
)

from memsync import records
from memsync.config import Config, MnemConfig
from memsync.errors import (
    NotFound,
    ProviderBusy,
    ProviderError,
    ProviderUnavailable,
    TransientProviderError,
)
from memsync.providers.base import (
    Capabilities,
    Listing,
    Page,
    Provider,
    WriteOp,
    WriteResult,
    require_content,
)
from memsync.records import (
    Outgoing,
    Record,
    Skipped,
    canonical_json,
    content_hash,
    is_blank,
    is_expired,
    parse_instant,
)

log = logging.getLogger("memsync.mnem")

AUTHOR = "memsync"
EXPIRED_COMMIT = "memsync: forgot"  # how an expiry tombstone commit's message starts
PAGE_SIZE = 500
NOTE_MARK = "memsync"
NOTE_VERSION = 1
IMPORT_FAMILIES = frozenset({"mem0", "pmm", "hindsight", "cognee"})
NATIVE_FIELDS = ("agent_step", "observation", "tool_call", "source")
CONTENT_JSON_KEY = "mnem_content"  # provenance marker: the node's content was a JSON value
CONTENT_KIND_KEY = "mnem_content_kind"  # provenance marker: the node is a "claim"
EMPTY_REASON = "empty content"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LOCK_TEXT = ("Database already open", "Cannot acquire lock")
_SWEPT: dict[str, date] = {}  # store identity -> the UTC day its expired nodes were forgotten
T = TypeVar("T")


class NodeIdCollision(ProviderError):
    """A create named a node that holds other content memsync did not write: never overwritten."""


class StagedChangesPresent(ProviderError):
    """Another writer left changes staged; any commit would sweep them in, so none is made."""


def load_sdk() -> ModuleType:
    """The mnem SDK, or ProviderUnavailable saying how to get it."""
    try:
        return importlib.import_module("mnem")
    except ImportError:
        raise ProviderUnavailable(
            "type 'mnem' needs the mnem SDK: pip install 'memsync[mnem]' (mnem-agents 0.0.7; "
            "PyPI has a macOS arm64 wheel, elsewhere it builds from source with a Rust toolchain)"
        ) from None


def sdk_of(store: Any) -> ModuleType:
    """The SDK module a Store came from (the real ``mnem`` or a test double)."""
    module = importlib.import_module(type(store).__module__)
    if hasattr(module, "StoreIoError") and hasattr(module, "Provenance"):
        return module
    return importlib.import_module(type(store).__module__.split(".")[0])


# --- ids ---------------------------------------------------------------------------------


def node_id_for(origin: str) -> str:
    """The node id a logical memory gets: its origin key, or X for a memory from mnem (mnem:X)."""
    return origin[len("mnem:") :] if origin.startswith("mnem:") else origin


def origin_for(node_id: str, written_origin: str | None = None) -> str:
    """The logical memory a node belongs to (see the module docstring)."""
    if written_origin:
        return written_origin
    family, sep, _ = node_id.partition(":")
    if sep and family in IMPORT_FAMILIES:
        return node_id
    return f"mnem:{node_id}"


def family_of(origin: str) -> str:
    family, sep, _ = origin.partition(":")
    return family if sep else "mnem"


# --- times -------------------------------------------------------------------------------


def to_ms(created_at: str | None) -> int | None:
    """An ISO instant as Unix milliseconds (floored), or None when absent or unparseable."""
    instant = parse_instant(created_at)
    if instant is None:
        return None
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def iso_from_ms(ms: int) -> str:
    instant = _EPOCH + timedelta(milliseconds=ms)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _created_at(verbatim: Any, event_time: int | None) -> str | None:
    if isinstance(verbatim, str) and (event_time is None or to_ms(verbatim) == event_time):
        return verbatim
    return iso_from_ms(event_time) if event_time is not None else None


# --- nodes <-> records ---------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    """The node memsync writes for one memory: the arguments of ``Store.add``."""

    id: str
    content: Any
    content_kind: Literal["note", "claim"]
    provenance: dict[str, str | None]  # the five mnem Provenance fields
    event_time: int | None
    origin: str
    expiration_date: str | None = None

    def identity(self) -> str:
        return _node_identity(
            self.id, self.content, self.content_kind, self.provenance, self.event_time
        )

    def as_node(self, sdk: ModuleType) -> Any:
        return sdk.MemoryNode(
            id=self.id,
            content=self.content,
            content_kind=self.content_kind,
            provenance=sdk.Provenance(**self.provenance),
            event_time=self.event_time,
        )


def _provenance_fields(provenance: Any) -> dict[str, str | None]:
    return {
        name: getattr(provenance, name)
        for name in ("agent_step", "observation", "tool_call", "source", "note")
    }


def _node_identity(
    node_id: str,
    content: Any,
    kind: str,
    provenance: dict[str, str | None],
    event_time: int | None,
) -> str:
    payload = {
        "id": node_id,
        "content": content,
        "content_kind": kind,
        "provenance": provenance,
        "event_time": event_time,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


BARE_VERSION = "bare-"  # version prefix of a node without memsync's note


def node_version(node: Any) -> str:
    """The version token of a node: sha256 of its canonical JSON (changes with its object id),
    prefixed ``bare-`` when the node holds no memsync note, so the mirror can tell later
    whether the version it staged carried memsync's fields (see "Agent rewrites")."""
    identity = _node_identity(
        node.id,
        node.content,
        node.content_kind,
        _provenance_fields(node.provenance),
        node.event_time,
    )
    return identity if memsync_note(node) is not None else BARE_VERSION + identity


def node_spec(item: Outgoing, node_id: str | None = None) -> NodeSpec:
    """The node for an outgoing memory (its id from the origin unless given)."""
    provenance = {k: v for k, v in item.provenance.items() if v is not None}
    as_json = provenance.pop(CONTENT_JSON_KEY, None) == "json"
    kind = provenance.pop(CONTENT_KIND_KEY, "note")
    if kind not in ("note", "claim"):
        provenance[CONTENT_KIND_KEY] = kind
        kind = "note"
    native: dict[str, str | None] = {name: None for name in NATIVE_FIELDS}
    for name in NATIVE_FIELDS:
        if isinstance(provenance.get(name), str):
            native[name] = provenance.pop(name)
    note: dict[str, Any] = {
        NOTE_MARK: NOTE_VERSION,
        "origin": item.origin,
        "metadata": dict(item.metadata),
        "provenance": provenance,
    }
    if item.created_at is not None:
        note["created_at"] = item.created_at
    if item.expiration_date:
        note["expiration_date"] = item.expiration_date
    content: Any = item.content
    if as_json:  # back to the JSON value it was; text that is no longer JSON stays text
        value = _json_value(item.content, default=item.content)
        content = item.content if isinstance(value, str) else value
    target = node_id if node_id is not None else node_id_for(item.origin)
    if not target:
        raise ProviderError(f"origin {item.origin!r} names no mnem node id")
    return NodeSpec(
        id=target,
        content=content,
        content_kind="claim" if kind == "claim" else "note",
        provenance={**native, "note": canonical_json(note)},
        event_time=to_ms(item.created_at),
        origin=item.origin,
        expiration_date=item.expiration_date or None,
    )


def _json_value(text: str, default: Any) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError:
        return default


def memsync_note(node: Any) -> dict[str, Any] | None:
    """The JSON object memsync keeps in provenance.note, or None for a node it did not write."""
    raw = node.provenance.note
    if not isinstance(raw, str) or not raw.startswith("{"):
        return None
    try:
        note = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(note, dict) or note.get(NOTE_MARK) != NOTE_VERSION:
        return None
    return note


def content_text(content: Any) -> tuple[str, bool]:
    """A node's content as text, and whether it was a JSON value rather than a string."""
    if isinstance(content, str):
        return content, False
    if content is None or content == {} or content == []:
        return "", False
    return canonical_json(content), True


def record_from_node(node: Any, scope_key: str) -> Record | Skipped:
    """A node as a memsync Record, or Skipped (by node id) when it holds no content."""
    text, as_json = content_text(node.content)
    if is_blank(text):
        return Skipped(node.id, EMPTY_REASON)
    note = memsync_note(node)
    provenance: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if note is not None:
        provenance.update(note.get("provenance") or {})
        metadata = dict(note.get("metadata") or {})
    elif node.provenance.note is not None:
        provenance["note"] = node.provenance.note
    for name in NATIVE_FIELDS:
        value = getattr(node.provenance, name)
        if value is not None:
            provenance[name] = value
    if as_json:
        provenance[CONTENT_JSON_KEY] = "json"
    if node.content_kind != "note":
        provenance[CONTENT_KIND_KEY] = node.content_kind
    return Record(
        id=node.id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=_created_at(note.get("created_at") if note else None, node.event_time),
        updated_at=None,
        version=node_version(node),
        provenance=provenance,
        origin=origin_for(node.id, note.get("origin") if note else None),
        expiration_date=_str_or_none(note.get("expiration_date")) if note else None,
        detached=note is None,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def expired_in_note(node: Any) -> bool:
    note = memsync_note(node)
    return note is not None and is_expired(_str_or_none(note.get("expiration_date")))


# --- the listing --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Vanished:
    """A removal the tree diff cannot show (see ``_added_then_removed``)."""

    id: str
    kind: str = "removed"


class MnemListing(Listing):
    """A full listing from a node map, or an incremental one from a diff (see the module doc)."""

    def __init__(
        self,
        mode: Literal["full", "incremental"],
        cursor: str | None,
        produce: Any,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.cursor = cursor
        self._produce = produce
        self.tombstones_expired = True  # see "Expiry" in the module docstring

    def pages(self) -> Iterator[Page]:
        yield from self._produce(self)
        if self.partial_reason is None:
            self.complete = True


def _paged(items: list[Record | Skipped]) -> Iterator[Page]:
    page = Page([])
    for item in items:
        if isinstance(item, Skipped):
            page.skipped.append(item)
            continue
        page.records.append(item)
        if len(page.records) >= PAGE_SIZE:
            yield page
            page = Page([])
    if page.records or page.skipped:
        yield page


# --- the provider --------------------------------------------------------------------------


@dataclass
class _Step:
    op: WriteOp
    action: Literal["add", "rm", "none", "error"]
    node_id: str = ""
    spec: NodeSpec | None = None
    counted: Literal["added", "updated", "forgotten", ""] = ""
    record: Record | None = None
    error: Exception | None = None
    family: str = ""


@dataclass
class _Batch:
    steps: list[_Step] = field(default_factory=list)
    view: dict[str, Any] = field(default_factory=dict)  # node id -> node or NodeSpec or None


class MnemProvider(Provider):
    """A mnem store at ``path`` (the directory holding ``.mnem``).

    No method keeps the Store in a local variable and no error memsync raises chains to an
    SDK exception: a traceback kept alive by a caller would otherwise pin the Store, and
    with it mnem's lock, after close().
    """

    type = "mnem"
    family = "mnem"
    capabilities = Capabilities(
        incremental=True, client_ids=True, batch_writes=True, timestamps=True
    )

    native_provenance = frozenset({*NATIVE_FIELDS, "note", CONTENT_JSON_KEY, CONTENT_KIND_KEY})

    def version_detached(self, version: str | None) -> bool:
        return version is not None and version.startswith(BARE_VERSION)

    def __init__(
        self,
        name: str,
        path: Path | str,
        *,
        branch: str | None = None,
        scope_key: str | None = None,
        busy_timeout: float = 10.0,
        sdk: ModuleType | None = None,
    ) -> None:
        super().__init__(name)
        self.path = Path(path)
        self.branch = branch
        self._scope_key = scope_key
        self.busy_timeout = busy_timeout
        self.sdk = sdk if sdk is not None else load_sdk()
        self._store: Any = None
        self._owns_store = True
        self._foreign_staging: list[str] = []

    @classmethod
    def attached(
        cls, store: Any, *, name: str = "mnem", sdk: ModuleType | None = None
    ) -> MnemProvider:
        """A provider over a Store the caller opened and keeps (close() leaves it open)."""
        provider = cls(name, Path(store.root), sdk=sdk if sdk is not None else sdk_of(store))
        provider._store = store
        provider._owns_store = False
        provider._note_foreign_staging()
        return provider

    # identity ---------------------------------------------------------------------------

    def identity(self) -> str:
        where = self.path.expanduser().resolve()
        return f"mnem:{where}" + (f"@{self.branch}" if self.branch else "")

    def scope_key(self) -> str:
        return self._scope_key or self.path.expanduser().resolve().name

    # lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        if self._store is not None:
            return
        store = self._open_with_retry()
        problem = self._problem_with(store)
        if problem is not None:
            del store
            gc.collect()
            raise ProviderError(problem)
        self._store = store
        del store
        self._owns_store = True
        self._note_foreign_staging()

    def close(self) -> None:
        """Drop every reference to the Store: mnem releases its lock only when it is collected."""
        owned = self._owns_store and self._store is not None
        self._store = None
        if owned:
            gc.collect()

    def _open_with_retry(self) -> Any:
        sdk = self.sdk

        def busy(exc: BaseException) -> bool:
            return isinstance(exc, sdk.StoreIoError) and any(t in str(exc) for t in _LOCK_TEXT)

        retrying = Retrying(
            stop=stop_after_delay(self.busy_timeout),
            wait=wait_exponential(multiplier=0.05, max=1.0) + wait_random(0, 0.05),
            retry=retry_if_exception(busy),
            reraise=True,
        )
        error: ProviderError
        try:
            return retrying(sdk.open, str(self.path))
        except sdk.StoreIoError as exc:
            if busy(exc):
                error = ProviderBusy(
                    f"{self.name}: store busy: {self.path} is held by another process (an "
                    f"agent or the mnem CLI) for more than {self.busy_timeout:g}s; memsync "
                    "tries again next cycle",
                    retry_after=max(self.busy_timeout, 1.0),
                )
            else:
                error = TransientProviderError(f"{self.name}: cannot open {self.path}: {exc}")
        except sdk.NoStoreError:
            error = ProviderError(
                f"{self.name}: no mnem store at {self.path}; create one with "
                f"python -c \"import mnem; mnem.init('{self.path}')\" or fix "
                f"providers.{self.name}.path"
            )
        except sdk.MnemError as exc:
            error = ProviderError(f"{self.name}: cannot open the store at {self.path}: {exc}")
        raise error

    def _problem_with(self, store: Any) -> str | None:
        """Why this store is not the one configured, or None when it is."""
        root = Path(store.root).expanduser().resolve()
        if root != self.path.expanduser().resolve():
            return (
                f"{self.name}: no mnem store at {self.path} (mnem found the one at {root}, "
                f"above it); point providers.{self.name}.path at {root}, or create a store at "
                f"{self.path}"
            )
        head = store.head()
        if self.branch is not None and head != f"ref: {self.branch}":
            return (
                f"{self.name}: the store at {self.path} is on {head!r}, but "
                f"providers.{self.name}.branch is {self.branch!r}; memsync does not move HEAD "
                "under the agent: check that branch out in mnem, or remove `branch`"
            )
        return None

    def _note_foreign_staging(self) -> None:
        pending = self._sdk(
            "read staging",
            lambda: (
                {node_id for node_id, _ in self.store.staged()} | set(self.store.staged_deletions())
            ),
        )
        self._foreign_staging = sorted(pending)
        if pending:
            log.warning(
                "%s: %d uncommitted change(s) staged in %s by another writer (%s); memsync reads "
                "committed history and will not write until they are committed or unstaged",
                self.name,
                len(pending),
                self.path,
                ", ".join(self._foreign_staging[:5]),
            )

    @property
    def store(self) -> Any:
        """The open SDK Store (for tests and the migration); ProviderError when not open."""
        if self._store is None:
            raise ProviderError(f"{self.name}: the mnem store is not open (call open() first)")
        return self._store

    def _sdk(self, doing: str, call: Callable[[], T], *, bad_input: bool = False) -> T:
        """One SDK call, its errors as memsync's typed errors (raised with no chain to them)."""
        error: ProviderError
        try:
            return call()
        except self.sdk.StoreIoError as exc:
            error = TransientProviderError(f"{self.name}: cannot {doing}: {exc}")
        except self.sdk.MnemError as exc:
            error = ProviderError(f"{self.name}: cannot {doing}: {exc}")
        except (ValueError, TypeError, OverflowError) as exc:
            if not bad_input:
                raise
            error = ProviderError(f"{self.name}: cannot {doing}: {exc}")
        raise error

    # reads ------------------------------------------------------------------------------------

    def check(self) -> str:
        head = self._sdk("read the head commit", lambda: self.store.head_commit())
        count = len(self._committed_nodes(head))
        where = f"at commit {head[:12]}" if head else "(no commit yet)"
        found = f"reachable, {count} memories {where}"
        if self._foreign_staging:
            found += (
                f"; {len(self._foreign_staging)} uncommitted change(s) staged by another writer: "
                "memsync will not write until they are committed or unstaged"
            )
        return found

    def listing(self, cursor: str | None = None) -> Listing:
        self._sweep_expired_daily()
        head = self._sdk("read the head commit", lambda: self.store.head_commit())
        if cursor is not None and cursor == head:
            return MnemListing("incremental", head, lambda listing: iter(()))
        if cursor is not None and head is not None:
            changes = self._sdk(
                f"diff {cursor[:12]}..{head[:12]}", lambda: self._diff_or_none(cursor, head)
            )
            if changes is not None:
                return MnemListing(
                    "incremental", head, lambda listing: self._delta(listing, changes)
                )
        return MnemListing("full", head, lambda listing: self._full(head))

    def _sweep_expired_daily(self) -> None:
        """Forget memsync's nodes whose expiration date has passed: once a UTC day per store
        and process (a scan of working memory), never with another writer's changes staged."""
        today = records.utc_clock().date()
        if self._foreign_staging or _SWEPT.get(self.identity()) == today:
            return
        nodes = self._sdk("read working memory", lambda: self.store.working_memory())
        self.forget_expired([node_id for node_id, node in nodes.items() if expired_in_note(node)])
        _SWEPT[self.identity()] = today

    def forget_expired(self, node_ids: list[str]) -> None:
        """One tombstone commit for nodes whose date passed; history keeps every one."""
        if not node_ids:
            return
        try:
            for node_id in node_ids:
                self._sdk(f"forget node {node_id!r}", partial(self.store.rm, node_id))
            self._sdk(
                "commit the expired",
                lambda: self.store.commit(
                    f"{EXPIRED_COMMIT} {len(node_ids)} expired (their expiration date passed; "
                    "history keeps them)",
                    author=AUTHOR,
                ),
            )
        except ProviderError:
            self._unstage(node_ids)
            raise

    def _forgotten_as_expired(self, node_id: str) -> bool:
        """Whether memsync's expiry tombstone removed this node (only asked on the rare
        update of a node that is gone)."""
        return any(record.id == node_id for record in self.hidden_records())

    def hidden_records(self) -> list[Record]:
        """The nodes memsync forgot because their date passed and nobody brought back, as
        they were just before the tombstone (a walk of the log and one diff per tombstone)."""
        commits = self._sdk("read the log", lambda: self.store.log())
        hidden: dict[str, Record] = {}
        for commit in commits:
            if commit.author != AUTHOR or not commit.message.startswith(EXPIRED_COMMIT):
                continue
            if not commit.parents:
                continue
            changes = self._sdk(
                "read a tombstone", partial(self.store.diff, commit.parents[0], commit.id)
            )
            for change in changes:
                if change.kind == "removed" and change.old is not None:
                    record = record_from_node(change.old, self.scope_key())
                    if isinstance(record, Record):
                        hidden[change.id] = record
        if not hidden:
            return []
        served = self._sdk("read working memory", lambda: self.store.working_memory())
        return [record for node_id, record in hidden.items() if node_id not in served]

    def _diff_or_none(self, cursor: str, head: str) -> list[Any] | None:
        try:
            changes: list[Any] = self.store.diff(cursor, head)
        except self.sdk.InvalidRefError:
            log.info(
                "%s: cursor commit %s is not in %s (store replaced?); listing everything",
                self.name,
                cursor[:12],
                self.path,
            )
            return None
        return changes + self._added_then_removed(cursor, changes)

    def _added_then_removed(self, cursor: str, changes: list[Any]) -> list[Any]:
        """Nodes a commit after the cursor added and a later one removed, as removals.

        The tree diff cursor..head cannot show them, yet the mirror may hold one: memsync
        writes after it lists, so a node it wrote and an agent then forgot is in neither
        tree. Only memsync's own commits after the cursor can have written such a node, so
        only they are read, and only when another commit follows the cursor too.
        """
        commits = self._commits_since(cursor)
        if commits is None or len(commits) < 2:
            return []
        listed = {change.id for change in changes}
        touched: set[str] = set()
        for commit in commits:
            if commit.author != AUTHOR:
                continue
            diff = self.store.diff(commit.parents[0], commit.id)
            touched.update(change.id for change in diff if change.kind != "removed")
        return [
            _Vanished(node_id)
            for node_id in sorted(touched - listed)
            if self.store.working_node(node_id) is None
        ]

    def _commits_since(self, cursor: str) -> list[Any] | None:
        """The first-parent commits after CURSOR, newest first (None: not on that line)."""
        limit = 16
        while True:
            commits: list[Any] = self.store.log(first_parent=True, limit=limit)
            for index, commit in enumerate(commits):
                if commit.id == cursor:
                    return commits[:index]
            if len(commits) < limit:
                return None
            limit *= 16

    def _delta(self, listing: Listing, changes: list[Any]) -> Iterator[Page]:
        scope = self.scope_key()
        items: list[Record | Skipped] = []
        for change in changes:
            if change.kind == "removed":
                listing.removed.append(change.id)
            else:
                items.append(record_from_node(change.new, scope))
        yield from _paged(items)

    def _full(self, head: str | None) -> Iterator[Page]:
        scope = self.scope_key()
        nodes = self._committed_nodes(head)
        yield from _paged([record_from_node(node, scope) for node in nodes.values()])

    def _committed_nodes(self, head: str | None) -> dict[str, Any]:
        """Working memory, which is the head state unless someone left changes staged."""
        if not self._foreign_staging:
            nodes: dict[str, Any] = self._sdk(
                "read working memory", lambda: self.store.working_memory()
            )
            return nodes
        if head is None:
            return {}
        committed: dict[str, Any] = self._sdk(
            "read the head state", lambda: self.store.state_at(head)
        )
        return committed

    def get(self, provider_id: str) -> Record | None:
        node = self._sdk(f"read node {provider_id!r}", lambda: self._node(provider_id))
        if node is None:
            return None
        record = record_from_node(node, self.scope_key())
        return record if isinstance(record, Record) else None

    def _node(self, node_id: str) -> Any:
        """The committed node (staged leftovers of another writer are not memsync's to read)."""
        if node_id in self._foreign_staging:
            for change in self.store.diff():
                if change.id == node_id:
                    return change.old
        return self.store.working_node(node_id)

    # writes -----------------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        return self._single(WriteOp("create", item.origin, item=item))

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self._single(WriteOp("update", provider_id, item=item, provider_id=provider_id))

    def delete(self, provider_id: str) -> None:
        self._single(WriteOp("delete", provider_id, provider_id=provider_id))

    def _single(self, op: WriteOp) -> Record:
        (result,) = list(self.write_many([op]))
        if result.error is not None:
            raise result.error
        return result.record  # type: ignore[return-value]

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Every create, update and delete of this call in one commit (none if nothing changed)."""
        self.store  # noqa: B018 - fail before planning when not open
        if self._foreign_staging:
            error = StagedChangesPresent(
                f"{self.name}: {len(self._foreign_staging)} uncommitted change(s) are staged in "
                f"{self.path} by another writer ({', '.join(self._foreign_staging[:5])}); "
                "memsync will not commit them for you: commit them from the agent (or mnem), "
                "or unstage them, then sync again"
            )
            for op in ops:
                yield WriteResult(op, error=error)
            return
        batch = _Batch()
        for op in ops:
            batch.steps.append(self._plan(batch, op))
        yield from (WriteResult(s.op, error=s.error) for s in batch.steps if s.error)
        yield from self._apply(batch)

    def _plan(self, batch: _Batch, op: WriteOp) -> _Step:
        error: ProviderError
        try:
            if op.kind == "delete":
                return self._plan_delete(batch, op)
            assert op.item is not None
            require_content(self.name, op.item)
            if op.kind == "create":
                return self._plan_create(batch, op, op.item)
            return self._plan_update(batch, op, op.item)
        except ProviderError as exc:
            error = _detached(exc)
        return _Step(op, "error", error=error)

    def _current(self, batch: _Batch, node_id: str) -> Any:
        if node_id not in batch.view:
            batch.view[node_id] = self._sdk(
                f"read node {node_id!r}", lambda: self.store.working_node(node_id)
            )
        return batch.view[node_id]

    def _plan_create(self, batch: _Batch, op: WriteOp, item: Outgoing) -> _Step:
        spec = node_spec(item)
        current = self._current(batch, spec.id)
        family = family_of(item.origin)
        if current is None:
            return self._stage_add(batch, op, spec, "added", family)
        if _identity_of(current) == spec.identity():
            return _Step(op, "none", spec.id, record=self._record(spec))
        if _written_for(current, item.origin):
            return self._stage_add(batch, op, spec, "updated", family)
        existing = current.as_node(self.sdk) if isinstance(current, NodeSpec) else current
        text, _ = content_text(existing.content)
        if content_hash(text) == item.content_hash:  # the same memory already there: adopt it
            record = record_from_node(existing, self.scope_key())
            return _Step(op, "none", spec.id, record=record if isinstance(record, Record) else None)
        raise NodeIdCollision(
            f"{self.name}: node {spec.id!r} already exists in {self.path} with other content "
            "that memsync did not write; it is never overwritten: forget or rename that node "
            "in mnem, then sync again"
        )

    def _plan_update(self, batch: _Batch, op: WriteOp, item: Outgoing) -> _Step:
        node_id = op.provider_id or ""
        current = self._current(batch, node_id)
        spec = node_spec(item, node_id=node_id)
        if current is None and self._forgotten_as_expired(node_id):
            # memsync tombstoned it when its date passed: the update (date cleared or moved)
            # brings it back, with history holding both.
            return self._stage_add(batch, op, spec, "updated", family_of(item.origin))
        if current is None:
            raise NotFound(f"{self.name}: no node {node_id!r} in {self.path}")
        if _identity_of(current) == spec.identity():
            return _Step(op, "none", node_id, record=self._record(spec))
        return self._stage_add(batch, op, spec, "updated", family_of(item.origin))

    def _plan_delete(self, batch: _Batch, op: WriteOp) -> _Step:
        node_id = op.provider_id or ""
        current = self._current(batch, node_id)
        if current is None:
            return _Step(op, "none", node_id)
        batch.view[node_id] = None
        origin = (
            current.origin
            if isinstance(current, NodeSpec)
            else origin_for(node_id, (memsync_note(current) or {}).get("origin"))
        )
        return _Step(op, "rm", node_id, counted="forgotten", family=family_of(origin))

    def _stage_add(
        self,
        batch: _Batch,
        op: WriteOp,
        spec: NodeSpec,
        counted: Literal["added", "updated"],
        family: str,
    ) -> _Step:
        batch.view[spec.id] = spec
        record = self._record(spec)
        return _Step(op, "add", spec.id, spec=spec, counted=counted, family=family, record=record)

    def _record(self, spec: NodeSpec) -> Record:
        record = record_from_node(spec.as_node(self.sdk), self.scope_key())
        assert isinstance(record, Record)  # require_content ran before any spec was made
        return record

    def _apply(self, batch: _Batch) -> Iterator[WriteResult]:
        writes = [s for s in batch.steps if s.action in ("add", "rm")]
        touched: list[str] = []
        failure: ProviderError | None = None
        try:
            for step in writes:
                touched.append(step.node_id)
                self._stage(step)
            if self._sdk(
                "read staging", lambda: bool(self.store.staged() or self.store.staged_deletions())
            ):
                self._sdk(
                    "commit the batch",
                    lambda: self.store.commit(commit_message(writes), author=AUTHOR),
                )
        except ProviderError as exc:
            failure = _detached(exc)
        if failure is not None:
            self._unstage(touched)
        else:
            expired = [
                s.node_id
                for s in writes
                if s.spec is not None and is_expired(s.spec.expiration_date)
            ]
            try:
                self.forget_expired(expired)  # written (history has it), then tombstoned
            except ProviderError as exc:
                log.warning("%s; the sweep of the next day forgets them", exc)
        for step in batch.steps:
            if step.action in ("add", "rm") and failure is not None:
                yield WriteResult(step.op, error=failure)
            elif step.action in ("add", "none"):
                yield WriteResult(step.op, record=step.record)
            elif step.action == "rm":
                yield WriteResult(step.op)

    def _stage(self, step: _Step) -> None:
        spec = step.spec
        if spec is None:
            self._sdk(f"forget node {step.node_id!r}", lambda: self.store.rm(step.node_id))
            return
        self._sdk(
            f"stage node {spec.id!r}",
            lambda: self.store.add(
                spec.id,
                spec.content,
                content_kind=spec.content_kind,
                provenance=self.sdk.Provenance(**spec.provenance),
                event_time=spec.event_time,
            ),
            bad_input=True,
        )

    def _unstage(self, node_ids: list[str]) -> None:
        """Leave staging as memsync found it (clean) after a failed batch."""
        for node_id in node_ids:
            try:
                self._sdk(f"unstage {node_id!r}", partial(self._unstage_one, node_id))
            except ProviderError as exc:
                log.error("%s after a failed batch", exc)

    def _unstage_one(self, node_id: str) -> bool:
        return bool(self.store.unstage(node_id))


def _identity_of(current: Any) -> str:
    return current.identity() if isinstance(current, NodeSpec) else node_version(current)


def _written_for(current: Any, origin: str) -> bool:
    """Whether memsync wrote this node (or is writing it in this batch) for that origin."""
    if isinstance(current, NodeSpec):
        return current.origin == origin
    note = memsync_note(current)
    return note is not None and note.get("origin") == origin


def _detached(error: ProviderError) -> ProviderError:
    """The error without traceback or chain, so keeping it pins no frame (nor the Store)."""
    error.__context__ = None
    error.__cause__ = None
    return error.with_traceback(None)


def commit_message(steps: list[_Step]) -> str:
    """'memsync: 12 added, 3 updated, 1 forgotten from mem0'."""
    counts = {"added": 0, "updated": 0, "forgotten": 0}
    families: set[str] = set()
    for step in steps:
        if step.counted:
            counts[step.counted] += 1
            families.add(step.family)
    moved = ", ".join(f"{n} {what}" for what, n in counts.items() if n) or "no change"
    source = f" from {', '.join(sorted(families))}" if families else ""
    return f"memsync: {moved}{source}"


def build(name: str, entry: MnemConfig, config: Config) -> MnemProvider:
    try:
        sdk = load_sdk()
    except ProviderUnavailable as exc:
        raise ProviderUnavailable(f"providers.{name}: {exc}") from None
    if entry.create:
        from memsync.providers.mnem_on_demand import OnDemandMnemProvider

        return OnDemandMnemProvider(
            name,
            entry.path,
            create=True,
            config_name=name,
            branch=entry.branch,
            scope_key=entry.scope_key,
            busy_timeout=entry.busy_timeout,
            sdk=sdk,
        )
    return MnemProvider(
        name,
        entry.path,
        branch=entry.branch,
        scope_key=entry.scope_key,
        busy_timeout=entry.busy_timeout,
        sdk=sdk,
    )
