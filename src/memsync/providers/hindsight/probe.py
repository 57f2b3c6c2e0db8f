"""One Hindsight bank, probed (``change_probe.py``): its newest document and its total.

Documents come newest ``updated_at`` first, so ``GET .../documents?limit=1`` names the newest:
a retain stamps its document, a delete changes the total. A provider over every bank has no
probe (its banks would each need asking): the full pass finds their changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memsync.base.errors import InvalidResponse
from memsync.providers.change_probe import WHOLE, ChangeProbe, Flags


class HindsightDocumentsProbe(ChangeProbe):
    """The bank's newest document and its total (``GET .../documents?limit=1``)."""

    def ask(self, known: Mapping[str, str]) -> Flags:
        provider: Any = self.provider
        path = f"{provider.bank_path(provider.bank)}/documents"
        body = provider.http.get(path, params={"limit": 1, "offset": 0})
        total = body.get("total") if isinstance(body, dict) else None
        if not isinstance(total, int) or isinstance(total, bool):
            raise InvalidResponse(f"{self.name}: GET {path} answered no total")
        items = body.get("items") or []
        newest = items[0] if items and isinstance(items[0], dict) else {}
        token = f"{total}/{newest.get('id', '')}/{newest.get('updated_at', '')}"
        changed = {WHOLE} if known.get(WHOLE) != token else set()
        return Flags(scopes=changed, tokens={WHOLE: token})


__all__ = ["HindsightDocumentsProbe"]
