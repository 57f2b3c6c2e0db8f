"""Dream's marks on a memory: which memories the Mem0 Platform retired, read in one place.

Dream (``docs/platform/features/dream.mdx`` at mem0 8d5b786) keeps a user's memory clean
without deleting anything: a **merged** duplicate is hidden from default reads, a
**superseded** fact stays in them, and **synthesized** pattern memories appear beside the
rest. A memory says which through three fields: ``lifecycle_state``, ``replaced_by`` (the
memory that replaced it) and ``synthesized``.

memsync keeps the three verbatim in a record's ``provenance``, which every store type already
carries whole (mnem's note, Mem0's ``memsync_provenance``, Hindsight's and Cognee's metadata,
PMM's ``metadata["memsync"]["provenance"]``), so they travel everywhere and come back as
they left. They are part of the fingerprint (see ``hashed``), so Dream retiring a memory is a
change that reaches every store, and the mirror never takes a retired memory for a deleted one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

STATE_KEY: Final = "lifecycle_state"
REPLACED_BY_KEY: Final = "replaced_by"
SYNTHESIZED_KEY: Final = "synthesized"
FIELDS: Final = (STATE_KEY, REPLACED_BY_KEY, SYNTHESIZED_KEY)

ACTIVE: Final = "active"
SUPERSEDED: Final = "superseded"
MERGED: Final = "merged"
RETIRED_STATES: Final = frozenset({SUPERSEDED, MERGED})


@dataclass(frozen=True)
class Dream:
    """What Dream says of one memory (all None: Dream never touched it, or the store has none)."""

    lifecycle_state: str | None = None
    replaced_by: str | None = None
    synthesized: bool | None = None

    @classmethod
    def of(cls, provenance: Mapping[str, Any] | None) -> Dream:
        """The Dream fields a record's provenance carries (values of the wrong type: absent)."""
        if not provenance:
            return _NONE
        state = provenance.get(STATE_KEY)
        replaced = provenance.get(REPLACED_BY_KEY)
        synthesized = provenance.get(SYNTHESIZED_KEY)
        if state is None and replaced is None and synthesized is None:
            return _NONE
        return cls(
            state if isinstance(state, str) and state else None,
            replaced if isinstance(replaced, str) and replaced else None,
            synthesized if isinstance(synthesized, bool) else None,
        )

    @property
    def retired(self) -> bool:
        """Superseded or merged: no longer the current truth, yet never deleted.

        A listing that leaves out ``lifecycle_state`` (the v3 list schema names only
        ``replaced_by``) still marks a replaced memory as retired. Other states (none is
        documented) leave the memory current.
        """
        if self.lifecycle_state is not None:
            return self.lifecycle_state in RETIRED_STATES
        return self.replaced_by is not None

    @property
    def state(self) -> str:
        """The state as status and docs name it: active, superseded, merged, or Dream's own."""
        if self.lifecycle_state is not None:
            return self.lifecycle_state
        return "replaced" if self.replaced_by is not None else ACTIVE

    def hashed(self) -> dict[str, Any]:
        """Dream's share of the fingerprint: only what differs from an untouched memory.

        Normalised like text is, inside the hash only: ``active``, no ``replaced_by`` and
        ``synthesized: false`` say nothing, so a store that spells them out (the Platform) and
        one that omits them (every other) hash alike, and fingerprints from before Dream
        travelled stay as they were.
        """
        part: dict[str, Any] = {}
        if self.lifecycle_state is not None and self.lifecycle_state != ACTIVE:
            part["s"] = self.lifecycle_state
        if self.replaced_by is not None:
            part["r"] = self.replaced_by
        if self.synthesized:
            part["y"] = True
        return part


_NONE = Dream()


def says_nothing(key: str, value: Any) -> bool:
    """Whether a store's own value for a Dream field is what every untouched memory holds.

    A Platform that answers ``lifecycle_state: "active"`` for a memory memsync copied there
    has no Dream history of its own for it: the state memsync carried with the copy (in
    ``memsync_provenance``) stands. A value that does say something (Dream retired the copy
    there) wins over the carried one.
    """
    if key == STATE_KEY:
        return value is None or value == ACTIVE
    if key == REPLACED_BY_KEY:
        return value is None or value == ""
    if key == SYNTHESIZED_KEY:
        return value is None or value is False
    return False
