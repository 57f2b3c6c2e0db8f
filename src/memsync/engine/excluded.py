"""The mirror's side of a provider's ``exclude`` (``memsync.base.exclude``): one listing at a time.

- A listing's excluded records are taken out of its pages before anything is staged, and
  remembered in staging with the memory key they would be linked as. The dirty set drops every
  memory with such a key, so nothing is ever written into an excluded record: not a copy
  memsync made before the rule, not a copy a lost staging database no longer knows about.
- A record staged before the rule covered it is *frozen*: it stays staged as it was last
  synced, its copies elsewhere stay as they are, and memsync plans nothing for it again. A
  listing no longer returns it, and that is not a removal (``not_excluded``): an exclude is a
  filter on what memsync reads, never news that something was deleted. Taking the rule back
  thaws it, links intact, so nothing is duplicated either.
- When the rule changes, the staged records it covers are found once, and the provider's
  next listing is a full one (an incremental listing skipped what the rule hid meanwhile).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace

from memsync.base.exclude import CONTENT_KIND_KEY
from memsync.base.records import utc_now_iso
from memsync.providers.base import Listing, Page, Provider
from memsync.staging.records import StagedRef
from memsync.staging.store import StagingStore

log = logging.getLogger(__name__)


class MirrorExclusion:
    """What one mirror run excludes of its provider, and what staging keeps of it."""

    def __init__(self, store: StagingStore, provider: Provider) -> None:
        self.store = store
        self.provider = provider
        self.rule = provider.exclusion
        self.ids = self._settle_rule()  # every excluded record staging knows, by provider id
        self.listed: list[tuple[str, str]] = []  # (provider id, memory key) this listing hid
        self.thawed: list[str] = []  # known ids this listing returned no longer excluded

    def _settle_rule(self) -> set[str]:
        name, key = self.provider.name, self.rule.key
        stored = self.store.excluded.rule(name)
        if stored == key:
            return self.store.excluded.ids(name) if key else set()
        with self.store.transaction():
            staged = self.store.excluded.staged_kinds(name, f"$.{CONTENT_KIND_KEY}")
            covered = [row for row in staged if self.rule.covers(row.provider_id, row.content_kind)]
            self.store.excluded.replace_rule(name, key, covered, utc_now_iso())
            self.store.providers.forget_full_scan(name)
            copies = self.store.excluded.copies(name)
        if covered:
            held = ", ".join(f"{other}: {count}" for other, count in sorted(copies.items()))
            log.warning(
                "%s: exclude (%s) now covers %d record(s) memsync synced before; they stay as "
                "they are in %s, and so do their copies (%s): memsync neither updates nor "
                "deletes them any more; delete the copies there if you do not want them",
                name,
                self.rule.describe(),
                len(covered),
                name,
                held or "none",
            )
        elif stored and not key:
            log.info("%s: exclude removed; its records are synced again from the next cycle", name)
        return {row.provider_id for row in covered}

    def pages(self, listing: Listing) -> Iterator[Page]:
        """The listing's pages without the records the rule covers."""
        if not self.rule:
            yield from listing.pages()
            return
        for page in listing.pages():
            kept, excluded = self.rule.split(page.records)
            for record in excluded:
                self.listed.append((record.id, self.provider.origin_of(record)))
                self.ids.add(record.id)
            for record in kept:
                if record.id in self.ids:  # its content kind changed back: synced again
                    self.thawed.append(record.id)
                    self.ids.discard(record.id)
            yield replace(page, records=kept)

    def not_excluded(self, staged: Sequence[StagedRef]) -> list[StagedRef]:
        """Staged records a listing did not return, less the excluded ones: those are not gone."""
        if not self.ids:
            return list(staged)
        return [row for row in staged if row.provider_id not in self.ids]

    def settle(self, listing: Listing) -> int:
        """Keep what this listing found (in the caller's transaction); how many records of the
        provider are excluded now."""
        if not self.rule:
            return 0
        name = self.provider.name
        known = self.store.excluded
        if self.listed:
            known.add(name, self.listed, utc_now_iso())
        if self.thawed:
            known.drop(name, self.thawed)
        if listing.mode == "full" and listing.complete:
            known.prune(name, [provider_id for provider_id, _ in self.listed])
            self.ids = known.ids(name)
        return len(self.ids)

    def copies(self) -> dict[str, int]:
        """Copies of the excluded records that other providers hold (made before the rule)."""
        return self.store.excluded.copies(self.provider.name) if self.ids else {}
