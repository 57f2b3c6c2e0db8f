"""The PMM codec: round trips, streaming, and every malformed input as a clear error."""

from __future__ import annotations

import gzip
import io
import json
import unicodedata
from pathlib import Path

import pytest

from memsync.base.errors import PMMError
from memsync.base.pmm import Header, Rejected, SeenIds, open_pmm, write_pmm_file
from memsync.base.records import Record

HEADER = {
    "pmm_version": 1,
    "exported_at": "2026-11-30T09:00:00Z",
    "source_provider": "mem0",
    "scope": {"user_id": "alice"},
}


def jsonl(path: Path, *records: object, header: object = HEADER) -> Path:
    lines = [json.dumps(header)] if header is not None else []
    lines += [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_all(path: Path, **kwargs: int) -> list[Record | Rejected]:
    with open_pmm(path, **kwargs) as reader:
        return list(reader)


def sample_records() -> list[Record]:
    return [
        Record(
            id="mem0:1",
            content="likes tea",
            metadata={"topic": "drinks", "n": 1, "tags": ["a"]},
            scope_key="alice",
            created_at="2021-06-01T09:30:00-07:00",
            provenance={"source": "assistant", "agent_id": "bot"},
            origin="mem0:1",
        ),
        Record(id="mem0:2", content="שלום 🐈", scope_key="alice"),
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
@pytest.mark.parametrize("compress", [False, True])
def test_round_trip_keeps_everything(tmp_path: Path, fmt: str, compress: bool) -> None:
    path = tmp_path / f"out.{fmt}"
    count = write_pmm_file(
        path, Header("mem0", {"user_id": "alice"}), sample_records(), fmt, compress=compress
    )  # type: ignore[arg-type]
    assert count == 2
    with open_pmm(path) as reader:
        assert reader.header.source_provider == "mem0"
        assert reader.format == fmt
        back = list(reader)
    assert back == sample_records()


def test_user_metadata_stays_top_level_and_memsync_facts_go_under_one_key(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_pmm_file(path, Header("mem0"), sample_records()[:1])
    record = json.loads(path.read_text().splitlines()[1])
    assert record["metadata"]["topic"] == "drinks"
    assert set(record["metadata"]) == {"topic", "n", "tags", "memsync"}
    assert record["metadata"]["memsync"]["provenance"]["source"] == "assistant"


def test_written_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_pmm_file(path, Header("mem0"), sample_records())
    assert path.stat().st_mode & 0o777 == 0o600


def test_json_header_after_records_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "late.json"
    doc = {"records": [{"id": "a", "content": "x"}], **HEADER}
    path.write_text(json.dumps(doc))
    assert [r.content for r in read_all(path)] == ["x"]  # type: ignore[union-attr]


def test_nfd_and_padded_content_is_read_byte_for_byte(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    path = jsonl(
        tmp_path / "f.jsonl", {"id": "a", "content": nfd}, {"id": "b", "content": "  pad \r\n"}
    )
    first, second = read_all(path)
    assert isinstance(first, Record) and first.content == nfd != "café"
    assert isinstance(second, Record) and second.content == "  pad \r\n"
    assert first.content_hash == Record("x", "café").content_hash  # equal only inside hashes


# --- malformed files: the whole file is refused, nothing is yielded ----------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (
            b'{"pmm_version": 2, "exported_at": "2026-01-01T00:00:00Z", "source_provider": "x", "scope": {}}\n',
            "pmm_version 2 is not supported",
        ),
        (b'{"id": "a", "content": "no header"}\n', "header missing"),
        (b'{"pmm_version": 1, "source_provider": "x", "scope": {}}\n', "exported_at"),
        (
            b'{"pmm_version": 1, "exported_at": "yesterday", "source_provider": "x"}\n',
            "exported_at",
        ),
        (
            b'{"pmm_version": 1, "exported_at": "2026-01-01T00:00:00Z", "scope": {}}\n',
            "source_provider",
        ),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not UTF-8"),
        (
            b'{"pmm_version": 1, "exported_at": "2026-01-01T00:00:00Z", "source_pro',
            "not valid JSON",
        ),
        (b"[1, 2, 3]", "not a PMM file"),
        (b"hello world\n", "not valid JSON"),
    ],
)
def test_invalid_files_are_refused_with_a_reason(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(PMMError, match=message) as caught:
        read_all(path)
    assert "\n" not in str(caught.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(PMMError, match="no such file"):
        open_pmm(tmp_path / "nope.jsonl")
    with pytest.raises(PMMError, match="is a directory"):
        open_pmm(tmp_path)


# --- malformed records: reported with line/index and field, the rest goes on -------------


def test_bad_records_are_reported_by_line_and_field(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "f.jsonl",
        {"id": "ok1", "content": "fine"},
        {"id": "nocontent"},
        {"id": "int", "content": 42},
        {"id": 7, "content": "id not a string"},
        {"id": "meta", "content": "x", "metadata": [1]},
        "{broken json",
        {"id": "ok1", "content": "duplicate id"},
        {"id": "ok2", "content": "also fine"},
    )
    items = read_all(path)
    good = [i.id for i in items if isinstance(i, Record)]
    bad = [(i.location, i.reason) for i in items if isinstance(i, Rejected)]
    assert good == ["ok1", "ok2"]
    assert bad == [
        ("line 3", "content: missing"),
        ("line 4", "content: must be a string, got int"),
        ("line 5", "id: must be a string or null"),
        ("line 6", "metadata: must be an object"),
        ("line 7", "invalid JSON (Expecting property name enclosed in double quotes, column 2)"),
        ("line 8", "duplicate id 'ok1' in this file"),
    ]


def test_json_records_are_reported_by_index(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({**HEADER, "records": [{"id": "a", "content": "x"}, {"id": "b"}]}))
    items = read_all(path)
    assert isinstance(items[0], Record)
    assert isinstance(items[1], Rejected) and items[1].location == "record 1"


def test_truncated_json_document_keeps_what_was_read(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    text = json.dumps(
        {**HEADER, "records": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}]}
    )
    path.write_text(text[: text.index('"b"') + 8])
    items = read_all(path)
    assert [i.id for i in items if isinstance(i, Record)] == ["a"]
    assert any(isinstance(i, Rejected) and "truncated" in i.reason for i in items)


def test_truncated_last_line_is_reported(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "f.jsonl", {"id": "a", "content": "x"})
    with open(path, "a") as f:
        f.write('{"id": "b", "content": "cut off')
    items = read_all(path)
    assert isinstance(items[-1], Rejected) and items[-1].reason.startswith("truncated JSON")


def test_invalid_utf8_in_a_record_is_reported(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "f.jsonl", {"id": "a", "content": "x"})
    with open(path, "ab") as f:
        f.write(b'{"id": "b", "content": "\xff\xfe"}\n')
        f.write(b'{"id": "c", "content": "after"}\n')
    items = read_all(path)
    assert [getattr(i, "id", None) for i in items if isinstance(i, Record)] == ["a", "c"]
    assert [(i.location, i.reason) for i in items if isinstance(i, Rejected)] == [
        ("line 3", "is not valid UTF-8")
    ]


def test_a_50_mb_record_is_rejected_without_reading_it_whole(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "f.jsonl", {"id": "a", "content": "before"})
    with open(path, "a") as f:
        f.write('{"id": "huge", "content": "')
        chunk = "x" * (1 << 20)
        for _ in range(50):
            f.write(chunk)
        f.write('"}\n')
        f.write(json.dumps({"id": "b", "content": "after"}) + "\n")
    items = read_all(path, max_content_bytes=1 << 20)
    assert [i.id for i in items if isinstance(i, Record)] == ["a", "b"]
    (rejected,) = [i for i in items if isinstance(i, Rejected)]
    assert rejected.location == "line 3" and "limit" in rejected.reason


def test_content_over_the_limit_is_rejected_with_its_size(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "f.jsonl", {"id": "a", "content": "x" * 2000}, {"id": "b", "content": "ok"}
    )
    items = read_all(path, max_content_bytes=1000)
    assert (
        isinstance(items[0], Rejected)
        and "2000 bytes is over the 1000-byte limit" in items[0].reason
    )
    assert isinstance(items[1], Record)


def test_gzipped_input_is_read(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb") as gz:
        gz.write(
            (
                json.dumps(HEADER) + "\n" + json.dumps({"id": "a", "content": "zipped"}) + "\n"
            ).encode()
        )
    path = tmp_path / "f.jsonl.gz"
    path.write_bytes(raw.getvalue())
    assert [r.content for r in read_all(path)] == ["zipped"]  # type: ignore[union-attr]


def test_seen_ids_is_exact_across_many_runs() -> None:
    seen = SeenIds()
    assert all(seen.add(f"id-{i}") for i in range(200_000))
    assert not seen.add("id-0") and not seen.add("id-199999") and not seen.add("id-70000")
    assert seen.add("id-200000")
