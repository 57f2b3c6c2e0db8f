"""Daemon logs: one line an event on stderr, journald priorities under systemd, no secrets.

Under systemd (stderr connected to the journal) each line starts with an sd-daemon(3)
priority prefix such as ``<6>`` and carries no timestamp, since journald adds its own;
elsewhere a line reads ``2026-11-30T09:00:00Z INFO message``. Every line passes a filter that
replaces the API keys the config names (and anything that looks like a key assignment) with
``***``, so a provider echoing a request in an error cannot leak a key into the journal.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping
from typing import IO

from memsync.base.errors import MemsyncError
from memsync.base.secrets import REDACTED, resolve_secret
from memsync.config import Config

_PRIORITIES = {
    logging.DEBUG: 7,
    logging.INFO: 6,
    logging.WARNING: 4,
    logging.ERROR: 3,
    logging.CRITICAL: 2,
}
_KEY_ASSIGNMENT = re.compile(
    r"(?i)\b(api[_-]?key|x-api-key|token|authorization|password|secret)"
    r"(\s*[:=]\s*)([\"']?)((?:bearer\s+)?)([^\s\"',;]{4,})"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{6,})")
# Libraries that would log a line per job run or file event; their warnings still show.
_CHATTY = ("apscheduler", "watchfiles", "httpx", "httpcore")


def journal_attached(stream: IO[str], env: Mapping[str, str] | None = None) -> bool:
    """Whether stream is systemd's journal: JOURNAL_STREAM names its device and inode."""
    env = os.environ if env is None else env
    journal = env.get("JOURNAL_STREAM", "")
    if journal:
        try:
            device, inode = (int(part) for part in journal.split(":", 1))
            stat = os.fstat(stream.fileno())
        except (ValueError, OSError, AttributeError):
            return False
        return (stat.st_dev, stat.st_ino) == (device, inode)
    # systemd older than 231 sets no JOURNAL_STREAM; INVOCATION_ID says a unit started us.
    try:
        is_tty = stream.isatty()
    except (ValueError, AttributeError):
        is_tty = False
    return bool(env.get("INVOCATION_ID")) and not is_tty


class Redactor(logging.Filter):
    """Replaces known secret values and key-looking assignments in every record."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: tuple[str, ...] = ()

    def update(self, secrets: Iterable[str]) -> None:
        # Longest first, so a key that contains another is replaced whole.
        self._secrets = tuple(sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        text = _KEY_ASSIGNMENT.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{m[4]}{REDACTED}", text)
        return _BEARER.sub(lambda m: f"{m[1]}{REDACTED}", text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = f"{message} ({type(exc).__name__}: {exc})"
            record.exc_info = None
            record.exc_text = None
        record.msg = self.scrub(message)
        record.args = None
        return True


class OneLineFormatter(logging.Formatter):
    """A record as exactly one line, with a journald priority prefix or a UTC timestamp."""

    def __init__(self, journal: bool) -> None:
        super().__init__()
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().replace("\r", " ").replace("\n", " | ")
        if self.journal:
            priority = _PRIORITIES.get(record.levelno, 6)
            return f"<{priority}>{message}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))
        return f"{stamp} {record.levelname} {message}"


def secrets_in(config: Config) -> list[str]:
    """The API key values a config points at (from the environment or files) that exist now."""
    values: list[str] = []
    for name, entry in config.providers.items():
        env_name = getattr(entry, "api_key_env", None)
        file_path = getattr(entry, "api_key_file", None)
        if not env_name and not file_path:
            continue
        try:
            secret = resolve_secret(name, env_name, file_path)
        except MemsyncError:
            continue
        if secret is not None:
            values.append(secret.reveal())
    return values


def setup_daemon_logging(level: int, stream: IO[str] | None = None) -> Redactor:
    """Route every log record through one redacting one-line handler on stderr."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(OneLineFormatter(journal_attached(stream)))
    redactor = Redactor()
    handler.addFilter(redactor)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    return redactor
