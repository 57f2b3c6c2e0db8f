"""What the conflict and memory pages show, built on the command line's own queries.

Conflicts come from ``list_conflicts`` (what `memsync conflicts` prints) and a memory's
timeline from ``memory_history`` (what `memsync history` prints); this module only adds what a
page needs on top: a word diff of the two sides, and who wrote each version.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from memsync.engine.conflicts import list_conflicts
from memsync.engine.journal import memory_history
from memsync.staging import StagingStore

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def word_diff(old: str, new: str) -> list[list[str]]:
    """[op, text] segments turning OLD into NEW: op is '=' (both), '-' (old only), '+' (new)."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    segments: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            segments.append(["=", "".join(a[i1:i2])])
            continue
        if i2 > i1:
            segments.append(["-", "".join(a[i1:i2])])
        if j2 > j1:
            segments.append(["+", "".join(b[j1:j2])])
    return segments


def conflict_views(store: StagingStore) -> list[dict[str, Any]]:
    """Each waiting conflict with both versions, their metadata differences and a text diff."""
    views = []
    for conflict in list_conflicts(store):
        sides = list(conflict["versions"])
        if conflict.get("rolled_back") in sides:  # the store that went back in time first
            sides.remove(conflict["rolled_back"])
            sides.insert(0, conflict["rolled_back"])
        view = {**conflict, "sides": sides, "diff": None, "metadata_diff": []}
        if len(sides) >= 2:
            first, second = (conflict["versions"][s] for s in sides[:2])
            view["diff"] = word_diff(first.get("content") or "", second.get("content") or "")
            meta_a, meta_b = first.get("metadata") or {}, second.get("metadata") or {}
            view["metadata_diff"] = sorted(
                k for k in set(meta_a) | set(meta_b) if meta_a.get(k) != meta_b.get(k)
            )
        views.append(view)
    return views


def find_memories(store: StagingStore, query: str, limit: int = 50) -> list[dict[str, Any]]:
    """Memories whose id (memsync's or a provider's) is QUERY, or whose text contains it."""
    query = query.strip()
    if not query:
        return []
    found = []
    for link in store.journal.links_matching(query, limit):
        latest = store.journal.latest_text(link)
        found.append(
            {
                "link_id": link,
                "content": latest.content if latest else None,
                "at": latest.at if latest else None,
                "providers": store.records.providers_holding(link),
            }
        )
    return found


def memory_timeline(store: StagingStore, memory: str) -> list[dict[str, Any]]:
    """Every version of one memory on every provider (`memsync history`), with who wrote it."""
    entries = memory_history(store, memory)
    for index, entry in enumerate(entries):
        entry["who"] = _author(entry, entries[:index])
    return entries


def _author(entry: dict[str, Any], earlier: list[dict[str, Any]]) -> str:
    """memsync for its own writes (copying which provider's version), else the app that wrote."""
    if entry["kind"] == "written":
        source = next(
            (
                e["provider"]
                for e in reversed(earlier)
                if e["kind"] != "written"
                and e["provider"] != entry["provider"]
                and e["fingerprint"] == entry["fingerprint"]
            ),
            None,
        )
        return f"memsync, copying {source}'s version" if source else "memsync"
    if entry["kind"] == "removed":
        return f"removed in {entry['provider']}"
    provenance = entry.get("provenance") or {}
    for key in ("source", "actor_id", "agent_id", "user_id"):
        if provenance.get(key):
            return f"{provenance[key]} via {entry['provider']}"
    return f"an app writing to {entry['provider']}"
