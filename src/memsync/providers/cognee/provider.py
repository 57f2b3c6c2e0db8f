"""``cognee``: one Cognee dataset over Cognee's HTTP API (cognee 1.6.5).

A record is one data item of the dataset (see ``convert``); a listing reads the dataset page by
page (see ``listing``).

Writes upload the text as a ``text_<md5>.txt`` file rather than as ``raw_data``: Cognee reads
a raw string that looks like a URL, an ``s3://`` or ``file://`` address or an existing local
path as something to fetch, so a memory such as "https://example.com" would make the server
fetch the page. The file name is the one Cognee gives raw text itself.

Cognee deduplicates identical text within a dataset: adding it again answers the existing
item (with the metadata it already had), and memsync maps that item to the memory instead of
failing. Cognee has no update that keeps metadata (``PATCH /api/v1/update`` takes no
``external_metadata`` and re-runs cognify), so an update adds the new version and deletes
the old one: **the memory's id changes on update**, and the new record says so.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from memsync.base.errors import AuthError, InvalidResponse, NotFound, ProviderError
from memsync.base.records import Outgoing, Record, Skipped
from memsync.base.secrets import Secret, resolve_secret
from memsync.config import CogneeConfig, Config
from memsync.providers.base import (
    Capabilities,
    Listing,
    Provider,
    WriteOp,
    WriteResult,
    require_content,
    stored_text,
)
from memsync.providers.cognee.convert import (
    external_metadata_for,
    record_from_item,
    text_file_name,
)
from memsync.providers.cognee.listing import CogneeListing
from memsync.providers.concurrent import lane_of
from memsync.providers.http.auth import AuthScheme
from memsync.providers.http.provider import DEFAULT_CONCURRENCY, HttpProvider
from memsync.providers.http.retry import RetryPolicy
from memsync.providers.http.shapes import expect_list, expect_object

log = logging.getLogger("memsync.cognee")

API = "/api/v1"
PAGE_SIZE = 500  # the data route takes 1..1000
TEXT_TYPES = ("text/", "application/json")


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class CogneeProvider(HttpProvider):
    type = "cognee"
    family = "cognee"
    capabilities = Capabilities(
        incremental=False,
        client_ids=False,
        batch_writes=False,
        timestamps=True,
        multi_scope=False,
        metadata_values="json",
        text_on_write="lf",  # uploads are read as text files: CRLF and CR come back as LF
    )

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        dataset: str,
        secret: Secret | None = None,
        auth: AuthScheme = "api-key",
        timeout: float = 30.0,
        allow_insecure_http: bool = False,
        page_size: int = PAGE_SIZE,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        super().__init__(
            name,
            base_url,
            secret=secret,
            auth=auth,
            timeout=timeout,
            allow_insecure_http=allow_insecure_http,
            transport=transport,
            retry=retry,
            sleep=sleep,
            concurrency=concurrency,
        )
        self.dataset = dataset
        self.auth: AuthScheme = auth if secret else "none"
        self.page_size = page_size
        self._dataset_id: str | None = None

    # lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        super().close()
        self._dataset_id = None

    # identity ---------------------------------------------------------------------------

    def identity(self) -> str:
        return f"cognee:{self.base_url}#{self.dataset}"

    def scope_key(self) -> str:
        return self.dataset

    def describe_scope(self) -> dict[str, Any]:
        return {"scope_key": self.dataset, "dataset": self.dataset}

    # the dataset ------------------------------------------------------------------------

    def dataset_id(self) -> str | None:
        """The dataset's id, found by name; None while no dataset of that name exists."""
        if self._dataset_id is not None:
            return self._dataset_id
        rows = expect_list(self.name, self.http.get(f"{API}/datasets"), "GET /datasets")
        matches = []
        for row in rows:
            dataset = expect_object(self.name, row, "GET /datasets: dataset")
            if dataset.get("name") == self.dataset:
                matches.append(str(dataset.get("id") or ""))
        if len(matches) > 1:
            raise ProviderError(
                f"{self.name}: {len(matches)} datasets named {self.dataset!r} are visible to "
                "this key (shared datasets); use a key that sees only the one to sync"
            )
        if matches and not _is_uuid(matches[0]):
            raise InvalidResponse(f"{self.name}: GET /datasets answered a dataset without an id")
        self._dataset_id = matches[0] if matches else None
        return self._dataset_id

    def gone(self) -> bool:
        """After a 401/403 on a dataset route: True when the dataset no longer exists.

        Cognee answers a dataset id it does not hold with 401/403, not 404, so a refusal is
        only an auth problem if the dataset can still be found by name.
        """
        self._dataset_id = None
        return self.dataset_id() is None

    def _data_path(self, dataset_id: str, data_id: str | None = None) -> str:
        path = f"{API}/datasets/{dataset_id}/data"
        return f"{path}/{data_id}" if data_id else path

    def count(self, dataset_id: str) -> int:
        body = expect_object(
            self.name, self.http.get(f"{self._data_path(dataset_id)}/count"), "data/count"
        )
        count = body.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidResponse(f"{self.name}: data/count answered without a valid 'count'")
        return count

    def items(self, dataset_id: str, offset: int) -> list[dict[str, Any]]:
        rows = expect_list(
            self.name,
            self.http.get(
                self._data_path(dataset_id), params={"limit": self.page_size, "offset": offset}
            ),
            "GET data",
        )
        items = [expect_object(self.name, row, "GET data: item") for row in rows]
        for item in items:
            if not isinstance(item.get("id"), str) or not item["id"]:
                raise InvalidResponse(f"{self.name}: GET data answered an item without an id")
        return items

    def text_of(self, dataset_id: str, item: dict[str, Any]) -> str | Skipped:
        """An item's text from its raw file, or Skipped when it is not a text memory."""
        mime = str(item.get("mimeType") or "")
        if mime and not mime.startswith(TEXT_TYPES):
            return Skipped(item["id"], f"not a text memory ({mime}); memsync carries text only")
        response = self.http.request("GET", f"{self._data_path(dataset_id, item['id'])}/raw")
        try:
            return response.content.decode("utf-8")
        except UnicodeDecodeError:
            return Skipped(item["id"], "raw data is not UTF-8 text")

    # reads ------------------------------------------------------------------------------

    def listing(self, cursor: str | None = None) -> Listing:
        return CogneeListing(self)

    def find(self, data_id: str) -> dict[str, Any] | None:
        """One item's row: Cognee has no single-item read, so page until it is found."""
        dataset_id = self.dataset_id()
        if dataset_id is None or not _is_uuid(data_id):
            return None
        offset = 0
        while True:
            try:
                items = self.items(dataset_id, offset)
            except AuthError:
                if self.gone():
                    return None
                raise
            for item in items:
                if item["id"] == data_id:
                    return item
            if len(items) < self.page_size:
                return None
            offset += len(items)

    def get(self, provider_id: str) -> Record | None:
        item = self.find(provider_id)
        dataset_id = self._dataset_id
        if item is None or dataset_id is None:
            return None
        try:
            text = self.text_of(dataset_id, item)
        except NotFound:
            return None
        if isinstance(text, Skipped):
            return None
        record = record_from_item(item, text, self.dataset)
        return record if isinstance(record, Record) else None

    # writes -----------------------------------------------------------------------------

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        data_id, fresh = self._add(item)
        if fresh:
            return self._as_written(data_id, item)
        # Identical text was already in the dataset: Cognee answered that item, unchanged.
        held = self.get(data_id)
        if held is None:
            raise InvalidResponse(
                f"{self.name}: Cognee answered item {data_id} for {item.origin} but does not "
                "list it"
            )
        log.info(
            "%s: %s has the same text as item %s; mapped to it", self.name, item.origin, data_id
        )
        return held

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self.update_op(WriteOp("update", provider_id, item=item, provider_id=provider_id))

    def update_op(self, op: WriteOp) -> Record:
        """Add the new version, then delete the old one: the id changes (see module doc).

        What the old version held comes from the staging store (``op.previous``) when the
        engine has it: finding one item otherwise means paging the whole dataset.
        """
        assert op.item is not None and op.provider_id is not None
        item, provider_id = op.item, op.provider_id
        require_content(self.name, item)
        old = op.previous if op.previous is not None else self.get(provider_id)
        if old is None:
            raise NotFound(f"{self.name}: no memory {provider_id!r} to update")
        if old.content_hash == item.content_hash:
            # Same text: an add would answer the old item with its old metadata, so the old
            # item has to go first for the new metadata to be stored at all.
            self.delete(provider_id)
            return self.create(item)
        created = self.create(item)
        if created.id != provider_id:
            self.delete(provider_id)
        return created

    def delete(self, provider_id: str) -> None:
        dataset_id = self.dataset_id()
        if dataset_id is None or not _is_uuid(provider_id):
            return
        try:
            self.http.request("DELETE", self._data_path(dataset_id, provider_id))
        except NotFound:
            return  # already gone: deleting twice is harmless
        except AuthError:
            if not self.gone():
                raise

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        """Concurrent writes, except that while the dataset does not exist yet, the first
        create goes alone: Cognee makes a dataset per add that names it, so concurrent first
        adds would make several datasets of the same name."""
        try:
            exists = self.dataset_id() is not None
        except Exception as exc:
            for op in ops:
                yield WriteResult(op, error=exc)
            return
        first = next((op for op in ops if op.kind == "create"), None)
        if (
            not exists
            and first is not None
            and lane_of(first) not in {lane_of(op) for op in ops[: ops.index(first)]}
        ):
            yield from Provider.write_many(self, [first])
            ops = [op for op in ops if op is not first]
        yield from super().write_many(ops)

    def _add(self, item: Outgoing) -> tuple[str, bool]:
        """Upload one memory; its data id, and whether the item is new (not a dedup hit)."""
        try:
            return self._upload(item)
        except AuthError:
            if self._dataset_id is None or not self.gone():
                raise
            return self._upload(item)  # the dataset was deleted meanwhile: create it anew

    def _upload(self, item: Outgoing) -> tuple[str, bool]:
        payload = item.content.encode("utf-8")
        form: dict[str, Any] = {
            "external_metadata": json.dumps(
                [external_metadata_for(item)], ensure_ascii=False, default=str
            ),
        }
        dataset_id = self.dataset_id()
        if dataset_id:
            form["datasetId"] = dataset_id
        else:
            form["datasetName"] = self.dataset
        # Cognee dedups by content within the dataset, so a resend after a lost answer finds
        # the item it already wrote: safe to retry.
        body = self.http.json(
            "POST",
            f"{API}/add",
            data=form,
            files=[("data", (text_file_name(item.content), payload, "text/plain"))],
            idempotent=True,
        )
        answer = expect_object(self.name, body, "POST /add")
        if answer.get("dataset_id"):
            self._dataset_id = str(answer["dataset_id"])
        infos = answer.get("data_ingestion_info")
        if not isinstance(infos, list) or len(infos) != 1 or not isinstance(infos[0], dict):
            raise InvalidResponse(
                f"{self.name}: POST /add answered without one data_ingestion_info entry "
                f"(status {answer.get('status')!r})"
            )
        info = infos[0]
        data_id = info.get("data_id")
        if not isinstance(data_id, str) or not _is_uuid(data_id):
            raise InvalidResponse(f"{self.name}: POST /add answered without a data id")
        run = info.get("run_info")
        run = run if isinstance(run, dict) else {}
        status = run.get("status")
        if status == "PipelineRunErrored":
            raise ProviderError(
                f"{self.name}: Cognee could not add memory {item.origin}: "
                f"{run.get('error_message') or run.get('payload') or 'pipeline errored'}"
            )
        return data_id, status != "PipelineRunAlreadyCompleted"

    def _as_written(self, data_id: str, item: Outgoing) -> Record:
        """The record just written, without paging the dataset to find its row again (its text
        as Cognee holds it: line endings as LF)."""
        return Record(
            id=data_id,
            content=stored_text(self.capabilities, item.content),
            metadata=dict(item.metadata),
            scope_key=self.dataset,
            created_at=item.created_at,
            provenance=dict(item.provenance),
            origin=item.origin,
            expiration_date=item.expiration_date,
        )


def build(name: str, entry: CogneeConfig, config: Config) -> CogneeProvider:
    return CogneeProvider(
        name,
        entry.base_url,
        dataset=entry.dataset,
        secret=resolve_secret(name, entry.api_key_env, entry.api_key_file),
        auth=entry.auth,
        timeout=entry.timeout,
        allow_insecure_http=entry.allow_insecure_http,
        concurrency=entry.concurrency,
    )
