"""API keys and database URLs, read from the environment or a file and never printed.

A Secret hides its value from repr/str so it cannot leak into logs, status, exceptions or
tracebacks by accident; code that needs the value calls ``reveal()`` at the point of use.
"""

from __future__ import annotations

import os
from pathlib import Path

from memsync.base.errors import ConfigError

REDACTED = "***"


class Secret:
    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str) -> None:
        self._value = value
        self.source = source  # "$NAME" or a path: safe to show, tells the user where to look

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self.source})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self.source)


def resolve_secret(
    provider: str, env_name: str | None, file_path: Path | None, *, key: str = "api_key"
) -> Secret | None:
    """The secret configured for a provider (its API key, or KEY: ``database_url``), or None
    when it has none."""
    if env_name:
        value = os.environ.get(env_name, "")
        if not value.strip():
            raise ConfigError(
                f"providers.{provider}: environment variable {env_name} is not set; "
                f"export {env_name}=... before starting memsync, or use {key}_file"
            )
        return Secret(value.strip(), f"${env_name}")
    if file_path:
        try:
            value = Path(file_path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(
                f"providers.{provider}: cannot read {key}_file {file_path} ({exc.strerror})"
            ) from None
        if not value:
            raise ConfigError(f"providers.{provider}: {key}_file {file_path} is empty")
        return Secret(value, str(file_path))
    return None


def redact(text: str, *secrets: Secret | None) -> str:
    """Replace every revealed secret in text; used on anything that may echo a request."""
    for secret in secrets:
        if secret is not None and secret.reveal():
            text = text.replace(secret.reveal(), REDACTED)
    return text
