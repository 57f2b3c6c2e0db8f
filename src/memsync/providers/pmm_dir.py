"""``pmm-dir``: a directory holding one PMM JSONL file per scope, as a provider.

Writes rewrite a scope's file as a stream (old file in, new file out, renamed over it), so a
crash leaves the previous file whole and memory stays flat however large the file grows. A
scope key becomes a file name by percent-encoding, so no key can name a path outside the
directory. Every record a file holds carries that file's scope as its ``scope_key`` (what a PMM
tool imports it under), whichever store the memory came through; a record a file held with
another key (written before this rule) is given its file's on the file's next rewrite.

Beside wildcard scopes a pmm-dir without a ``scope_key`` holds every scope, a file each: its
files name its scopes (``discover``), a scope is its file (``bind``), and the daemon watches
the directory (``PmmDir``).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote, unquote

from memsync.base.errors import NotFound, PMMError, ProviderError, ProviderUnavailable
from memsync.base.paths import make_private_dir
from memsync.base.pmm import Header, Rejected, open_pmm, write_pmm_file
from memsync.base.records import Outgoing, Record, Skipped, utc_now_iso
from memsync.base.scopes import Scope, scoped_name
from memsync.config import Config, PmmDirConfig
from memsync.providers.base import (
    Capabilities,
    Listing,
    Page,
    Provider,
    SimpleListing,
    WriteOp,
    WriteResult,
    require_content,
)
from memsync.providers.discovery import Discovery
from memsync.providers.watched import Hint, Signature, WatchedFiles, signature_of

SUFFIX = ".pmm.jsonl"
DEFAULT_SCOPE = "default"
PAGE_SIZE = 500


def scope_file_name(scope_key: str) -> str:
    """A single safe path component for a scope key (reversible, never '.', '..' or '/')."""
    encoded = quote(scope_key or DEFAULT_SCOPE, safe="")
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    return encoded + SUFFIX


def scope_from_file_name(name: str) -> str:
    return unquote(name[: -len(SUFFIX)])


class PmmDirProvider(Provider):
    type = "pmm-dir"
    family = "pmm"
    capabilities = Capabilities(client_ids=True, batch_writes=True, multi_scope=True)

    def __init__(
        self,
        name: str,
        path: Path,
        scope_key: str | None = None,
        max_content_bytes: int = 1024 * 1024,
    ) -> None:
        super().__init__(name)
        self.root = Path(path)
        self.fixed_scope = scope_key
        self.max_content_bytes = max_content_bytes

    def identity(self) -> str:
        return f"pmm-dir:{self.root.resolve()}#{self.fixed_scope or '*'}"

    def scope_key(self) -> str:
        return self.fixed_scope or ""

    def origin_of(self, record: Record) -> str:
        # memsync writes the origin key as the record id; foreign files keep their own ids.
        if record.origin:
            return record.origin
        if ":" in record.id:
            return record.id
        return f"{self.family}:{record.id}"

    def open(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise ProviderUnavailable(
                f"{self.root} is a file; pmm-dir keeps one file per scope in a directory: "
                "point `path` at a directory"
            )
        make_private_dir(self.root)

    # many scopes: a file each ---------------------------------------------------------

    @property
    def discovers_scopes(self) -> bool:
        """Without a scope_key, its files name the scopes it holds."""
        return self.fixed_scope is None

    def discover(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> Discovery:
        """One scope a file: the scope each file's name spells (``Scope.pmm_key``)."""
        found = (
            Scope.from_pmm_key(scope_from_file_name(p.name), keys) for p in self._scope_files()
        )
        return Discovery({scope for scope in found if scope is not None})

    def bind(self, scope: Scope) -> PmmDirProvider:
        """The scope's file."""
        return PmmDirProvider(
            scoped_name(self.name, scope),
            self.root,
            scope_key=scope.pmm_key,
            max_content_bytes=self.max_content_bytes,
        )

    # files ------------------------------------------------------------------------------

    def _file_for(self, scope_key: str) -> Path:
        path = self.root / scope_file_name(scope_key)
        if path.parent.resolve() != self.root.resolve():
            raise ProviderError(f"scope key {scope_key!r} does not name a file in {self.root}")
        return path

    def _scope_files(self) -> list[Path]:
        if self.fixed_scope is not None:
            path = self._file_for(self.fixed_scope)
            return [path] if path.exists() else []
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.name.endswith(SUFFIX) and p.is_file())

    def _read(self, path: Path) -> Iterator[Record | Rejected]:
        try:
            with open_pmm(path, self.max_content_bytes) as reader:
                yield from reader
        except PMMError as exc:
            raise ProviderError(f"{self.name}: {exc}") from None

    # reads --------------------------------------------------------------------------------

    def listing(self, cursor: str | None = None) -> Listing:
        return SimpleListing(self._pages())

    def _pages(self) -> Iterator[Page]:
        for path in self._scope_files():
            scope = scope_from_file_name(path.name)
            page = Page([])
            for item in self._read(path):
                if isinstance(item, Rejected):
                    page.skipped.append(Skipped(item.id or item.location, item.reason))
                    continue
                if not item.id:
                    page.skipped.append(Skipped(f"{path.name}", "record without an id"))
                    continue
                item.scope_key = item.scope_key or scope
                if not item.content:
                    page.skipped.append(Skipped(item.id, "empty content"))
                    continue
                page.records.append(item)
                if len(page.records) >= PAGE_SIZE:
                    yield page
                    page = Page([])
            if page.records or page.skipped:
                yield page

    def get(self, provider_id: str) -> Record | None:
        for path in self._scope_files():
            for item in self._read(path):
                if isinstance(item, Record) and item.id == provider_id:
                    return item
        return None

    # writes -------------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        return self._single(WriteOp("create", item.origin, item=item))

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self._single(WriteOp("update", provider_id, item=item, provider_id=provider_id))

    def delete(self, provider_id: str) -> None:
        self._single(WriteOp("delete", provider_id, provider_id=provider_id))

    def _single(self, op: WriteOp) -> Record:
        (result,) = list(self.write_many([op]))
        if result.error:
            raise result.error
        return result.record  # type: ignore[return-value]

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Group the ops by scope file and rewrite each file once."""
        by_file: dict[Path, list[WriteOp]] = defaultdict(list)
        for op in ops:
            if op.item is not None:
                try:
                    require_content(self.name, op.item)
                except ProviderError as exc:
                    yield WriteResult(op, error=exc)
                    continue
            if op.kind == "create" and op.item is not None:
                by_file[self._file_for(self.fixed_scope or op.item.scope_key)].append(op)
            else:
                by_file[self._locate(op.provider_id or "")].append(op)
        for path, file_ops in by_file.items():
            try:
                results = self._rewrite(path, file_ops)
            except (OSError, ProviderError) as exc:
                error = (
                    exc
                    if isinstance(exc, ProviderError)
                    else ProviderError(f"{self.name}: cannot write {path} ({exc})")
                )
                results = [WriteResult(op, error=error) for op in file_ops]
            yield from results

    def _locate(self, provider_id: str) -> Path:
        """The scope file holding an id (updates and deletes name ids, not scopes)."""
        for path in self._scope_files():
            for item in self._read(path):
                if isinstance(item, Record) and item.id == provider_id:
                    return path
        return self._file_for(self.fixed_scope or DEFAULT_SCOPE)

    def _rewrite(self, path: Path, ops: list[WriteOp]) -> list[WriteResult]:
        now = utc_now_iso()
        scope = scope_from_file_name(path.name)
        wanted: dict[str, WriteOp] = {}
        for op in ops:
            wanted[op.item.origin if op.kind == "create" and op.item else op.provider_id or ""] = op
        done: dict[str, WriteResult] = {}

        def new_record(op: WriteOp, record_id: str, created_at: str | None) -> Record:
            assert op.item is not None
            return Record(
                id=record_id,
                content=op.item.content,
                metadata=dict(op.item.metadata),
                scope_key=self.fixed_scope or scope,  # the file's scope, not the source's name
                created_at=op.item.created_at or created_at or now,
                updated_at=op.item.updated_at,  # the source's, never the time of the sync
                provenance=dict(op.item.provenance),
                origin=op.item.origin,
                expiration_date=op.item.expiration_date,
            )

        def merged() -> Iterator[Record]:
            if path.exists():
                for existing in self._read(path):
                    if isinstance(existing, Rejected):
                        raise ProviderError(
                            f"{self.name}: {path.name} {existing.location}: {existing.reason}; "
                            "fix or move the file before memsync rewrites it"
                        )
                    op = wanted.get(existing.id)
                    if op is None:
                        existing.scope_key = self.fixed_scope or scope  # repaired if it was not
                        yield existing
                    elif op.kind == "delete":
                        done[existing.id] = WriteResult(op)
                    else:
                        record = new_record(op, existing.id, existing.created_at)
                        done[existing.id] = WriteResult(op, record=record)
                        yield record
            for record_id, op in wanted.items():
                if record_id in done:
                    continue
                if op.kind == "create":
                    record = new_record(op, record_id, None)
                    done[record_id] = WriteResult(op, record=record)
                    yield record
                elif op.kind == "delete":
                    done[record_id] = WriteResult(op)
                else:
                    done[record_id] = WriteResult(
                        op, error=NotFound(f"{self.name}: no memory {record_id!r}")
                    )

        header = Header(source_provider="memsync", scope={"scope_key": scope})
        make_private_dir(path.parent)
        write_pmm_file(path, header, merged())
        if not any(r.record for r in done.values()) and _only_header(path):
            os.unlink(path)
        return [done[k] for k in wanted]


class PmmDir(WatchedFiles):
    """A pmm-dir, watched: one PMM JSONL file per scope key, directly in its directory."""

    def __init__(
        self, provider: str, root: Path, *, fixed: str | None, keys: tuple[str, ...]
    ) -> None:
        super().__init__(provider, root)
        self.fixed = fixed
        self.keys = keys  # the wildcard keys beside it; () in a config without them

    def hint_for(self, path: Path) -> Hint | None:
        if path.parent != self.root or not path.name.endswith(SUFFIX):
            return None
        if self.keys:
            scope = Scope.from_pmm_key(scope_from_file_name(path.name), self.keys)
            return None if scope is None else Hint(self.provider, scope)
        if self.fixed is not None and path.name != scope_file_name(self.fixed):
            return None
        return Hint(self.provider)

    def signature(self, scope: Scope | None) -> Signature:
        if scope is not None:
            return signature_of(self.root / scope_file_name(scope.pmm_key))
        if self.fixed is not None:
            return signature_of(self.root / scope_file_name(self.fixed))
        return signature_of(self.root, keep=lambda name: name.endswith(SUFFIX))


def watched_files(name: str, entry: PmmDirConfig, keys: tuple[str, ...]) -> PmmDir:
    """Its directory: each scope's file, or its one file."""
    return PmmDir(name, Path(entry.path), fixed=entry.scope_key, keys=keys)


def build(name: str, entry: PmmDirConfig, config: Config) -> PmmDirProvider:
    return PmmDirProvider(
        name, entry.path, scope_key=entry.scope_key, max_content_bytes=config.pmm.max_content_bytes
    )


def _only_header(path: Path) -> bool:
    with open(path, "rb") as f:
        f.readline()
        return not f.readline()
