"""What a cycle over wildcard scopes reports: each scope's outcome beside the providers'."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memsync.base.scopes import Scope
from memsync.engine.report import CycleReport, ProviderState

NOUNS = {"user_id": "users", "agent_id": "agents", "app_id": "apps", "run_id": "runs"}


def scope_noun(keys: tuple[str, ...]) -> str:
    """What a wildcard's scopes are called: "users" for ``user_id = "*"``, else "scopes"."""
    return NOUNS.get(keys[0], "scopes") if len(keys) == 1 else "scopes"


def discovery_line(name: str, found: Mapping[str, Any]) -> str | None:
    """One provider's discovery as a person reads it; None when it failed (its error is
    printed with the other failures). An incomplete one always says "more may exist"."""
    if found.get("error"):
        return None
    noun = found.get("noun") or "scopes"
    count = found.get("scopes", 0)
    how = f" through {found['source']}" if found.get("source") else ""
    if not found.get("complete", True):
        why = f" ({found['note']})" if found.get("note") else ""
        return f"{name}: {count} {noun} found, more may exist{why}"
    also = f"; {found['note']}" if found.get("note") else ""
    return f"{name}: discovered {count} {noun}{how}{also}"


def incomplete_discoveries(discovery: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Provider → what a person must read, for every discovery not shown complete (partial,
    or failed: a discovery that could not run saw nothing)."""
    lines: dict[str, str] = {}
    for name, found in discovery.items():
        if found.get("complete") is True:
            continue
        line = discovery_line(name, found)
        if line is None:
            noun = found.get("noun") or "scopes"
            line = f"{name}: {noun} not discovered, more may exist ({found.get('error')})"
        lines[name] = line
    return lines


@dataclass
class ScopeOutcome:
    """How one scope's cycle went, for `sync --json` and the log."""

    scope: Scope
    providers: list[str] = field(default_factory=list)
    state: ProviderState = ProviderState.OK
    discovered: bool = True  # False: known from an earlier cycle, no longer discovered
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope.as_dict(),
            "state": str(self.state),
            "discovered": self.discovered,
            "providers": self.providers,
            "error": self.error,
        }


@dataclass
class ScopedCycleReport(CycleReport):
    """A cycle report whose providers are scoped names, with each scope's outcome."""

    scopes: dict[str, ScopeOutcome] = field(default_factory=dict)
    discovery: dict[str, dict[str, Any]] = field(default_factory=dict)
    # False: a hinted cycle over scopes staging knew, which asked no source; its run says
    # nothing about discovery, so status keeps what the newest discovery found
    looked: bool = True

    @property
    def exit_code(self) -> int:
        code = super().exit_code
        if code == 0 and any(s.state == ProviderState.ERROR for s in self.scopes.values()):
            return 1
        if code == 0 and incomplete_discoveries(self.discovery):
            return 1  # some of the team was never looked at: not ok (docs/mem0-server.md)
        return code

    def quiet_names(self, *, shown: int = 20) -> set[str]:
        """Provider names a person need not read: those of ok scopes, when there are many."""
        if len(self.scopes) <= shown:
            return set()
        return {n for s in self.scopes.values() if s.state == ProviderState.OK for n in s.providers}

    def scope_lines(self) -> list[str]:
        """What a person reads about the scopes: discovery, each scope in trouble that no
        provider line explains (a scope that could not be bound), and a count. A provider's
        own failure is printed once with the others (``provider_failures``), never here."""
        lines = []
        for name, found in self.discovery.items():
            line = discovery_line(name, found)
            if line is not None:
                lines.append(line)
        for label, scope in self.scopes.items():
            if scope.state == ProviderState.ERROR and not scope.providers:
                error = scope.error or ""
                if error.startswith(f"scope {label}: "):
                    error = error[len(f"scope {label}: ") :]
                lines.append(f"scope {label}: {scope.state}: {error}".rstrip(": "))
            elif scope.state == ProviderState.REFUSED and not scope.discovered:
                lines.append(
                    f"scope {label}: no longer discovered; its emptied listing was not taken "
                    "for deletes (see REFUSED above)"
                )
        counts = Counter(s.state for s in self.scopes.values())
        lines.append(
            f"scopes: {len(self.scopes)} ("
            + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
            + ")"
        )
        return lines

    def as_dict(self) -> dict[str, Any]:
        data = super().as_dict()
        data["exit_code"] = self.exit_code
        data["scopes"] = {label: s.as_dict() for label, s in self.scopes.items()}
        if self.looked:
            data["discovery"] = self.discovery
        return data
