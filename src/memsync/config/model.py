"""The whole config: its sections and providers, and the rules that tie them together."""

from __future__ import annotations

import re
from typing import Any

from pydantic import field_validator, model_validator

from memsync.base.errors import ConfigError
from memsync.config.fields import Strict
from memsync.config.providers import ProviderConfig
from memsync.config.scoping import check_scoped_config
from memsync.config.sections import (
    COMPLETELY_PROBED_INTERVAL,
    PROBED_INTERVAL,
    BackupConfig,
    MetricsConfig,
    PmmConfig,
    SyncConfig,
    UiConfig,
    VerifyConfig,
    WebhooksConfig,
)


class Config(Strict):
    sync: SyncConfig
    backup: BackupConfig = BackupConfig()
    pmm: PmmConfig = PmmConfig()
    ui: UiConfig = UiConfig()
    verify: VerifyConfig = VerifyConfig()
    metrics: MetricsConfig = MetricsConfig()
    webhooks: WebhooksConfig = WebhooksConfig()
    providers: dict[str, ProviderConfig]

    @field_validator("providers")
    @classmethod
    def _names(cls, providers: dict[str, Any]) -> dict[str, Any]:
        if not providers:
            raise ValueError("expected at least one [providers.NAME] table")
        for name in providers:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                raise ValueError(f"provider name {name!r}: use letters, digits, '-', '_' or '.'")
        return providers

    @model_validator(mode="before")
    @classmethod
    def _full_pass_beside_a_probe(cls, data: Any) -> Any:
        """With a probe and no interval, the full pass runs as docs/daemon.md recommends beside
        one: hourly, or daily when every probed store's probe finds deletes too (a Mem0 server
        read through its database; the Platform with its delete check). Every 5 minutes, a
        team's full passes would cost more than its probes save."""
        sync = data.get("sync") if isinstance(data, dict) else None
        if not isinstance(sync, dict) or "interval" in sync:
            return data
        probe = sync.get("probe")
        if probe is None or (isinstance(probe, str) and probe.strip().lower() == "off"):
            return data
        providers = data.get("providers")
        entries = (
            [e for e in providers.values() if isinstance(e, dict)]
            if isinstance(providers, dict)
            else []
        )
        probed = [  # the stores orchestration/live/probes.py probes
            e
            for e in entries
            if e.get("type") in ("mem0-server", "mem0-platform")
            or (e.get("type") == "hindsight" and e.get("bank"))
        ]
        complete = bool(probed) and all(_probed_completely(e) for e in probed)
        interval = COMPLETELY_PROBED_INTERVAL if complete else PROBED_INTERVAL
        return {**data, "sync": {**sync, "interval": interval}}

    @model_validator(mode="after")
    def _scopes_fit_together(self) -> Config:
        check_scoped_config(self.providers)
        return self

    @model_validator(mode="after")
    def _active_is_configured(self) -> Config:
        if self.sync.active not in self.providers:
            names = ", ".join(sorted(self.providers)) or "none"
            raise ValueError(
                f"sync.active = {self.sync.active!r} names no configured provider "
                f"(configured: {names})"
            )
        return self

    def provider(self, name: str) -> ProviderConfig:
        """The provider called NAME, or a ConfigError listing the ones that exist."""
        try:
            return self.providers[name]
        except KeyError:
            names = ", ".join(sorted(self.providers))
            raise ConfigError(
                f"no provider named {name!r} in the config (configured: {names})"
            ) from None


def _probed_completely(entry: dict[str, Any]) -> bool:
    """Whether a probed store's probe finds deletes as well as adds and edits: a Mem0 server's
    database probe, or the Platform's probe with its delete check (not "off")."""
    if entry.get("type") == "mem0-server":
        return bool(entry.get("database_url_env") or entry.get("database_url_file"))
    if entry.get("type") == "mem0-platform":
        check = entry.get("delete_check", "on")
        return not (isinstance(check, str) and check.strip().lower() == "off")
    return False
