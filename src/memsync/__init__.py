"""memsync: keep AI-agent memory stores (Mem0, mnem, Hindsight, Cognee, PMM files) in sync."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "import_mem0"]

if TYPE_CHECKING:
    from memsync.orchestration.migrate import import_mem0


def __getattr__(name: str) -> Any:
    """``memsync.import_mem0`` on first use: importing the package (every command, even
    ``memsync --version``) must not import the providers, the staging store and the CLI's
    libraries that a migration needs."""
    if name == "import_mem0":
        from memsync.orchestration.migrate import import_mem0

        return import_mem0
    raise AttributeError(f"module 'memsync' has no attribute {name!r}")
