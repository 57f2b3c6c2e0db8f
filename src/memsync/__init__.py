"""memsync: keep AI-agent memory stores (Mem0, mnem, Hindsight, Cognee, PMM files) in sync."""

__version__ = "0.1.0"

from memsync.migrate import import_mem0

__all__ = ["__version__", "import_mem0"]
