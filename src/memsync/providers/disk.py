"""What a provider's local store files take on disk (``disk_use`` beside a type's ``build``,
found by the registry): status, the page, ``/metrics`` and ``check`` show it and how fast it
grows (``orchestration/disk``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DiskUse:
    """Bytes on disk of a provider's stores now, how many stores that is, and what would make
    it grow slower (said when it grows past its budget)."""

    bytes: int
    stores: int
    advice: str = ""


__all__ = ["DiskUse"]
