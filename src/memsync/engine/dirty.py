"""The memories a cycle plans: the dirty set, read in chunks as the planner's ``LinkView``s.

Which memories are dirty is found in SQL (``staging/dirty.py``); here each chunk becomes one
view per memory — every provider's current version, base and the agreed version — plus the
extra records a provider holds of one memory (duplicates, deleted beside the one kept).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence

from memsync.base.write_kind import WriteKind
from memsync.engine.plan import Action, LinkView, Side, Version
from memsync.staging.store import StagingStore

PLAN_CHUNK = 500


def dirty_chunks(store: StagingStore, size: int = PLAN_CHUNK) -> Iterator[list[str]]:
    """The dirty set (marked by ``store.dirty.mark``), ``size`` memories at a time, in order."""
    last = ""
    while True:
        chunk = store.dirty.after(last, size)
        if not chunk:
            return
        last = chunk[-1]
        yield chunk


def link_views(
    store: StagingStore,
    providers: Sequence[str],
    chunk: Sequence[str],
    complete: Mapping[str, bool],
) -> tuple[list[LinkView], list[Action]]:
    """The planner's view of each memory in ``chunk``, and the duplicates to delete."""
    current: dict[str, dict[str, list[Version]]] = defaultdict(lambda: defaultdict(list))
    for row in store.links.current_versions(chunk):
        current[row.link_id][row.provider].append(
            Version(row.provider_id, row.fingerprint, row.updated_at)
        )
    bases: dict[str, dict[str, tuple[str, str | None]]] = defaultdict(dict)
    for base in store.links.bases(chunk):
        bases[base.link_id][base.provider] = (base.fingerprint, base.provider_id)
    agreed = {row.link_id: row for row in store.links.agreed(chunk)}
    forced = store.conflicts.chosen_winners(chunk)
    rolled_back = store.rollbacks.flagged(chunk)
    views: list[LinkView] = []
    extras: list[Action] = []
    for link_id in chunk:
        sides: dict[str, Side] = {}
        for provider in providers:
            versions = current[link_id].get(provider, [])
            base_fp, base_id = bases[link_id].get(provider, (None, None))
            chosen = _pick(versions, base_id)
            for extra in versions:
                if chosen is not None and extra.provider_id != chosen.provider_id:
                    extras.append(
                        Action(WriteKind.DELETE, link_id, provider, provider_id=extra.provider_id)
                    )
            sides[provider] = Side(
                chosen,
                base_fp,
                complete.get(provider, True),
                rolled_back=(link_id, provider) in rolled_back,
            )
        state = agreed.get(link_id)
        views.append(
            LinkView(
                link_id,
                sides,
                state.fingerprint if state else None,
                state.deleted if state else False,
                state.version_at if state else None,
                forced_winner=forced.get(link_id),
            )
        )
    return views, extras


def _pick(versions: list[Version], base_id: str | None) -> Version | None:
    """The record that stands for a memory in a provider: the one reconciled before, if any."""
    if not versions:
        return None
    for version in versions:
        if version.provider_id == base_id:
            return version
    return versions[0]
