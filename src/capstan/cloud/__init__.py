"""The cloud: Capstan's driver for AWS and the typed errors it raises.

`open_cloud(settings, identity)` gives the `Cloud` the app keeps in `app.state.cloud`. Each
resource kind has one driver module here (`deploy` with `site`, `network`, `caches`, `buckets`,
`certificates`, `model_access`), a class built on an `AwsSession` in the organization's account;
domain packages open it through `cloud_account.session.customer_driver` and never reach
`capstan.cloud.aws` themselves.
"""

from __future__ import annotations

from capstan.cloud.aws.session import AwsSession
from capstan.cloud.credentials import RoleRef
from capstan.cloud.driver import Cloud, open_cloud
from capstan.cloud.errors import CloudError, RetryableCloudError, TerminalCloudError

__all__ = [
    "AwsSession",
    "Cloud",
    "CloudError",
    "RetryableCloudError",
    "RoleRef",
    "TerminalCloudError",
    "open_cloud",
]
