"""A provider that generates N memories on the fly (nothing held in memory), for benchmarks."""

from __future__ import annotations

from collections.abc import Iterator

from memsync.base.records import Record
from memsync.providers.base import Listing, Page, SimpleListing
from memsync.providers.memory import MemoryProvider


class SyntheticProvider(MemoryProvider):
    """N generated memories; ``edited`` ids get a different text (a changed memory)."""

    def __init__(self, name: str, n: int, page_size: int = 1000) -> None:
        super().__init__(name, family="mem0", page_size=page_size)
        self.n = n
        self.edited: set[int] = set()

    def identity(self) -> str:
        return f"synthetic:{self.name}"

    def _record(self, i: int) -> Record:
        edited = i in self.edited
        return Record(
            id=f"{i:09d}",
            content=f"memory {i}: prefers tea, team {i % 97}" + (" (edited)" if edited else ""),
            metadata={"topic": "drinks", "n": i},
            scope_key="alice",
            created_at="2026-01-01T00:00:00+00:00",
            updated_at="2026-01-02T00:00:00+00:00" if edited else "2026-01-01T00:00:00+00:00",
            version=f"v{i}{'e' if edited else ''}",
        )

    def listing(self, cursor: str | None = None) -> Listing:
        return SimpleListing(self._generated())

    def _generated(self) -> Iterator[Page]:
        for start in range(0, self.n, self.page_size):
            end = min(start + self.page_size, self.n)
            yield Page([self._record(i) for i in range(start, end)])
