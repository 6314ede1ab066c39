"""Settings for a driver against the sandbox cloud, with no server around it."""

from __future__ import annotations

from typing import Any

from capstan.config import CloudMode, Settings


def sandbox_settings(url: str | None, **overrides: Any) -> Settings:
    return Settings(_env_file=None, cloud=CloudMode.sandbox, sandbox_cloud_url=url, **overrides)
