"""How a provider (or a scope) fared in a cycle: the states a report and its failures share."""

from __future__ import annotations

from enum import StrEnum


class ProviderState(StrEnum):
    """How a provider (or a scope) fared in a cycle."""

    OK = "ok"
    PARTIAL = "partial"  # its listing was incomplete: no deletes inferred
    BUSY = "busy"  # another process held its store
    REFUSED = "refused"  # the delete gate refused what its listing implied
    ERROR = "error"
    SKIPPED = "skipped"  # not part of this cycle (--provider, or stopping)


USABLE = frozenset({ProviderState.OK, ProviderState.PARTIAL})  # planned and written this cycle
