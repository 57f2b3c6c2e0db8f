"""The status page's access token (a private file in the state dir) and its CSRF token.

The access token is what the printed URL carries, Jupyter-style; the page trades it for a
cookie. Every change is a POST that must also carry the CSRF token, which only a page served
to someone holding the access token ever sees. A second token, made the same way, opens
/metrics and nothing else, so a Prometheus config never holds the key to the page.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from memsync.base.errors import MemsyncError
from memsync.base.paths import Paths, make_private_dir

TOKEN_FILE = "ui-token"
METRICS_TOKEN_FILE = "metrics-token"  # opens /metrics only: what a Prometheus config holds


def token_path(paths: Paths, name: str = TOKEN_FILE) -> Path:
    return paths.state_dir / name


def load_or_create_token(paths: Paths, name: str = TOKEN_FILE) -> str:
    """The access token, made once (random, 0600) and kept so bookmarks survive restarts."""
    path = token_path(paths, name)
    try:
        make_private_dir(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
            token = path.read_text(encoding="utf-8").strip()
            if len(token) >= 32:
                return token
            # An empty or truncated file (a crash while writing it): make a new token.
            path.unlink()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        token = secrets.token_urlsafe(32)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        return token
    except OSError as exc:
        raise MemsyncError(
            f"cannot keep the status page's token in {path} ({exc.strerror or exc}); "
            "check that the state directory is yours and writable"
        ) from None


def csrf_token(access_token: str) -> str:
    """Derived from the access token: stable across restarts, useless without the page."""
    return hmac.new(access_token.encode(), b"memsync-ui-csrf", hashlib.sha256).hexdigest()


def same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
