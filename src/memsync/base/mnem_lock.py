"""How mnem says a store is held: its one handle is alive elsewhere, in this process or another.

redb refuses a second open with "Database already open. Cannot acquire lock." as a
``StoreIoError``; every other ``StoreIoError`` is the store itself failing. Opening a store,
an agent's client and the check for a half-made store all tell the two apart here.
"""

from __future__ import annotations

_HELD = ("Database already open", "Cannot acquire lock")


def held_elsewhere(error: BaseException, store_io_error: type[BaseException]) -> bool:
    """Whether ERROR (raised by mnem's ``open``) says another handle holds the store;
    STORE_IO_ERROR is the SDK's ``StoreIoError``."""
    return isinstance(error, store_io_error) and any(text in str(error) for text in _HELD)
