"""The config's other tables: [sync], [backup], [pmm], [ui], [verify], [metrics] and
[webhooks]."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from memsync.base.pmm import DEFAULT_MAX_CONTENT_BYTES
from memsync.config.address import check_exposure, is_loopback, parse_listen
from memsync.config.fields import Strict, parse_duration

DEFAULT_INTERVAL = 300.0  # the full pass: every 5 minutes...
PROBED_INTERVAL = 3600.0  # ...every hour beside a probe, which finds remote changes sooner...
COMPLETELY_PROBED_INTERVAL = 86400.0  # ...and daily when every probe sees every change


class SyncConfig(Strict):
    active: str
    conflict: Literal["error", "active", "newest", "keep-both"] = "newest"
    # "content": a record no link claims is paired with another provider's unlinked copy of
    # the same text in the same scope (see engine/adopt.py); "off": every such record is new.
    adopt: Literal["content", "off"] = "content"
    max_delete: float = 25.0
    max_delete_count: int = Field(default=100, ge=0)
    interval: float = DEFAULT_INTERVAL
    full_scan_interval: float = 3600.0
    max_attempts: int = Field(default=5, ge=1)
    # The daemon's hints (orchestration/live/triggers.py): local stores watched for changes,
    # remote ones asked every `probe` seconds which scopes changed; the interval cycle stays
    # the full pass.
    watch: bool = True
    probe: float | None = None

    _durations = field_validator("interval", "full_scan_interval", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )

    @field_validator("probe", mode="before")
    @classmethod
    def _probe_period(cls, value: Any) -> float | None:
        if value is None or (isinstance(value, str) and value.strip().lower() == "off"):
            return None
        seconds = parse_duration(value)
        if seconds < 1.0:
            raise ValueError(
                f"a probe more often than once a second is refused (got {value!r}); "
                'try probe = "5s", or "off"'
            )
        return seconds

    @field_validator("max_delete", mode="before")
    @classmethod
    def _percentage(cls, value: Any) -> float:
        text = str(value).strip()
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%?", text)
        if not match or isinstance(value, bool):
            raise ValueError(f'expected a percentage such as "25%", got {value!r}')
        number = float(match.group(1))
        if not 0 <= number <= 100:
            raise ValueError(f"expected a percentage between 0% and 100%, got {value!r}")
        return number


class BackupConfig(Strict):
    interval: float = 3600.0
    keep: int = Field(default=24, ge=1)
    gzip: bool = False

    _interval = field_validator("interval", mode="before")(
        classmethod(lambda cls, v: parse_duration(v))
    )


class PmmConfig(Strict):
    max_content_bytes: int = Field(default=DEFAULT_MAX_CONTENT_BYTES, gt=0)


class UiConfig(Strict):
    """The local status page; off unless ``listen`` is set (the daemon then serves it)."""

    listen: str | None = None
    allow_remote: bool = False

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None:
            parse_listen(value)  # raises ValueError with what to write instead
        return value

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> UiConfig:
        if self.listen is not None:
            check_exposure(parse_listen(self.listen)[0], allow_remote=self.allow_remote)
        return self


class VerifyConfig(Strict):
    """Scheduled verify: the daemon runs `verify` over every linked pair and scope this often;
    off unless ``interval`` is set."""

    interval: float | None = None

    @field_validator("interval", mode="before")
    @classmethod
    def _interval(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)


class MetricsConfig(Strict):
    """/metrics on the status page's server: labels per configured provider, per scope too
    only when asked (a team of thousands of scopes would be thousands of series each)."""

    per_scope: bool = False


class WebhooksConfig(Strict):
    """Where the daemon receives the changes a store pushes (the Mem0 Platform's webhooks): its
    own listener, off unless ``listen`` is set; ``public_url``: the HTTPS address the store
    calls (a reverse proxy or tunnel forwarding to ``listen``), for `memsync webhook register`."""

    listen: str | None = None
    public_url: str | None = None
    allow_remote: bool = False
    allow_insecure_http: bool = False

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None:
            parse_listen(value)
        return value

    @field_validator("public_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"expected an https:// URL, got {value!r}")
        return None if value is None else value.rstrip("/")

    @model_validator(mode="after")
    def _exposure(self) -> WebhooksConfig:
        if self.listen is not None:
            host = parse_listen(self.listen)[0]
            if not is_loopback(host) and not self.allow_remote:
                raise ValueError(
                    f"{host!r} is not a loopback address; the webhook listener listens on "
                    "127.0.0.1 or ::1 behind your proxy, unless [webhooks] allow_remote = true"
                )
        url = self.public_url
        if url is not None and url.startswith("http://") and not self.allow_insecure_http:
            raise ValueError(
                f"public_url {url!r} is plain HTTP: the events would carry memsync's secret "
                "in the clear; use https://, or allow_insecure_http = true for a test"
            )
        return self
