"""The cloud: Capstan's driver for AWS and the typed errors it raises.

`open_cloud(settings)` gives the `Cloud` the app keeps in `app.state.cloud`.
"""

from __future__ import annotations

from capstan.cloud.credentials import RoleRef
from capstan.cloud.driver import Cloud, open_cloud
from capstan.cloud.errors import CloudError, RetryableCloudError, TerminalCloudError

__all__ = [
    "Cloud",
    "CloudError",
    "RetryableCloudError",
    "RoleRef",
    "TerminalCloudError",
    "open_cloud",
]
