"""Writing a PMM document record by record, to a stream or atomically to a file."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from memsync.base.files import atomic_writer
from memsync.base.pmm.schema import Format, Header, record_to_pmm
from memsync.base.records import Record


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
