"""The composition root's choices: which cloud identity and which extras this process runs with.

Only this module (with `app.py`, `workers.py` and `cli.py`, which call it) knows the sandbox:
`cloud/` is handed an identity and cannot tell the sandbox from AWS. The sandbox is an extra
(`pip install 'capstan-cloud[sandbox]'`): nothing here imports it unless the settings ask for it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from capstan.cloud.driver import Cloud, ControlPlaneIdentity, aws_identity, open_cloud
from capstan.config import CloudMode, ConfigurationError, Settings

SANDBOX_MISSING = (
    "the sandbox cloud is not installed; install it with: pip install 'capstan-cloud[sandbox]'"
)


def require_sandbox() -> None:
    """Raise `ConfigurationError` (one line saying what to install) without the sandbox extra."""
    try:
        found = importlib.util.find_spec("moto") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigurationError(SANDBOX_MISSING)


def control_plane_identity(settings: Settings) -> ControlPlaneIdentity:
    """AWS's default chain, or (`cloud = sandbox`) the sandbox operator's access key."""
    if settings.cloud is CloudMode.aws:
        return aws_identity
    require_sandbox()
    from capstan.dev.identity import sandbox_identity

    return sandbox_identity


@asynccontextmanager
async def open_configured_cloud(settings: Settings) -> AsyncIterator[Cloud]:
    """`open_cloud` with the identity the settings ask for."""
    async with open_cloud(settings, control_plane_identity(settings)) as cloud:
        yield cloud
