"""The one interface every memory provider implements, and the shapes it speaks in.

A provider lists its memories for its configured scope page by page, gets, creates, updates
and deletes one memory, and says what it can do. It knows nothing about staging, links or
plans: that is the engine's business. Preconditions that fail raise typed errors from
``memsync.base.errors``; anything that may pass on retry is a ``TransientProviderError``.

A provider that holds many scopes (a wildcard ``user_id = "*"``, a directory of scope files, a
path template) also owns what the run over scopes asks of it, as vdirsyncer's storages own
``discover``: which scopes it holds (``discover``), itself narrowed to one (``bind``), whether
one handle serves them all (``holds_every_scope``). Two more capabilities come from a type's
config alone, before anything is built, so they live beside its ``build`` and the registry
finds them (``providers/__init__.py``): the local files its store lives in, which the daemon
watches (``watched.py``), and a cheap request that says which scopes changed
(``change_probe.py``). Each is optional: a provider without it is synced without it.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Literal, Protocol

from memsync.base.errors import ProviderError
from memsync.base.exclude import NO_EXCLUSION, Exclusion
from memsync.base.history import HistoryRead, HistoryReport, Timeline
from memsync.base.records import Outgoing, Record, Skipped
from memsync.base.scopes import Scope
from memsync.base.write_kind import WriteKind
from memsync.providers.discovery import Discovery


def require_content(provider: str, item: Outgoing) -> None:
    """memsync never writes an empty memory (ADR-0024): refuse before any call is made."""
    if item.is_blank:
        raise ProviderError(
            f"{provider}: refusing to write a memory with empty content (origin {item.origin})"
        )


@dataclass(frozen=True)
class Capabilities:
    """What a provider can do; the engine and the contract suite read these."""

    incremental: bool = False  # lists only what changed since a cursor
    client_ids: bool = (
        False  # stores memsync's id as its own (re-create replaces, never duplicates)
    )
    batch_writes: bool = False  # write_many is cheaper than one call per record
    timestamps: bool = True  # keeps a memory's created_at
    multi_scope: bool = False  # holds several scope_keys at once (pmm-dir)
    metadata_values: Literal["json", "strings"] = "json"  # what metadata values survive natively
    # What the store does to text on write: "exact" keeps every byte; "strip" drops
    # surrounding whitespace; "lf" turns CRLF and CR line endings into LF. Either way the
    # fingerprint is unchanged (it is taken over the normalised text, records.normalise_text),
    # so an altering store never looks edited and is never rewritten.
    text_on_write: Literal["exact", "strip", "lf"] = "exact"
    # Every write the store accepts gives the memory a newer updated_at (Mem0, every kind):
    # a version older than one it showed before means the store went back in time (a
    # restore, lost writes), and the mirror holds it as a rollback instead of an edit.
    ordered_updates: bool = False
    # A batch's commit costs time in proportion to everything the store holds, not to the
    # batch (mnem 0.0.7 rewrites its whole state map at each commit): replay then sizes its
    # batches to the store, so that the commits of a large copy cost about what one would.
    commits_scan_store: bool = False
    # A version's updated_at is not in the listing: the store tells when each version was made
    # only when asked (``version_dates``: mnem, from the commit that made it).
    dates_versions: bool = False
    # Keeps each memory's past (Mem0's history: every add, edit and delete), which ``history``
    # reads, so that a store that keeps versions can begin with it (``import_history``).
    history: bool = False


def stored_text(capabilities: Capabilities, text: str) -> str:
    """The text a provider holds after memsync writes ``text`` to it (its declared alteration)."""
    if capabilities.text_on_write == "strip":
        return text.strip()
    if capabilities.text_on_write == "lf":
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


@dataclass
class Page:
    """One page of a listing: the records, and those listed but not carried (with why)."""

    records: list[Record]
    skipped: list[Skipped] = field(default_factory=list)


class Listing(ABC):
    """One pass over a provider's memories in its scope.

    Iterate ``pages()`` to the end; only then are ``complete``, ``removed`` and ``cursor``
    final. ``complete`` is True only when the provider proved it returned everything (no cap
    reached, no page failed, counts agree) — the engine infers deletes from nothing less.
    """

    mode: Literal["full", "incremental"] = "full"
    complete: bool = False
    removed: list[str]  # ids the provider says were deleted (incremental sources only)
    cursor: str | None = None  # where the next incremental listing starts; commit after staging
    partial_reason: str | None = None  # why complete is False, for status
    # True when the listing may leave out memories that still exist (expired ones a server
    # cannot be asked to show): the mirror confirms a missing memory with get() before it
    # infers a delete.
    hides_expired: bool = False
    # True when the store has no expiry and memsync takes an expired memory out of it (mnem's
    # tombstone): a missing memory whose date has passed is kept, not deleted elsewhere.
    tombstones_expired: bool = False
    # The same two for what Dream retired (superseded or merged, see memsync.base.dream): a
    # listing asked for the current truth only (the Platform's latest_only) may leave such a
    # memory out, and a store without Dream states may have had memsync take it out (mnem).
    hides_retired: bool = False
    tombstones_retired: bool = False
    # Records the store holds outside every place its layout names (a mnem node outside the
    # LangGraph namespaces): never memsync's, counted for status. None: not counted, or not
    # known from this listing; an incremental listing says by how much it changed instead.
    outside: int | None = None
    outside_change: int = 0

    def __init__(self) -> None:
        self.removed = []

    @abstractmethod
    def pages(self) -> Iterator[Page]: ...

    def kept_pages(self, exclusion: Exclusion) -> Iterator[Page]:
        """The pages with the records EXCLUSION covers taken out (the listing itself, its
        completeness and cursor, is untouched): what every reader that copies or compares sees."""
        for page in self.pages():
            yield replace(page, records=exclusion.split(page.records)[0]) if exclusion else page

    def mark_partial(self, reason: str) -> None:
        self.complete = False
        self.partial_reason = reason


class SimpleListing(Listing):
    """A full listing built from a page generator that sets completeness when it ends."""

    def __init__(self, pages: Iterable[Page], *, complete_when_exhausted: bool = True) -> None:
        super().__init__()
        self._pages = pages
        self._complete_when_exhausted = complete_when_exhausted

    def pages(self) -> Iterator[Page]:
        yield from self._pages
        if self._complete_when_exhausted and self.partial_reason is None:
            self.complete = True


@dataclass
class VersionDates:
    """When versions were made, as ``Provider.version_dates`` answers: ISO instants by id.
    ``undated``: how many of those asked the store could not tell (a walk cut short)."""

    created_at: dict[str, str] = field(default_factory=dict)
    updated_at: dict[str, str] = field(default_factory=dict)
    undated: int = 0


class CommitBook(Protocol):
    """Where a provider keeps what it read or made of its store's commits between runs (the
    staging store's ``store_commits``): rows of (commit id, time in ms, changes as JSON)."""

    def commits(self, store: str, commit_ids: Sequence[str]) -> dict[str, tuple[int, str]]: ...

    def keep(self, store: str, rows: Iterable[tuple[str, int, str]], now: float) -> None: ...

    def forget_below(self, store: str, above: Collection[str], now: float) -> None: ...


@dataclass
class WriteOp:
    """One write the engine asks for; ``key`` ties the result back to its outbox row.

    ``kind`` is the plan's ``WriteKind``; a plain ``"create"``/``"update"``/``"delete"`` from
    a caller is turned into it on construction, so every WriteOp holds the one type.
    """

    kind: WriteKind | Literal["create", "update", "delete"]
    key: str
    item: Outgoing | None = None
    provider_id: str | None = None
    # For an update or a delete: the memory as the staging store last saw it in this
    # provider, so a provider that must know what it replaces (Mem0's merging update, mnem's
    # batch) need not read it first.
    previous: Record | None = None

    def __post_init__(self) -> None:
        self.kind = WriteKind(self.kind)


@dataclass
class WriteResult:
    op: WriteOp
    record: Record | None = None  # what the provider now holds (None after a delete)
    error: Exception | None = None


class Provider(ABC):
    """A configured memory provider. Open it for one cycle, use it, close it."""

    type: ClassVar[str]
    family: ClassVar[str]  # the namespace of ids that originate here: "mem0", "mnem", "pmm"...
    capabilities: ClassVar[Capabilities] = Capabilities()
    # The records memsync leaves alone (config ``exclude``): readers that copy or compare
    # list through ``listing.kept_pages(exclusion)``. Set by ``providers.build_provider``.
    exclusion: Exclusion = NO_EXCLUSION

    def __init__(self, name: str) -> None:
        self.name = name

    # lifecycle ------------------------------------------------------------------------

    def open(self) -> None:
        """Acquire whatever handle the provider needs for one cycle (may raise ProviderBusy)."""

    def close(self) -> None:
        """Release the handle so the application that owns the store can use it again."""

    def __enter__(self) -> Provider:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: builtins.type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # identity -------------------------------------------------------------------------

    @abstractmethod
    def identity(self) -> str:
        """Endpoint, store path and scope as one string: when it changes, the mirror resets."""

    @abstractmethod
    def scope_key(self) -> str:
        """The PMM scope_key of this provider's records (a user id, bank, dataset...)."""

    def describe_scope(self) -> dict[str, Any]:
        """The scope as a PMM header object."""
        return {"scope_key": self.scope_key()}

    def left_token(self) -> str | None:
        """What the open store holds, as a token it can be asked for again later (mnem: its
        head commit), taken just before memsync lets go: the daemon's watcher tells a store
        that only had a handle closed on it from one that was written. None: no such token."""
        return None

    # Provenance keys the store holds in fields of its own: an agent's rewrite owns them, so
    # they are not carried over from the staged version of a detached record.
    native_provenance: frozenset[str] = frozenset()

    def version_detached(self, version: str | None) -> bool:
        """Whether a version token is of a record read with ``detached`` set (see Record)."""
        return False

    def origin_of(self, record: Record) -> str:
        """The logical memory a record belongs to: its marker, or this provider's own key."""
        return record.origin or f"{self.family}:{record.id}"

    # reads ----------------------------------------------------------------------------

    def check(self) -> str:
        """Reach the provider and say in a few words what was found; raise if unreachable."""
        listing = self.listing()
        count = sum(len(page.records) for page in listing.kept_pages(self.exclusion))
        return f"reachable, {count} memories in scope"

    @abstractmethod
    def listing(self, cursor: str | None = None) -> Listing:
        """A pass over the scope: incremental from cursor when supported, else full."""

    @abstractmethod
    def get(self, provider_id: str) -> Record | None: ...

    def version_dates(self, created: list[str], updated: Mapping[str, str | None]) -> VersionDates:
        """When the store got the memories CREATED, listed without a created_at (mnem: the
        commit that added a node an agent wrote), and when it made the versions UPDATED
        (memory id -> its listed version token), listed without an updated_at (mnem: the
        commit that last wrote the node; asked only with ``Capabilities.dates_versions``).
        Asked once per memory and version, of the last listing, when memsync first sees them;
        unknown created_at are dated then, unknown updated_at stay None."""
        return VersionDates()

    def keep_commits_in(self, book: CommitBook) -> None:
        """Where the provider may keep what it read of its store's commits between runs (the
        staging store's); a provider without commits has nothing to keep."""

    def hidden_records(self) -> list[Record]:
        """Memories the store keeps but no longer serves (mnem's expiry tombstones), so that
        a one-shot migration counts them as present instead of writing them again."""
        return []

    def versions_changed_since(self, since: datetime) -> dict[str, str | None] | None:
        """Version tokens of memories changed at or after ``since`` (memsync's clock), from one
        listing-level query; may include more (the tokens are compared), never fewer. None
        when the provider cannot tell cheaply, or holds its store for the whole cycle."""
        return None

    # many scopes (optional: the run over a wildcard config's scopes asks these) --------

    @property
    def discovers_scopes(self) -> bool:
        """Whether ``discover`` can name the scopes this provider holds: the run opens it
        before the scopes' cycles to ask, and it is a source of the run's scopes."""
        return False

    @property
    def holds_every_scope(self) -> bool:
        """Whether one open handle serves every scope (Mem0's library, a mnem store with a
        namespace per scope): the run opens it once, before the scopes, holds it to the end,
        and reads its scopes one at a time."""
        return False

    def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery | None:
        """The scopes this open provider holds, as values of the wildcard KEYS beside the
        FIXED ones; None when it cannot tell (it holds one scope)."""
        return None

    def bind(self, scope: Scope) -> Provider | None:
        """This provider narrowed to SCOPE, named ``name[scope]``, as the scope's cycle uses
        it; None when it cannot be (it holds one scope)."""
        return None

    def read_ahead(self, scopes: list[Scope]) -> None:
        """A remote provider may start reading these scopes' memories, in this order, ahead of
        their cycles (a Mem0 server): its listings then overlap the local work."""

    # the past (optional): Mem0's history read, mnem's history begun with it -------------

    def history(self, memory_ids: list[str]) -> HistoryRead:
        """The events of these memories' pasts (``capabilities.history``), and of any other
        memory the store's history shows deleted, whose scope the caller then decides."""
        raise ProviderError(f"{self.name}: keeps no history of its memories")

    def history_refusal(self) -> str | None:
        """Why this open store cannot begin with another store's past now (mnem: it holds
        commits already), or None when it can."""
        return f"{self.name} ({self.type}) keeps no versions of its memories"

    def takes_history(self) -> bool:
        """Whether this open store asks to begin with another store's past, and can: it is
        configured so (mnem's ``import_history``) and ``history_refusal`` has nothing to say."""
        return False

    def import_history(
        self, timeline: Timeline, *, budget: float | None = None, dry_run: bool = False
    ) -> HistoryReport:
        """Write TIMELINE as this new store's history, HEAD exactly what the current-state
        copy writes (a plan only, when DRY_RUN); BUDGET: the disk budget, else the config's."""
        raise ProviderError(f"{self.name}: cannot hold another store's history")

    # writes ---------------------------------------------------------------------------

    # A first sync's writes prepared ahead (optional; the engine's ``ahead`` and ``prepared``):
    # a store whose every write waits on its disk (mnem) may stage the creates it expects
    # while the cycle plans, and make them visible in one commit once replay asks for them.

    def stages_ahead(self) -> bool:
        """Whether this provider stages ahead the creates it is told to expect (then the
        engine tells it, and replays into it through the methods below)."""
        return False

    def expect_creates(self, items: list[Outgoing]) -> None:
        """Creates the cycle is likely to plan here (another listing's new memories)."""

    def planned_creates(self, origins: set[str]) -> None:
        """The origins of the creates the plan asks for: prepare nothing else visible."""

    def prepare_writes(self, ops: list[WriteOp]) -> list[WriteResult] | None:
        """What each write will leave once ``commit_prepared`` makes them all visible (an
        error is final); None when nothing is prepared here (replay calls ``write_many``)."""
        return None

    def commit_prepared(self) -> None:
        """Make every prepared write visible at once; raise ProviderError when none could be."""

    @abstractmethod
    def create(self, item: Outgoing) -> Record:
        """Write a new memory and return it as now held (with the provider's id)."""

    @abstractmethod
    def update(self, provider_id: str, item: Outgoing) -> Record:
        """Replace a memory's content and metadata; raise NotFound if it is gone."""

    @abstractmethod
    def delete(self, provider_id: str) -> None:
        """Delete a memory; deleting one that is already gone is not an error."""

    def update_op(self, op: WriteOp) -> Record:
        """An update as the engine asks it; providers that use ``op.previous`` override this."""
        assert op.item is not None and op.provider_id is not None
        return self.update(op.provider_id, op.item)

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Apply writes, yielding each result as soon as it is durable in the provider.

        Providers with batch calls override this (one commit, one request); the default is
        one call per op, and one op's failure never stops the others.
        """
        for op in ops:
            try:
                if op.kind == "create":
                    assert op.item is not None
                    yield WriteResult(op, record=self.create(op.item))
                elif op.kind == "update":
                    yield WriteResult(op, record=self.update_op(op))
                else:
                    assert op.provider_id is not None
                    self.delete(op.provider_id)
                    yield WriteResult(op)
            except Exception as exc:
                yield WriteResult(op, error=exc)
