"""The PMM tools an agent gets beside mnem's own, with OpenMem's names and arguments:
``memory_export`` and ``memory_import`` on memsync's PMM codec and import (``portability``).

They run where the store is held (the daemon, or the client's own process) on a mnem provider
over that open Store, so an export reads what memsync would back up, and an import skips what
the store already holds exactly as ``memsync import`` does.
"""

from __future__ import annotations

import io
from typing import Any, Literal

import mnem

from memsync.base.errors import MemsyncError
from memsync.base.pmm import DEFAULT_MAX_CONTENT_BYTES, Header, write_pmm_stream
from memsync.orchestration.portability import import_file
from memsync.providers.mnem.provider import MnemProvider


def memory_export(
    store: Any,
    *,
    format: Literal["json", "jsonl"] = "jsonl",
    bank: str | None = None,
    user_id: str | None = None,
    name: str = "mnem",
    scope_key: str | None = None,
) -> str:
    """The store's memories as a PMM document (JSON or JSONL text); with ``bank`` or
    ``user_id``, only the memories whose scope key is that."""
    if format not in ("json", "jsonl"):
        raise MemsyncError(f"format must be json or jsonl, not {format!r}")
    provider = _provider(store, name, scope_key)
    wanted = [key for key in (bank, user_id) if key]
    listing = provider.listing()

    def records() -> Any:
        for page in listing.kept_pages(provider.exclusion):
            for record in page.records:
                if all(record.scope_key == key for key in wanted):
                    record.origin = provider.origin_of(record)
                    yield record

    scope: dict[str, Any] = provider.describe_scope()
    scope.update({k: v for k, v in (("bank", bank), ("user_id", user_id)) if v})
    out = io.StringIO()
    write_pmm_stream(out, Header(source_provider=provider.family, scope=scope), records(), format)
    return out.getvalue()


def memory_import(
    store: Any,
    *,
    data: str,
    merge_strategy: Literal["skip_duplicates", "overwrite"] = "skip_duplicates",
    name: str = "mnem",
    scope_key: str | None = None,
) -> dict[str, Any]:
    """A PMM document (JSON or JSONL text) into the store, as ``memsync import`` does it:
    what was imported, updated, skipped (duplicate, empty) and rejected."""
    if merge_strategy not in ("skip_duplicates", "overwrite"):
        raise MemsyncError(
            f"merge_strategy must be skip_duplicates or overwrite, not {merge_strategy!r}"
        )
    provider = _provider(store, name, scope_key)
    report = import_file(
        io.BytesIO(data.encode("utf-8")),
        provider,
        strategy=merge_strategy,
        max_content_bytes=DEFAULT_MAX_CONTENT_BYTES,
    )
    return report.as_dict()


def _provider(store: Any, name: str, scope_key: str | None) -> MnemProvider:
    return MnemProvider.attached(store, name=name, sdk=mnem, scope_key=scope_key)


__all__ = ["memory_export", "memory_import"]
