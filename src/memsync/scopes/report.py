"""What a cycle over wildcard scopes reports: each scope's outcome beside the providers'."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memsync.scopes.model import Scope
from memsync.sync.report import CycleReport, ProviderState


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

    @property
    def exit_code(self) -> int:
        code = super().exit_code
        if code == 0 and any(s.state == ProviderState.ERROR for s in self.scopes.values()):
            return 1
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
            if not found.get("error"):
                note = f" (partial: {found['note']})" if found.get("note") else ""
                lines.append(f"{name}: discovered {found['scopes']} scope(s){note}")
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
        data["discovery"] = self.discovery
        return data
