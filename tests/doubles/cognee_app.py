"""A double of Cognee's HTTP API (cognee 1.6.5, ``cognee/api/v1/...`` routers).

It follows the routes memsync uses as a server with ``ENABLE_BACKEND_ACCESS_CONTROL=false``
runs them:

- ``GET /api/v1/datasets``: ``[{id, name, createdAt, updatedAt, ownerId}]`` (camelCase DTOs).
- ``GET /api/v1/datasets/{id}/data?limit&offset``: ``limit`` 1..1000 (422 outside), ordered by
  ``created_at``; items carry no text (``DataDTO``: id, name, createdAt, updatedAt, extension,
  mimeType, rawDataLocation, datasetId, label, externalMetadata, dataSize); 403 for a dataset
  id it does not hold (as a real server answered). ``.../data/count`` -> ``{"count": n}``;
  ``.../data/{data_id}/raw`` -> the bytes (404 for an unknown item). Uploads get
  ``_cognee.source_uri`` in their external metadata, as real ingestion records it.
- ``POST /api/v1/add`` (multipart): ``data`` uploads, then ``raw_data`` strings, paired in that
  order with the ``external_metadata`` JSON array; ``datasetName`` (created if missing) or
  ``datasetId``. Ingestion dedups by the md5 of the content within the dataset: identical
  content answers the existing item as ``PipelineRunAlreadyCompleted`` and leaves its
  metadata as it was. The answer is a ``PipelineRunInfo`` (snake_case) whose
  ``data_ingestion_info`` holds ``{run_info, data_id}`` per item.
- ``DELETE /api/v1/datasets/{ds}/data/{data_id}``: 200 with ``null``, also for an id the dataset
  does not hold (Cognee treats it as a custom-graph deletion); 401 for an unknown dataset.

Auth: with ``api_key`` set, ``X-Api-Key`` or ``Authorization: Bearer`` must carry it (401).
Tests add ``Faults``, ``on_data_page`` (runs after a data page is computed) and
``count_offset`` (a count route that disagrees with the data route).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.doubles import ASGIApp, ASGIBridge, Faults

API = "/api/v1"
OWNER = "00000000-0000-4000-8000-00000000d00d"


@dataclass
class Data:
    id: str
    name: str
    content: bytes
    created_at: datetime
    updated_at: datetime
    external_metadata: dict[str, Any]
    extension: str = "txt"
    mime_type: str = "text/plain"
    label: str | None = None

    def as_dto(self, dataset_id: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "createdAt": _iso(self.created_at),
            "updatedAt": _iso(self.updated_at),
            "extension": self.extension,
            "mimeType": self.mime_type,
            "rawDataLocation": f"file:///data/{self.name}.{self.extension}",
            "datasetId": dataset_id,
            "label": self.label,
            "externalMetadata": self.external_metadata,
            "dataSize": len(self.content),
        }


@dataclass
class Dataset:
    id: str
    name: str
    created_at: datetime
    updated_at: datetime
    data: dict[str, Data] = field(default_factory=dict)

    def as_dto(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "createdAt": _iso(self.created_at),
            "updatedAt": _iso(self.updated_at),
            "ownerId": OWNER,
        }

    def ordered(self) -> list[Data]:
        return sorted(self.data.values(), key=lambda d: (d.created_at, d.id))


class CogneeDouble:
    """State and options of one double; ``app`` is the ASGI app, ``transport()`` a client's."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.datasets: dict[str, Dataset] = {}
        self.faults = Faults()
        self.on_data_page: Callable[[str, int], None] | None = None
        self.count_offset = 0
        self._tick = 0
        data = f"{API}/datasets/{{dataset_id}}/data"
        routes = [
            Route(f"{API}/datasets", self.list_datasets, methods=["GET"]),
            Route(f"{API}/add", self.add, methods=["POST"]),
            Route(data, self.list_data, methods=["GET"]),
            Route(f"{data}/count", self.count_data, methods=["GET"]),
            Route(f"{data}/{{data_id}}/raw", self.raw_data, methods=["GET"]),
            Route(f"{data}/{{data_id}}", self.delete_data, methods=["DELETE"]),
        ]
        self.app: ASGIApp = self.faults.wrap(Starlette(routes=routes))

    def transport(self) -> ASGIBridge:
        return ASGIBridge(self.app)

    # behind the API's back -------------------------------------------------------------

    def now(self) -> datetime:
        self._tick += 1
        return datetime(2025, 1, 1, tzinfo=UTC) + timedelta(milliseconds=self._tick)

    def dataset(self, name: str) -> Dataset:
        for dataset in self.datasets.values():
            if dataset.name == name:
                return dataset
        now = self.now()
        dataset = Dataset(str(uuid.uuid4()), name, now, now)
        self.datasets[dataset.id] = dataset
        return dataset

    def store(
        self,
        dataset_name: str,
        content: bytes,
        metadata: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        mime_type: str = "text/plain",
    ) -> tuple[str, bool]:
        """Ingest one item as Cognee does: (data id, whether it was new)."""
        dataset = self.dataset(dataset_name)
        digest = hashlib.md5(content).hexdigest()
        for existing in dataset.data.values():
            if hashlib.md5(existing.content).hexdigest() == digest:
                return existing.id, False
        now = self.now()
        item = Data(
            str(uuid.uuid4()),
            name or f"text_{digest}",
            content,
            now,
            now,
            dict(metadata or {}),
            mime_type=mime_type,
            extension="txt" if mime_type == "text/plain" else "bin",
        )
        dataset.data[item.id] = item
        dataset.updated_at = now
        return item.id, True

    def items(self, dataset_name: str) -> list[Data]:
        return self.dataset(dataset_name).ordered()

    # helpers ----------------------------------------------------------------------------

    def _unauthorized(self, request: Request) -> Response | None:
        if self.api_key is None:
            return None
        header = request.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else None
        if self.api_key in (request.headers.get("x-api-key"), token):
            return None
        return JSONResponse({"detail": "Unauthorized"}, status_code=401)

    def _known(self, request: Request) -> Dataset | Response:
        dataset = self.datasets.get(request.path_params["dataset_id"])
        if dataset is None:
            # What a real server answered for a dataset id it does not hold (not a 404).
            message = (
                "Request owner does not have necessary permission: [read] for all datasets "
                "requested. [PermissionDeniedError]"
            )
            return JSONResponse({"detail": message}, status_code=403)
        return dataset

    # routes -----------------------------------------------------------------------------

    async def list_datasets(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        return JSONResponse([d.as_dto() for d in self.datasets.values()])

    async def list_data(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        dataset = self._known(request)
        if isinstance(dataset, Response):
            return dataset
        try:
            limit = int(request.query_params.get("limit", "100"))
            offset = int(request.query_params.get("offset", "0"))
        except ValueError:
            return _query_error("limit", "Input should be a valid integer")
        if not 1 <= limit <= 1000:
            return _query_error("limit", "Input should be between 1 and 1000")
        if not 0 <= offset <= 1_000_000:
            return _query_error("offset", "Input should be between 0 and 1000000")
        rows = [d.as_dto(dataset.id) for d in dataset.ordered()[offset : offset + limit]]
        if self.on_data_page:
            self.on_data_page(dataset.name, offset)
        return JSONResponse(rows)

    async def count_data(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        dataset = self._known(request)
        if isinstance(dataset, Response):
            return dataset
        return JSONResponse({"count": len(dataset.data) + self.count_offset})

    async def raw_data(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        dataset = self._known(request)
        if isinstance(dataset, Response):
            return dataset
        item = dataset.data.get(request.path_params["data_id"])
        if item is None:
            message = (
                f"Data ({request.path_params['data_id']}) not found in dataset ({dataset.id})."
            )
            return JSONResponse({"detail": f"{message} [DataNotFoundError]"}, status_code=404)
        media = "text/plain; charset=utf-8" if item.mime_type == "text/plain" else item.mime_type
        return Response(item.content, media_type=media)

    async def delete_data(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        dataset = self.datasets.get(request.path_params["dataset_id"])
        if dataset is None:
            message = f"Dataset {request.path_params['dataset_id']} not accessible."
            return JSONResponse(
                {"detail": f"{message} [UnauthorizedDataAccessError]"}, status_code=401
            )
        dataset.data.pop(request.path_params["data_id"], None)
        return JSONResponse(None)

    async def add(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        form = _multipart(request.headers.get("content-type", ""), await request.body())
        if isinstance(form, Response):
            return form
        uploads = [v for k, v in form if k == "data" and isinstance(v, Upload)]
        raw = [v.strip() for k, v in form if k == "raw_data" and isinstance(v, str) and v.strip()]
        fields = {k: v for k, v in form if isinstance(v, str)}
        name = fields.get("datasetName")
        dataset_id = fields.get("datasetId")
        if not name and not dataset_id:
            return _error(400, "Either datasetId or datasetName must be provided.")
        if dataset_id:
            if dataset_id not in self.datasets:
                return _error(403, "No dataset found with the given id and write permission.")
            name = self.datasets[str(dataset_id)].name
        # Cognee reads an upload as a text file (universal newlines): CRLF and CR become LF.
        contents: list[tuple[bytes, str | None]] = [
            (
                upload.content.replace(b"\r\n", b"\n").replace(b"\r", b"\n"),
                upload.filename.rsplit(".", 1)[0] or None,
            )
            for upload in uploads
        ]
        contents.extend((text.encode("utf-8"), None) for text in raw)
        if not contents:
            return _error(400, "Provide at least one file in 'data' or one entry in 'raw_data'.")
        metadata = _external_metadata(fields.get("external_metadata"), len(contents))
        if isinstance(metadata, Response):
            return metadata
        infos = []
        dataset = self.dataset(str(name))
        for (content, filename), entry in zip(contents, metadata, strict=True):
            if filename:  # an upload: ingestion records where it came from
                entry = {**(entry or {}), "_cognee": {"source_uri": f"file:///app/{filename}.txt"}}
            data_id, fresh = self.store(dataset.name, content, entry, name=filename or None)
            infos.append(
                {
                    "run_info": _run_info(
                        "PipelineRunCompleted" if fresh else "PipelineRunAlreadyCompleted",
                        dataset,
                    ),
                    "data_id": data_id,
                }
            )
        return JSONResponse(
            {**_run_info("PipelineRunCompleted", dataset), "data_ingestion_info": infos}
        )


@dataclass
class Upload:
    filename: str
    content: bytes


def _multipart(content_type: str, body: bytes) -> list[tuple[str, str | Upload]] | Response:
    """multipart/form-data parts as (name, text or upload), parsed with the standard library."""
    if not content_type.startswith("multipart/form-data"):
        return _error(422, "expected multipart/form-data")
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    parts: list[tuple[str, str | Upload]] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if filename is not None:
            parts.append((name, Upload(filename, payload)))
        else:
            parts.append((name, payload.decode("utf-8")))
    return parts


def _external_metadata(raw: Any, count: int) -> list[dict[str, Any] | None] | Response:
    if raw is None or raw == "":
        return [None] * count
    try:
        entries = json.loads(str(raw))
    except ValueError:
        return _error(400, "external_metadata is not valid JSON")
    if not isinstance(entries, list) or len(entries) != count:
        return _error(400, f"external_metadata must list one entry per data item ({count})")
    if not all(e is None or isinstance(e, dict) for e in entries):
        return _error(400, "each external_metadata entry must be an object or null")
    return entries


def _run_info(status: str, dataset: Dataset) -> dict[str, Any]:
    return {
        "status": status,
        "pipeline_run_id": str(uuid.uuid4()),
        "dataset_id": dataset.id,
        "dataset_name": dataset.name,
        "payload": None,
        "data_ingestion_info": None,
    }


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message, "detail": None}, status_code=status)


def _query_error(name: str, message: str) -> Response:
    return JSONResponse(
        {"detail": [{"type": "value_error", "loc": ["query", name], "msg": message}]},
        status_code=422,
    )


def _iso(value: datetime) -> str:
    return value.isoformat()
