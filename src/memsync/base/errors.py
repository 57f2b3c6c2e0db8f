"""Typed errors: everything a user can cause is a MemsyncError with a message that says what to do.

The CLI prints ``str(error)`` on one line and exits non-zero; anything that is not a
MemsyncError is a bug and keeps its traceback.
"""

from __future__ import annotations


class MemsyncError(Exception):
    """Base for errors a user can cause or fix; the message is shown as it is."""

    exit_code = 1


class ConfigError(MemsyncError):
    """The configuration file is missing, malformed or invalid."""

    exit_code = 2


class PMMError(MemsyncError):
    """A PMM file cannot be read (header invalid, not PMM at all)."""

    exit_code = 3


class RecordError(MemsyncError):
    """One PMM record is invalid; carries where it was found so the rest can go on."""

    def __init__(self, message: str, *, location: str, field: str | None = None) -> None:
        self.location = location
        self.field = field
        where = f"{location}" + (f", field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")
        self.reason = message


class StagingError(MemsyncError):
    """The staging database cannot be used (corrupt, newer schema, unwritable)."""

    exit_code = 4


class ProviderError(MemsyncError):
    """A provider failed in a way that retrying will not fix (bad request, not found)."""

    exit_code = 5
    status: int | None = None  # the HTTP status the provider answered, when it answered one


class ProviderUnavailable(ProviderError):
    """A provider type is configured but cannot be used here (missing extra, not built)."""


class TransientProviderError(ProviderError):
    """A provider failed in a way that may pass: 5xx, 429, timeout, reset. Retry later."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderBusy(TransientProviderError):
    """The provider's store is held by another process (a local qdrant path, a mnem store)."""


class ProviderUnreachable(TransientProviderError):
    """Several requests in a row could not reach the provider (refused, reset, timed out):
    it is down for now, so this cycle writes nothing more to it and keeps its writes pending."""


class AuthError(ProviderError):
    """The provider refused the credentials; the message names the variable, never the key."""


class InvalidResponse(TransientProviderError):
    """The provider answered something that is not what its API documents."""


class NotFound(ProviderError):
    """The record asked for does not exist in the provider."""


class RefusedError(MemsyncError):
    """A safety gate refused an operation (mass delete, emptied provider)."""

    exit_code = 6


class LockHeld(MemsyncError):
    """Another memsync process holds the lock."""

    exit_code = 7
