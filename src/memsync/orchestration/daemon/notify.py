"""sd_notify(3) by hand: readiness, status, watchdog and stop messages to systemd.

The protocol is one datagram of ``KEY=value`` lines to the AF_UNIX socket named by
``NOTIFY_SOCKET`` (a leading ``@`` names an abstract socket). Without the variable every call
is a no-op, so the daemon runs the same under systemd, under another supervisor, or by hand.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping

log = logging.getLogger(__name__)


def _socket_address(value: str | None) -> str | None:
    if not value or value.startswith("vsock:"):  # VSOCK (systemd 253+) is for VMs; not ours
        return None
    if value.startswith("@"):
        return "\0" + value[1:]
    return value if value.startswith("/") else None


def _watchdog_interval(env: Mapping[str, str]) -> float | None:
    """Seconds between pings (half the timeout systemd set), or None when no watchdog is on."""
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    pid = env.get("WATCHDOG_PID")
    if usec <= 0 or (pid and pid != str(os.getpid())):
        return None
    return usec / 2 / 1_000_000


class Notifier:
    """Sends sd_notify messages when systemd asked for them; never raises."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.address = _socket_address(env.get("NOTIFY_SOCKET"))
        self.watchdog_interval = _watchdog_interval(env)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *assignments: str) -> bool:
        if self.address is None:
            return False
        payload = "\n".join(a.replace("\n", " ") for a in assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(payload, self.address)
        except OSError as exc:
            log.debug("sd_notify to %s failed: %s", self.address.lstrip("\0"), exc)
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={text}")

    def reloading(self) -> bool:
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.send("RELOADING=1", f"MONOTONIC_USEC={usec}")

    def stopping(self, status: str | None = None) -> bool:
        return self.send("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")
