"""The three things a write does, shared by the planner, the outbox and every provider."""

from __future__ import annotations

from enum import StrEnum


class WriteKind(StrEnum):
    """What one write does: the plan's ``Action``, the outbox row and the provider's ``WriteOp``
    share this type (a StrEnum: it equals and stores as the plain string)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
