"""A session in an organization's AWS account: the one way every part of Capstan reaches it.

The organization's connected role is assumed (credentials cached by `Cloud`), a session is
opened in the region asked for — a project's resources live in the project's region — and
closed afterwards. A request that must answer from the cloud (logs, metrics, cost, a catalog, a
certificate request) wraps its call in `cloud_answers`, so a cloud failure is one 502 shape.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TypeVar

from capstan.cloud import AwsSession
from capstan.cloud.credentials import RoleRef
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import CloudError, RetryableCloudError, TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.errors import ApiError

D = TypeVar("D")
log = logging.getLogger(__name__)


@asynccontextmanager
async def customer_session(
    cloud: Cloud, account: CloudAccount | None, *, region: str | None
) -> AsyncIterator[AwsSession]:
    """The session in the account's role talking to `region` (None: the control plane's),
    shared by the process's steps (the cloud closes it)."""
    if account is None or account.account_id is None or account.role_name is None:
        raise TerminalCloudError(
            "cloud_account_not_connected", "The organization has no connected cloud account."
        )
    role = RoleRef(account.account_id, account.role_name, account.external_id)
    yield await cloud.session_for(role, region=region)


class CloudUnavailable(ApiError):
    status_code = 502
    code = "cloud_unavailable"


@contextmanager
def cloud_answers(what: str = "The cloud did not answer") -> Iterator[None]:
    """Turn a cloud failure inside the block into 502 `cloud_unavailable` ("<what> (<code>)."),
    with `Retry-After` when the failure is a passing one. The cloud's own words (which may quote
    parameters, ARNs or account ids) go to the log, never into the body."""
    try:
        yield
    except CloudError as error:
        log.warning("%s: %s (%s)", what, error.message, error.code)
        retry = {"Retry-After": "5"} if isinstance(error, RetryableCloudError) else None
        raise CloudUnavailable(f"{what} ({error.code}).", headers=retry) from error


@asynccontextmanager
async def customer_driver(
    cloud: Cloud,
    account: CloudAccount | None,
    region: str | None,
    make: Callable[[AwsSession], D],
) -> AsyncIterator[D]:
    """A kind's driver (`make(session)`) in the account's role, talking to `region`, on the
    process's shared session for that role and region. Every kind opens its driver this one way."""
    async with customer_session(cloud, account, region=region) as customer:
        yield make(customer)
