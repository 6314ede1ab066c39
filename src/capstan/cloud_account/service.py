"""The organization's cloud account connection: its external ID, the role template, and the live
verification that connects (or disconnects) the account.

The verification is usually asked for right after the customer's stack made the role, and IAM is
eventually consistent: a role made moments ago is refused to everyone for a while, in the same
words as a role that is wrong. So a refused AssumeRole is tried again, backing off, for about
`VERIFY_WAIT_SECONDS` inside the request before the 422 (which then says a new role may need a
minute more). See docs/decisions/0015-iam-propagation.md.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any
from urllib.parse import quote, urlencode

import anyio
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud import Cloud, CloudError, TerminalCloudError
from capstan.cloud.access_role import STACK_NAME, role_template
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.schemas import CloudAccountOut, VerificationOut, VerificationRequest
from capstan.config import CloudMode, Settings
from capstan.db import utcnow
from capstan.errors import Unprocessable

log = logging.getLogger(__name__)

# 24 random bytes = 192 bits, as 32 URL-safe base64 characters ([A-Za-z0-9_-]: all valid in
# sts:ExternalId).
EXTERNAL_ID_BYTES = 24
# How long a refused verification is tried again (waits of 0.5, 1 and 2 s): IAM usually makes a
# new role usable within seconds, a person (or a client's 10 s timeout) waits no longer for an
# answer, and a wrong role, refused in the same words, should not keep one waiting.
VERIFY_WAIT_SECONDS = 4.0
_FIRST_WAIT_SECONDS = 0.5
TEMPLATE_PATH = "/api/cloud_account/template"
SANDBOX_SETUP_PATH = "/sandbox/cloud/setup"


async def connection(session: AsyncSession, caller: Principal) -> CloudAccount:
    """The caller's connection, created with a fresh external ID on first use.

    Concurrent first calls both insert-or-ignore on the primary key; the one row wins and both
    read it back.
    """
    existing = await _find(session, caller.organization_id)
    if existing is not None:
        return existing
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    await session.execute(
        insert(CloudAccount)
        .values(
            organization_id=caller.organization_id,
            external_id=secrets.token_urlsafe(EXTERNAL_ID_BYTES),
            active=False,
            created_at=utcnow(),
        )
        .on_conflict_do_nothing(index_elements=[CloudAccount.organization_id])
    )
    created = await _find(session, caller.organization_id)
    assert created is not None
    return created


async def describe(session: AsyncSession, caller: Principal, settings: Settings) -> CloudAccountOut:
    account = await connection(session, caller)
    return CloudAccountOut(
        account_id=account.account_id,
        role_name=account.role_name,
        external_id=account.external_id,
        active=account.active,
        connected_at=account.connected_at,
        setup_url=setup_url(settings, account.external_id),
        template_url=settings.base_url + TEMPLATE_PATH,
    )


async def template(session: AsyncSession, caller: Principal, cloud: Cloud) -> dict[str, Any]:
    account = await connection(session, caller)
    return role_template(principal_arn=cloud.principal_arn, external_id=account.external_id)


def setup_url(settings: Settings, external_id: str) -> str | None:
    """Where the customer launches the role's stack.

    AWS: CloudFormation's quick-create page for the template the operator published on S3 (the
    console accepts only S3 template URLs), with the external ID filled in; none if unpublished.
    Sandbox: the sandbox's stand-in for that page.
    """
    if settings.cloud is CloudMode.sandbox:
        return f"{settings.base_url}{SANDBOX_SETUP_PATH}?{urlencode({'external_id': external_id})}"
    if not settings.aws_template_url:
        return None
    query = urlencode(
        {
            "templateURL": settings.aws_template_url,
            "stackName": STACK_NAME,
            "param_ExternalId": external_id,
        },
        quote_via=quote,
    )
    return (
        f"https://console.aws.amazon.com/cloudformation/home?region={settings.default_region}"
        f"#/stacks/quickcreate?{query}"
    )


async def verify(
    session: AsyncSession, caller: Principal, body: VerificationRequest, cloud: Cloud
) -> VerificationOut:
    """Assume the role live; on success record the connection as active.

    A wrong external ID is refused before any cloud call. A failed assumption of the recorded
    account and role marks the connection inactive — a result worth keeping, so it is committed
    before the 422 is raised (raising would otherwise roll it back).
    """
    account = await _find(session, caller.organization_id)
    if account is None or not secrets.compare_digest(
        account.external_id.encode(), body.external_id.encode()
    ):
        raise Unprocessable(
            _failure(
                "external_id_mismatch",
                "That is not your organization's external ID; use the one from "
                "GET /api/cloud_account.",
            )
        )
    recorded = account.account_id == body.account_id and account.role_name == body.role_name
    try:
        role_arn = await _assume(cloud, body)
    except CloudError as error:
        role_arn = cloud.role_arn(body.account_id, body.role_name)
        log.warning("verifying %s: %s", role_arn, error)
        if isinstance(error, TerminalCloudError):
            code = "assume_role_failed"
            message = (
                f"Capstan could not assume {role_arn}: {error.message} Check that the role "
                f"exists, trusts {cloud.principal_arn} and requires this external ID. A role "
                "made in the last minute may not be usable yet (IAM takes a moment to make a "
                "new role usable everywhere): if the stack has just been created, try again in "
                "a minute."
            )
        else:
            code = "cloud_unavailable"
            message = f"The role could not be checked just now ({error.code}); try again."
        if recorded:
            if isinstance(error, TerminalCloudError):
                account.active = False
            account.last_error = message
            await session.commit()
        raise Unprocessable(_failure(code, message)) from error
    now = utcnow()
    if not recorded or account.connected_at is None:
        account.connected_at = now
    account.account_id = body.account_id
    account.role_name = body.role_name
    account.active = True
    account.last_verified_at = now
    account.last_error = None
    return VerificationOut(account_id=body.account_id, role_arn=role_arn)


async def _assume(cloud: Cloud, body: VerificationRequest) -> str:
    """The role's ARN once assumed; an AWS refusal is tried again, backing off, for about
    `VERIFY_WAIT_SECONDS` (a role the stack has just made: see the module docstring)."""
    wait, waited = _FIRST_WAIT_SECONDS, 0.0
    while True:
        try:
            return await cloud.verify_role(body.account_id, body.role_name, body.external_id)
        except TerminalCloudError as error:
            if error.code != "access_denied" or waited + wait > VERIFY_WAIT_SECONDS:
                raise
        await anyio.sleep(wait)
        waited, wait = waited + wait, wait * 2


async def find_by_external_id(session: AsyncSession, external_id: str) -> CloudAccount | None:
    return await session.scalar(select(CloudAccount).where(CloudAccount.external_id == external_id))


async def _find(session: AsyncSession, organization_id: str) -> CloudAccount | None:
    return await session.scalar(
        select(CloudAccount).where(CloudAccount.organization_id == organization_id)
    )


def _failure(code: str, message: str) -> dict[str, Any]:
    return {"verified": False, "error": code, "message": message}
