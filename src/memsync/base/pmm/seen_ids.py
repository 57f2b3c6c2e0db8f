"""Which record ids a file already had, in 8 bytes an id: duplicates refused at any size."""

from __future__ import annotations

import bisect
import hashlib
import heapq
from array import array


class SeenIds:
    """Membership of record ids in 8 bytes an id (64-bit digests in sorted runs).

    A plain set of strings would cost ~100 bytes an id and break the constant-memory promise
    at a million records. A false duplicate needs a 64-bit collision (about 1 in 3.6e7 at a
    million ids); it is reported as a rejection, never a silent drop.
    """

    _BUFFER = 65536

    def __init__(self) -> None:
        self._recent: dict[int, None] = {}
        self._runs: list[array[int]] = []

    @staticmethod
    def _digest(value: str) -> int:
        return int.from_bytes(hashlib.blake2b(value.encode(), digest_size=8).digest(), "big")

    def add(self, value: str) -> bool:
        """Remember value; False if it was seen before."""
        key = self._digest(value)
        if key in self._recent or any(self._contains(run, key) for run in self._runs):
            return False
        self._recent[key] = None
        if len(self._recent) >= self._BUFFER:
            self._flush()
        return True

    @staticmethod
    def _contains(run: array[int], key: int) -> bool:
        index = bisect.bisect_left(run, key)
        return index < len(run) and run[index] == key

    def _flush(self) -> None:
        run = array("Q", sorted(self._recent))
        self._recent = {}
        self._runs.append(run)
        # Merge runs of similar size so lookups stay logarithmic in count of runs.
        while len(self._runs) > 1 and len(self._runs[-2]) <= len(self._runs[-1]) * 2:
            last = self._runs.pop()
            before = self._runs.pop()
            # A lazy merge: no list of a million ints in between, only the two arrays.
            self._runs.append(array("Q", heapq.merge(before, last)))
