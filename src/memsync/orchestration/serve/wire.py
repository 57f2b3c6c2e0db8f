"""The daemon's local socket for the agents it serves, and the JSON lines spoken on it.

One request a line, one answer a line: ``{"op": NAME, "args": {...}}`` is answered by
``{"ok": VALUE}`` or ``{"error": {"type": NAME, "message": TEXT, "args": [...]}}``. An SDK error
comes back as the same mnem exception, with the same text, so a client raises what mnem's own
client would. The socket is ``serve.sock`` in memsync's runtime directory (0700, the socket
itself 0600), and the daemon also checks that each peer runs as its own user.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mnem

from memsync.base.paths import Paths

SOCKET_NAME = "serve.sock"
MAX_LINE = 256 << 20  # a PMM import's data travels in one line
_SUN_PATH = 100  # AF_UNIX paths are limited to 107 bytes; longer ones go through /proc
BACKLOG_PATIENCE = 30.0  # how long a connect retries a full backlog (EAGAIN) before giving up
_FIRST_PAUSE, _LAST_PAUSE = 0.005, 0.25  # its pauses, doubling
_BUILTIN = ("KeyError", "TypeError", "ValueError", "IndexError", "AttributeError")


class ServeError(Exception):
    """An error the daemon answered that is neither mnem's nor one of Python's own."""

    def __init__(self, message: str, kind: str = "ServeError") -> None:
        super().__init__(message)
        self.kind = kind


def socket_path(paths: Paths) -> Path:
    return paths.runtime_dir / SOCKET_NAME


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """An address for PATH that fits AF_UNIX: the path itself, or, when it is too long (a deep
    MEMSYNC_HOME), the same file reached through an open descriptor of its directory."""
    if len(os.fsencode(str(path))) <= _SUN_PATH:
        yield str(path)
        return
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def connect(
    path: Path, timeout: float | None, *, patience: float = BACKLOG_PATIENCE
) -> socket.socket:
    """A connection to the daemon's socket; OSError when nobody listens there.

    A full listen backlog (a burst of agents starting together) answers EAGAIN at once: the
    daemon is there, just busy accepting, so the connect is tried again, backing off, for up
    to PATIENCE seconds. Only a refusal (no one listens: a socket a dead daemon left) or a
    missing socket means no daemon."""
    deadline = time.monotonic() + patience
    pause = _FIRST_PAUSE
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            with address(path) as where:
                sock.connect(where)
            return sock
        except BlockingIOError:  # EAGAIN: the backlog is full
            sock.close()
            if time.monotonic() + pause > deadline:
                raise
        except OSError:
            sock.close()
            raise
        time.sleep(pause)
        pause = min(pause * 2, _LAST_PAUSE)


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line (TypeError for a value JSON cannot carry, as mnem's own)."""
    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message


def error_of(exc: BaseException) -> dict[str, Any]:
    """An exception as the wire carries it: its class name, text and (JSON-able) arguments."""
    try:
        arguments = json.loads(json.dumps(list(exc.args)))
    except (TypeError, ValueError):
        arguments = [str(exc)]
    return {"type": type(exc).__name__, "message": str(exc), "args": arguments}


def exception_from(error: dict[str, Any]) -> Exception:
    """The exception the daemon answered, as this process can raise it."""
    kind = str(error.get("type", "ServeError"))
    message = str(error.get("message", ""))
    mnem_class = getattr(mnem, kind, None)
    if isinstance(mnem_class, type) and issubclass(mnem_class, mnem.MnemError):
        return mnem_class(message)
    if kind in _BUILTIN:
        builtin: type[Exception] = getattr(builtins, kind)
        arguments = error.get("args")
        return builtin(*arguments) if isinstance(arguments, list) else builtin(message)
    return ServeError(message, kind)
