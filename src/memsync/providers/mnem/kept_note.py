"""An agent's rewrite of a synced memory, served by memsync, keeps memsync's note in the
agent's own commit.

An agent that writes a node through mnem's API replaces the whole node, memsync's note with
it (metadata, ``created_at``, the origin: ``convert``'s "Agent rewrites"). memsync then keeps
those from the version it staged and writes the note back in a commit of its own: two commits
for one edit, and on mnem 0.0.7 every commit stores the store's whole state again. When the
agent writes through memsync's own clients, the write is taken there instead: the node the
agent replaces still carries the note, so the node written is the one memsync's write-back
would have written (the agent's text, value keys and mnem provenance; the rest from the note,
exactly as the mirror carries a rewrite over, ``engine/mirror``'s ``_carry_over``), in the
agent's commit, with the agent's author and message. memsync's next listing reads a noted node:
the edit travels on, and nothing is written back.

Nothing changes for a node without memsync's note (an agent's own memory), nor for a write
that carries a memsync note itself (a LangGraph read-modify-write that kept ``_meta``).
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from memsync.base.records import Outgoing, Record
from memsync.providers.mnem.convert import NodeSpec, memsync_note, node_spec, record_from_node
from memsync.providers.mnem.provider import MnemProvider

PROVENANCE_FIELDS = ("agent_step", "observation", "tool_call", "source", "note")
NATIVE = MnemProvider.native_provenance  # what an agent's rewrite owns: never from the note


def keeping_note(
    old: Any, node_id: str, content: Any, provenance: dict[str, str | None], content_kind: str
) -> NodeSpec | None:
    """The node an agent's write (CONTENT, PROVENANCE: mnem's five fields) over OLD (the node
    there now, or None) becomes with memsync's note kept; None when there is none to keep."""
    if old is None or memsync_note(old) is None:
        return None
    written = SimpleNamespace(
        id=node_id,
        content=content,
        content_kind=content_kind,
        provenance=SimpleNamespace(**{name: provenance.get(name) for name in PROVENANCE_FIELDS}),
        event_time=None,
    )
    if memsync_note(written) is not None:
        return None  # the agent kept the note itself (a read-modify-write)
    staged = record_from_node(old, "")
    rewrite = record_from_node(written, "")
    if not isinstance(staged, Record) or not isinstance(rewrite, Record):
        return None  # an empty text: written as the agent gave it
    kept = {k: v for k, v in staged.provenance.items() if k not in NATIVE}
    origin = staged.origin or f"mnem:{node_id}"
    carried = replace(
        rewrite,
        metadata={**staged.metadata, **rewrite.metadata},
        created_at=staged.created_at,
        expiration_date=staged.expiration_date,
        origin=origin,
        provenance={**kept, **rewrite.provenance},
        detached=False,
    )
    return node_spec(Outgoing.from_record(carried, origin), node_id)


__all__ = ["keeping_note"]
