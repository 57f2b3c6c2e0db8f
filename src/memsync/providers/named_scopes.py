"""Scopes a team names itself: a file, or a command that prints them, one scope a line.

Where a Mem0 server's own routes cannot show every user (``GET /entities`` scans 10,000
memories, the admin listing 1,000) and no database connection is given, the team says who it
is. Each line is one scope of the wildcard: ``alice`` for ``user_id = "*"``, or
``user_id=alice agent_id=bot`` for two wildcards (``key=value`` also works for one). Blank
lines and lines starting with ``#`` are skipped. A line memsync cannot read is an error naming
its number, never a user quietly left out.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memsync.base.errors import ConfigError, ProviderError
from memsync.base.scopes import Scope

COMMAND_TIMEOUT = 120.0  # seconds a scopes_command may take


@dataclass(frozen=True)
class NamedScopes:
    """Where the team's scopes come from: a file, or a command (argv)."""

    provider: str
    file: Path | None = None
    command: tuple[str, ...] | None = None

    def describe(self) -> str:
        if self.file is not None:
            return f"scopes_file {self.file}"
        return f"scopes_command {' '.join(self.command or ())}"

    def read(self, keys: tuple[str, ...], fixed: Mapping[str, str]) -> set[Scope]:
        """The scopes listed, as values of the wildcard KEYS."""
        return parse_scopes(
            self._text(), keys, where=f"providers.{self.provider}: " + self.describe()
        )

    def _text(self) -> str:
        if self.file is not None:
            try:
                return self.file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"providers.{self.provider}: cannot read scopes_file {self.file} "
                    f"({exc.strerror})"
                ) from None
            except UnicodeDecodeError:
                raise ConfigError(
                    f"providers.{self.provider}: scopes_file {self.file} is not UTF-8 text"
                ) from None
        return _run(self.provider, self.command or ())


def _run(provider: str, command: Sequence[str]) -> str:
    where = f"{provider}: scopes_command {' '.join(command)}"
    try:
        done = subprocess.run(
            list(command),
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise ConfigError(f"providers.{where}: {command[0]} not found") from None
    except PermissionError:
        raise ConfigError(f"providers.{where}: {command[0]} is not executable") from None
    except subprocess.TimeoutExpired:
        raise ProviderError(f"{where}: still running after {COMMAND_TIMEOUT:g}s") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = f": {said[-1]}" if said else ""
        raise ProviderError(f"{where}: exited {done.returncode}{reason}")
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise ProviderError(f"{where}: printed text that is not UTF-8") from None


def parse_scopes(text: str, keys: tuple[str, ...], *, where: str) -> set[Scope]:
    """One scope a line (see the module's docstring); ConfigError naming a bad line."""
    scopes: set[Scope] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line and len(keys) == 1:
            scopes.add(Scope.of({keys[0]: line}))
            continue
        values: dict[str, str] = {}
        for part in line.split():
            key, sep, value = part.partition("=")
            if not sep or key not in keys or not value or key in values:
                break
            values[key] = value
        else:
            if set(values) == set(keys):
                scopes.add(Scope.of(values))
                continue
        example = " ".join(f"{k}=..." for k in keys)
        raise ConfigError(
            f"{where}, line {number}: expected {example}"
            + (" (or the value alone)" if len(keys) == 1 else "")
            + f", got {line[:60]!r}"
        )
    return scopes
