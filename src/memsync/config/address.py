"""Where the status page listens: HOST:PORT, loopback unless remote access is asked for."""

from __future__ import annotations

import ipaddress

DEFAULT_LISTEN = "127.0.0.1:8767"
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


def parse_listen(value: str) -> tuple[str, int]:
    """'127.0.0.1:8767', 'localhost:8767' or '[::1]:8767' as (host, port); ValueError if not."""
    text = value.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ValueError(f"expected HOST:PORT such as {DEFAULT_LISTEN!r}, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"write an IPv6 address in brackets, such as '[::1]:8767', not {value!r}")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range (0-65535)")
    return host, port


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, *, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless the config says remote access is intended."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(
            f"{host!r} is not a loopback address; the status page listens on 127.0.0.1 or ::1 "
            "only, unless [ui] allow_remote = true (it still needs the access token)"
        )


def url_for(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
