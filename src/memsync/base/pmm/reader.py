"""Reading a PMM file (JSON or JSONL, gzipped or not) one record at a time.

A broken header refuses the whole file; a broken record is reported with its line (JSONL) or
index (JSON) and field, and the others go on."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, cast

import ijson

from memsync.base.errors import PMMError, RecordError
from memsync.base.pmm.schema import (
    DEFAULT_MAX_CONTENT_BYTES,
    Format,
    Header,
    check_header,
    record_from_pmm,
)
from memsync.base.pmm.seen_ids import SeenIds
from memsync.base.records import Record

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16


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
            return check_header(parsed, f"{self.name}: line 1")
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
        return check_header(top, self.name)

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
