"""Memory a long-running process gives back to the system after a burst of work.

glibc's malloc keeps what is freed for reuse: what SQLite's page cache of a finished cycle,
a status look over thousands of scopes or a backup's export freed stays in the process's
resident memory, and each thread that allocated much keeps an arena of its own (up to eight
per core), so the daemon grew by each such burst in each of its threads. Measured at 5,000
users (issue 40): 57 MB of a 282 MB daemon was freed memory glibc still held.

``limit_arenas`` (before the daemon starts its threads) makes them share a few arenas, and
``give_back`` (after each job and each look at staging) returns what is free at once
(``malloc_trim``; well under a millisecond). Elsewhere than glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger("memsync.memory")

M_ARENA_MAX = -8  # mallopt's parameter (malloc.h)
ARENAS = 2  # the daemon's threads share this many (the GIL lets one run Python at a time)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None  # not glibc
    return libc


def limit_arenas(arenas: int = ARENAS) -> None:
    """Let every thread started from now on share ARENAS malloc arenas."""
    libc = _libc()
    if libc is not None and not libc.mallopt(M_ARENA_MAX, arenas):
        log.debug("mallopt(M_ARENA_MAX, %d) was refused", arenas)


def give_back() -> None:
    """Return the memory malloc holds free to the system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


__all__ = ["give_back", "limit_arenas"]
