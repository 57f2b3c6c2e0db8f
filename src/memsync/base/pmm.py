"""PMM v1 (portable memory manifest) codec: JSON and JSONL, streamed in both directions.

Neither reading nor writing holds more than one record in memory, so a million-record backup
costs the same memory as a thousand. A broken header refuses the whole file; a broken record
is reported with its line (JSONL) or index (JSON) and field, and the others go on.

A memory's own metadata keys stay top-level keys of the record's ``metadata`` (where other PMM
readers expect them); what memsync and the provider add lives under ``metadata["memsync"]``.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import heapq
import io
import json
import os
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast

import ijson

from memsync.base.errors import PMMError, RecordError
from memsync.base.files import atomic_writer
from memsync.base.records import RESERVED_PREFIX, Record, parse_instant, utc_now_iso

# The largest text a record may carry when it is read in (config: [pmm] max_content_bytes).
DEFAULT_MAX_CONTENT_BYTES = 1024 * 1024

PMM_VERSION = 1
MEMSYNC_KEY = RESERVED_PREFIX  # metadata["memsync"]
Format = Literal["jsonl", "json"]

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Header:
    source_provider: str
    scope: dict[str, Any] = field(default_factory=dict)
    exported_at: str = field(default_factory=utc_now_iso)
    pmm_version: int = PMM_VERSION

    def as_dict(self) -> dict[str, Any]:
        return {
            "pmm_version": self.pmm_version,
            "exported_at": self.exported_at,
            "source_provider": self.source_provider,
            "scope": self.scope,
        }


# --- record <-> PMM dict -------------------------------------------------------------------


def record_to_pmm(record: Record) -> dict[str, Any]:
    """A Record as a PMM record; memsync's own facts go under metadata["memsync"]."""
    own: dict[str, Any] = {}
    if record.created_at:
        own["created_at"] = record.created_at
    if record.updated_at:
        own["updated_at"] = record.updated_at
    if record.version:
        own["version"] = record.version
    if record.origin:
        own["origin"] = record.origin
    if record.provenance:
        own["provenance"] = record.provenance
    if record.expiration_date:
        own["expiration_date"] = record.expiration_date  # a backup keeps expired memories too
    metadata = dict(record.metadata)
    if own:
        metadata[MEMSYNC_KEY] = own
    return {
        "id": record.id,
        "content": record.content,
        "metadata": metadata,
        "scope_key": record.scope_key,
    }


def record_from_pmm(raw: Any, location: str, max_content_bytes: int) -> Record:
    """Validate one PMM record and turn it into a Record; RecordError names the field."""
    if not isinstance(raw, dict):
        raise RecordError("a record must be a JSON object", location=location)
    if "content" not in raw:
        raise RecordError("missing", location=location, field="content")
    content = raw["content"]
    if not isinstance(content, str):
        raise RecordError(
            f"must be a string, got {type(content).__name__}", location=location, field="content"
        )
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > max_content_bytes:
        raise RecordError(
            f"{size} bytes is over the {max_content_bytes}-byte limit "
            "(raise [pmm] max_content_bytes to accept it)",
            location=location,
            field="content",
        )
    record_id = raw.get("id")
    if record_id is not None and not isinstance(record_id, str):
        raise RecordError("must be a string or null", location=location, field="id")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RecordError("must be an object", location=location, field="metadata")
    scope_key = raw.get("scope_key") or ""
    if not isinstance(scope_key, str):
        raise RecordError("must be a string", location=location, field="scope_key")
    own = metadata.get(MEMSYNC_KEY)
    own = own if isinstance(own, dict) else {}
    provenance = own.get("provenance")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise RecordError("is not valid Unicode text", location=location, field="content") from None
    return Record(
        id=record_id or "",
        content=content,
        metadata={k: v for k, v in metadata.items() if k != MEMSYNC_KEY},
        scope_key=scope_key,
        created_at=_str_or_none(own.get("created_at")),
        updated_at=_str_or_none(own.get("updated_at")),
        version=_str_or_none(own.get("version")),
        provenance=provenance if isinstance(provenance, dict) else {},
        origin=_str_or_none(own.get("origin")),
        expiration_date=_str_or_none(own.get("expiration_date")),
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _check_header(raw: Any, where: str) -> Header:
    if not isinstance(raw, dict):
        raise PMMError(f"{where}: the PMM header must be a JSON object")
    if "pmm_version" not in raw:
        if "content" in raw:
            raise PMMError(
                f"{where}: header missing — the file starts with a record; a PMM file starts "
                "with {pmm_version, exported_at, source_provider, scope}"
            )
        raise PMMError(f"{where}: header has no 'pmm_version'; is this a PMM file?")
    version = raw["pmm_version"]
    if version != PMM_VERSION or isinstance(version, bool):
        raise PMMError(
            f"{where}: pmm_version {version!r} is not supported (this memsync reads version 1)"
        )
    exported_at = raw.get("exported_at")
    if not isinstance(exported_at, str) or parse_instant(exported_at) is None:
        raise PMMError(f"{where}: header field 'exported_at' must be an ISO-8601 timestamp")
    source = raw.get("source_provider")
    if not isinstance(source, str) or not source:
        raise PMMError(f"{where}: header field 'source_provider' must be a non-empty string")
    scope = raw.get("scope", {})
    if not isinstance(scope, dict):
        raise PMMError(f"{where}: header field 'scope' must be an object")
    return Header(source_provider=source, scope=scope, exported_at=exported_at)


# --- duplicate ids ---------------------------------------------------------------------------


class SeenIds:
    """Membership of record ids in 8 bytes an id (64-bit digests in sorted runs).

    A plain set of strings would cost ~100 bytes an id and break the constant-memory promise
    at a million records. A false duplicate needs a 64-bit collision (about 1 in 3.6e7 at a
    million ids); it is reported as a rejection, never a silent drop.
    """

    _BUFFER = 65536

    def __init__(self) -> None:
        self._recent: dict[int, None] = {}
        self._runs: list[array[int]] = []

    @staticmethod
    def _digest(value: str) -> int:
        return int.from_bytes(hashlib.blake2b(value.encode(), digest_size=8).digest(), "big")

    def add(self, value: str) -> bool:
        """Remember value; False if it was seen before."""
        key = self._digest(value)
        if key in self._recent or any(self._contains(run, key) for run in self._runs):
            return False
        self._recent[key] = None
        if len(self._recent) >= self._BUFFER:
            self._flush()
        return True

    @staticmethod
    def _contains(run: array[int], key: int) -> bool:
        index = bisect.bisect_left(run, key)
        return index < len(run) and run[index] == key

    def _flush(self) -> None:
        run = array("Q", sorted(self._recent))
        self._recent = {}
        self._runs.append(run)
        # Merge runs of similar size so lookups stay logarithmic in count of runs.
        while len(self._runs) > 1 and len(self._runs[-2]) <= len(self._runs[-1]) * 2:
            last = self._runs.pop()
            before = self._runs.pop()
            # A lazy merge: no list of a million ints in between, only the two arrays.
            self._runs.append(array("Q", heapq.merge(before, last)))


# --- reading ---------------------------------------------------------------------------------


@dataclass
class Rejected:
    """A record that could not be read; the import reports it and goes on."""

    location: str
    reason: str
    id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"location": self.location, "id": self.id, "reason": self.reason}


class PMMReader:
    """Iterate a PMM file's records; each item is a Record or a Rejected.

    Open it with ``open_pmm``; ``header`` is validated before the first record is read, so a
    caller that reads the header first writes nothing for a file whose header is invalid.
    """

    def __init__(self, stream: IO[bytes], name: str, max_content_bytes: int) -> None:
        self._stream = stream
        self.name = name
        self.max_content_bytes = max_content_bytes
        self.format: Format = "jsonl"
        self.header = self._read_header()
        self._check_structure()

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> PMMReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_header(self) -> Header:
        line = self._read_line(1)
        if line is None:
            raise PMMError(f"{self.name}: the first line is too long to be a PMM header")
        if not line.strip():
            raise PMMError(f"{self.name}: the file is empty; expected a PMM JSON or JSONL file")
        text = self._decode(line, "line 1", header=True)
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and "records" not in parsed:
            self.format = "jsonl"
            self._line_number = 1
            return _check_header(parsed, f"{self.name}: line 1")
        self.format = "json"
        return self._read_json_header(line)

    # structure --------------------------------------------------------------------------

    def _check_structure(self) -> None:
        """Refuse the whole file, before anything is written, when its shape is not PMM's:
        ``records`` not an array, or a record that is not a JSON object. A record that is an
        object but has a bad field stays a per-record rejection the import reports."""
        if not self._stream.seekable():
            return
        start = self._stream.tell()
        try:
            if self.format == "json":
                self._check_json_structure()
            else:
                self._check_jsonl_structure()
        finally:
            self._stream.seek(start)

    def _check_json_structure(self) -> None:
        self._stream.seek(0)
        index = -1
        try:
            for prefix, event, _ in ijson.parse(self._stream, use_float=True):
                if prefix == "records" and event not in ("start_array", "end_array"):
                    got = _json_kind(event)
                    raise PMMError(
                        f"{self.name}: top-level field 'records' must be an array, got {got}; "
                        "nothing was imported"
                    )
                if prefix == "records.item" and event not in ("end_map", "end_array", "map_key"):
                    index += 1
                    if event != "start_map":
                        raise PMMError(
                            f"{self.name}: record {index} (in 'records') must be a JSON object, "
                            f"got {_json_kind(event)}; nothing was imported"
                        )
        except ijson.JSONError:
            return  # broken JSON is reported where it is met, record by record

    def _check_jsonl_structure(self) -> None:
        number = self._line_number
        while True:
            number += 1
            line = self._read_line(number)
            if line is None:
                continue  # over the size limit: a per-record rejection
            if not line:
                return
            head = line.lstrip()[:1]
            if not head or head == b"{":
                continue
            try:
                value = json.loads(line.decode("utf-8"))
            except ValueError:
                continue  # not JSON at all: a per-record rejection
            raise PMMError(
                f"{self.name}: line {number} must be a JSON object (a PMM record), got "
                f"{_python_kind(value)}; nothing was imported"
            )

    # JSONL ------------------------------------------------------------------------------

    def _line_limit(self) -> int:
        # JSON escapes can make a record's line up to 6x its content, plus room for metadata.
        return self.max_content_bytes * 6 + (1 << 20)

    def _read_line(self, number: int) -> bytes | None:
        """The next line, or None when it is over the limit (the rest of it is skipped)."""
        limit = self._line_limit()
        line = self._stream.readline(limit + 1)
        if len(line) > limit and not line.endswith(b"\n"):
            while True:
                rest = self._stream.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            return None
        return line

    def _decode(self, line: bytes, where: str, *, header: bool = False) -> str:
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError:
            if header:
                raise PMMError(
                    f"{self.name}: {where} is not UTF-8 text; is this a PMM file "
                    "(and not a binary or compressed one)?"
                ) from None
            raise RecordError("is not valid UTF-8", location=where) from None

    def _iter_jsonl(self) -> Iterator[Record | Rejected]:
        number = self._line_number
        while True:
            number += 1
            where = f"line {number}"
            line = self._read_line(number)
            if line is None:
                yield Rejected(
                    where,
                    f"content over the {self.max_content_bytes}-byte limit "
                    "(raise [pmm] max_content_bytes to accept it)",
                )
                continue
            if not line:
                return
            if not line.strip():
                continue
            try:
                raw = json.loads(self._decode(line, where))
            except RecordError as exc:
                yield Rejected(where, exc.reason)
                continue
            except json.JSONDecodeError as exc:
                reason = "truncated JSON" if not line.endswith(b"\n") else "invalid JSON"
                yield Rejected(where, f"{reason} ({exc.msg}, column {exc.colno})")
                continue
            yield self._record(raw, where)

    # JSON -------------------------------------------------------------------------------

    def _read_json_header(self, first_line: bytes) -> Header:
        """Scan top-level keys for the header; records are streamed on a second pass."""
        rest = _Prepended(first_line, self._stream)
        top: dict[str, Any] = {}
        builder: ijson.ObjectBuilder | None = None
        key: str | None = None
        try:
            for prefix, event, value in ijson.parse(rest, use_float=True):
                if prefix == "" and event == "map_key":
                    key = value
                    builder = None
                    continue
                if prefix == "" and event == "start_map":
                    continue
                if prefix == "" and event in ("end_map",):
                    break
                if prefix == "" and event not in ("start_map", "end_map"):
                    raise PMMError(f"{self.name}: not a PMM file (expected a JSON object)")
                if key is None or key == "records":
                    continue
                if builder is None:
                    builder = ijson.ObjectBuilder()
                builder.event(event, value)
                if prefix == key and event not in ("start_map", "start_array", "map_key"):
                    top[key] = builder.value
                    builder = None
                if len(top) == 4 and all(
                    k in top for k in ("pmm_version", "exported_at", "source_provider", "scope")
                ):
                    break
        except ijson.JSONError as exc:
            raise PMMError(
                f"{self.name}: not valid JSON or JSONL ({_short(exc)}); is this a PMM file, "
                "and is it complete?"
            ) from None
        except UnicodeDecodeError:
            raise PMMError(f"{self.name}: not UTF-8 text; is this a PMM file?") from None
        if "records" in top:
            raise PMMError(f"{self.name}: 'records' must be an array")
        return _check_header(top, self.name)

    def _iter_json(self) -> Iterator[Record | Rejected]:
        if not self._stream.seekable():
            raise PMMError(f"{self.name}: a PMM JSON file must be a regular file; use JSONL")
        self._stream.seek(0)
        index = -1
        try:
            for index, raw in enumerate(ijson.items(self._stream, "records.item", use_float=True)):
                yield self._record(raw, f"record {index}")
        except ijson.IncompleteJSONError as exc:
            yield Rejected(f"record {index + 1}", f"truncated JSON ({_short(exc)})")
        except ijson.JSONError as exc:
            yield Rejected(f"record {index + 1}", f"invalid JSON ({_short(exc)})")

    # both -------------------------------------------------------------------------------

    def _record(self, raw: Any, where: str) -> Record | Rejected:
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        try:
            record = record_from_pmm(raw, where, self.max_content_bytes)
        except RecordError as exc:
            return Rejected(
                where,
                f"{exc.field}: {exc.reason}" if exc.field else exc.reason,
                raw_id if isinstance(raw_id, str) else None,
            )
        if record.id and not self._seen.add(record.id):
            return Rejected(where, f"duplicate id {record.id!r} in this file", record.id)
        return record

    def __iter__(self) -> Iterator[Record | Rejected]:
        self._seen = SeenIds()
        if self.format == "jsonl":
            return self._iter_jsonl()
        return self._iter_json()


def _json_kind(event: str) -> str:
    return {
        "start_array": "an array",
        "start_map": "an object",
        "null": "null",
        "boolean": "a boolean",
        "integer": "a number",
        "double": "a number",
        "number": "a number",
        "string": "a string",
    }.get(event, event)


def _python_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string"


class _Prepended(io.RawIOBase):
    """A binary stream with some bytes already read put back in front of it."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._rest.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def open_pmm(
    path: str | os.PathLike[str] | IO[bytes],
    max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
) -> PMMReader:
    """Open a PMM file (JSON, JSONL, either gzipped) and validate its header."""
    if hasattr(path, "read"):
        stream: IO[bytes] = path  # type: ignore[assignment]
        name = getattr(path, "name", "<stream>")
    else:
        name = str(path)
        try:
            stream = open(path, "rb")  # noqa: SIM115 - owned by the reader
        except FileNotFoundError:
            raise PMMError(f"{name}: no such file") from None
        except IsADirectoryError:
            raise PMMError(f"{name}: is a directory, not a PMM file") from None
        except OSError as exc:
            raise PMMError(f"{name}: cannot read ({exc.strerror})") from None
    buffered = cast(
        io.BufferedReader,
        stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream),
    )
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        buffered = io.BufferedReader(gzip.GzipFile(fileobj=buffered))
    try:
        return PMMReader(buffered, name, max_content_bytes)
    except (OSError, EOFError) as exc:
        buffered.close()
        raise PMMError(f"{name}: cannot read ({exc})") from None
    except PMMError:
        buffered.close()
        raise


# --- writing ---------------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_pmm_stream(
    out: IO[str], header: Header, records: Iterable[Record], fmt: Format = "jsonl"
) -> int:
    """Write a PMM document to a text stream, one record at a time; returns the count."""
    count = 0
    if fmt == "jsonl":
        out.write(_dumps(header.as_dict()) + "\n")
        for record in records:
            out.write(_dumps(record_to_pmm(record)) + "\n")
            count += 1
        return count
    head = header.as_dict()
    out.write("{" + ",".join(f"{_dumps(k)}:{_dumps(v)}" for k, v in head.items()))
    out.write(',"records":[')
    for record in records:
        out.write(("," if count else "\n") + _dumps(record_to_pmm(record)))
        count += 1
    out.write("\n]}\n")
    return count


def write_pmm_file(
    path: Path,
    header: Header,
    records: Iterable[Record],
    fmt: Format = "jsonl",
    *,
    compress: bool = False,
) -> int:
    """Write a PMM file atomically (temp file, fsync, rename), mode 0600; returns the count.

    A crash or a full disk leaves either the old file or none, never a truncated one.
    """
    with atomic_writer(path, binary=True) as raw:
        binary: IO[bytes] = (
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if compress else raw  # type: ignore[assignment]
        )
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="\n", write_through=False)
        count = write_pmm_stream(text, header, records, fmt)
        text.flush()
        text.detach()
        if compress:
            binary.close()
    return count
