"""The TOML configuration: a validated model, and errors that name the key and what it expects.

Unknown keys are errors (a typo must never be silently ignored) and secrets are never read
from the config itself: only ``api_key_env`` (a variable's name) or ``api_key_file`` (a path).

``loading`` reads a file into ``model.Config``, built of ``sections`` and ``providers`` (one
model per provider type) from the pieces in ``fields``; ``messages`` says what is wrong in
one line. The names every caller uses are re-exported here.
"""

from memsync.config.fields import PLATFORM_ONLY_KEYS, PROVIDER_TYPES, parse_duration
from memsync.config.loading import load_config, parse_config
from memsync.config.messages import describe_validation_error
from memsync.config.model import Config
from memsync.config.providers import (
    CogneeConfig,
    ExcludeConfig,
    HindsightConfig,
    LangGraphLayoutConfig,
    Mem0OssConfig,
    Mem0PlatformConfig,
    Mem0ServerConfig,
    MnemConfig,
    MnemExcludeConfig,
    PmmDirConfig,
    ProviderBase,
    ProviderConfig,
)
from memsync.config.sections import (
    COMPLETELY_PROBED_INTERVAL,
    DEFAULT_INTERVAL,
    PROBED_INTERVAL,
    BackupConfig,
    MetricsConfig,
    PmmConfig,
    SyncConfig,
    UiConfig,
    VerifyConfig,
    WebhooksConfig,
)

__all__ = [
    "COMPLETELY_PROBED_INTERVAL",
    "DEFAULT_INTERVAL",
    "PLATFORM_ONLY_KEYS",
    "PROBED_INTERVAL",
    "PROVIDER_TYPES",
    "BackupConfig",
    "CogneeConfig",
    "Config",
    "ExcludeConfig",
    "HindsightConfig",
    "LangGraphLayoutConfig",
    "Mem0OssConfig",
    "Mem0PlatformConfig",
    "Mem0ServerConfig",
    "MetricsConfig",
    "MnemConfig",
    "MnemExcludeConfig",
    "PmmConfig",
    "PmmDirConfig",
    "ProviderBase",
    "ProviderConfig",
    "SyncConfig",
    "UiConfig",
    "VerifyConfig",
    "WebhooksConfig",
    "describe_validation_error",
    "load_config",
    "parse_config",
    "parse_duration",
]
