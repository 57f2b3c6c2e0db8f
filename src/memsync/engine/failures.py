"""What failed in a cycle, said once: one line per provider and reason, for the CLI and the log.

A provider's failure reaches a cycle report in several ways: as its outcome (listing,
discovery or opening failed: ``ProviderOutcome.error``, state error or busy), as failed writes
(``FailureEntry``, one per action), as a failure reported for the provider as a whole
(``CycleReport.report_failure``: a circuit breaker's "NAME unreachable (reason); K writes
kept for the next cycle"), and, in a wildcard cycle, again from each scope it is bound to
(``cloud[user_id=alice]``, ``cloud[user_id=bob]``). ``provider_failures`` folds them all: one
``ProviderFailure`` per configured provider and reason, naming the scopes it hit, with the
provider's name said once, in front. Writes fold to one line per provider.

This is the one path failures are printed through: ``memsync sync`` prints ``line()`` of each
on stdout with the rest of the report (nothing about them on stderr), the daemon logs the
same lines, ``sync --json`` carries them as ``provider_failures``, and ``exit_code`` says
5 for a provider that failed, as the README promises.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memsync.base.errors import ProviderError
from memsync.base.scopes import split_scoped_name
from memsync.engine.provider_state import ProviderState

if TYPE_CHECKING:
    from memsync.engine.report import CycleReport

SCOPES_NAMED = 3  # scopes named in a line; the rest are counted


@dataclass(frozen=True, slots=True)
class ProviderFailure:
    """One provider's failure in one cycle, as a person reads it."""

    provider: str  # the configured name (scopes folded in)
    reason: str  # what went wrong, without the provider's name in front
    scopes: tuple[str, ...] = ()  # scope labels it hit, when not the provider as a whole
    exit_code: int = ProviderError.exit_code
    busy: bool = False  # another process holds the store: normal for a while, said quietly

    def line(self) -> str:
        reason = self.reason
        if not reason.startswith(f"{self.provider} "):  # "NAME unreachable (...)" names it
            reason = f"{self.provider}: {reason}"
        if not self.scopes:
            return reason
        named = ", ".join(self.scopes[:SCOPES_NAMED])
        more = len(self.scopes) - SCOPES_NAMED
        where = f"{named} and {more} more" if more > 0 else named
        return f"{reason} ({'scope' if len(self.scopes) == 1 else 'scopes'} {where})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "reason": self.reason,
            "scopes": list(self.scopes),
            "exit_code": self.exit_code,
            "line": self.line(),
        }


def without_name(name: str, text: str) -> str:
    """``text`` without the provider's own name in front (scoped or configured, or both)."""
    split = split_scoped_name(name)
    names = [name, split[0]] if split else [name]
    stripped = True
    while stripped:
        stripped = False
        for prefix in names:
            if text.startswith(f"{prefix}: "):
                text, stripped = text[len(prefix) + 2 :], True
    return text


def provider_failures(report: CycleReport) -> list[ProviderFailure]:
    """Every failure of the cycle, one per configured provider and reason, in report order."""
    folded: dict[tuple[str, str], list[str]] = {}
    whole: set[tuple[str, str]] = set()
    codes: dict[tuple[str, str], int] = {}
    quiet: set[tuple[str, str]] = set()  # busy: another process holds the store

    def add(name: str, reason: str, code: int, *, is_busy: bool = False) -> None:
        split = split_scoped_name(name)
        base, scope = (split[0], split[1].label) if split else (name, None)
        key = (base, without_name(name, reason))
        folded.setdefault(key, [])
        codes[key] = max(codes.get(key, 0), code)
        if is_busy:
            quiet.add(key)
        if scope is None:
            whole.add(key)
        elif scope not in folded[key]:
            folded[key].append(scope)

    for name, outcome in report.providers.items():
        if outcome.state in (ProviderState.ERROR, ProviderState.BUSY) and outcome.error:
            busy = outcome.state == ProviderState.BUSY
            code = 1 if busy else outcome.exit_code or ProviderError.exit_code
            add(name, outcome.error, code, is_busy=busy)
    for failure in report.provider_notices:
        add(failure.provider, failure.reason, failure.exit_code)
    failures = [
        ProviderFailure(
            base,
            reason,
            () if (base, reason) in whole else tuple(scopes),
            codes[key],
            busy=key in quiet,
        )
        for key, scopes in folded.items()
        for base, reason in [key]
    ]
    return failures + _write_failures(report)


def _write_failures(report: CycleReport) -> list[ProviderFailure]:
    """Failed writes, one line per configured provider: how many, and why (the commonest)."""
    by_provider: dict[str, list[tuple[str, bool, str | None]]] = defaultdict(list)
    for failure in report.failures:
        split = split_scoped_name(failure.provider)
        base, scope = (split[0], split[1].label) if split else (failure.provider, None)
        by_provider[base].append(
            (without_name(failure.provider, failure.error), failure.dead, scope)
        )
    lines = []
    for base, failed in by_provider.items():
        reasons = Counter(reason for reason, _, _ in failed)
        reason, _ = reasons.most_common(1)[0]
        dead = sum(1 for _, is_dead, _ in failed if is_dead)
        count = f"{len(failed)} write{'s' if len(failed) != 1 else ''} failed"
        state = (
            "parked as dead"
            if dead == len(failed)
            else f"{dead} parked as dead, the rest retried next cycle"
            if dead
            else "retried next cycle"
        )
        others = len(reasons) - 1
        also = f"; {others} other reason(s): `memsync sync --json` lists each" if others else ""
        scopes = _unique(scope for _, _, scope in failed if scope)
        lines.append(ProviderFailure(base, f"{count} ({state}): {reason}{also}", scopes, 1))
    return lines


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))
