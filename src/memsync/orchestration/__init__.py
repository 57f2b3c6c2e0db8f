"""The orchestration layer: runs over scopes, the daemon and its live side, serving, status.

It drives the engine (``memsync.engine``) one scope at a time, and is driven by the command
line (``memsync.cli``) and by the agents' clients (``memsync.langgraph``).
"""
