"""The sandbox's stand-in for the AWS console's quick-create page (served in sandbox mode only).

`GET /api/cloud_account` points `setup_url` here, with the organization's external ID in the
query string — just as the AWS quick-create link carries it in `param_ExternalId`. The page is
the customer's side of the flow, not Capstan's API, so it takes no Capstan credentials: the
external ID (192 random bits, known only to the organization) is what identifies the
organization, as possession of the link does in AWS.

- `GET /sandbox/cloud/setup?external_id=...`: a short page explaining what the button does.
- `POST /sandbox/cloud/setup?external_id=...`: launches Capstan's role template (the very one
  `GET /api/cloud_account/template` returns) as stack `capstan-access` in the organization's
  sandbox account and answers `{account_id, role_name, role_arn}` from the stack's outputs —
  what the customer then gives to `POST /api/cloud_account/verification`. Idempotent.
"""

from __future__ import annotations

import html
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from capstan.cloud import Cloud, CloudError
from capstan.cloud.access_role import STACK_NAME, role_template
from capstan.cloud_account import service
from capstan.db import DbSession
from capstan.dev.console import customer_account_id, launch_stack
from capstan.errors import ApiError, NotFound

SETUP_PATH = service.SANDBOX_SETUP_PATH
router = APIRouter(tags=["sandbox"], include_in_schema=False)

ExternalIdQuery = Annotated[str, Query(min_length=1, max_length=1224)]


class SandboxStackOut(BaseModel):
    account_id: str
    role_name: str
    role_arn: str


@router.get(SETUP_PATH, response_class=HTMLResponse)
async def setup_page(external_id: ExternalIdQuery) -> str:
    action = f"{SETUP_PATH}?{urlencode({'external_id': external_id})}"
    return _PAGE.format(action=html.escape(action, quote=True))


@router.post(SETUP_PATH, response_model=SandboxStackOut)
async def launch_role_stack(
    external_id: ExternalIdQuery, session: DbSession, request: Request
) -> SandboxStackOut:
    connection = await service.find_by_external_id(session, external_id)
    if connection is None:
        raise NotFound(
            "No organization has this external ID; use the link from GET /api/cloud_account."
        )
    cloud: Cloud = request.app.state.cloud
    template = role_template(principal_arn=cloud.principal_arn, external_id=connection.external_id)
    organization_id = connection.organization_id

    def launch() -> dict[str, str]:
        account_id = customer_account_id(cloud.endpoint, organization_id)
        return launch_stack(
            cloud.endpoint, account_id=account_id, stack_name=STACK_NAME, template=template
        )

    try:
        outputs = await cloud.run(launch)
    except CloudError as error:
        raise ApiError(
            f"The sandbox could not launch the stack: {error.message}", code="sandbox_stack_failed"
        ) from error
    return SandboxStackOut(
        account_id=outputs["AccountId"], role_name=outputs["RoleName"], role_arn=outputs["RoleArn"]
    )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbox cloud: connect to Capstan</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">
<h1>Sandbox cloud</h1>
<p>This page stands in for the AWS console. In AWS you would launch Capstan's CloudFormation
stack in your own account; here the button launches the same template in a sandbox account made
for your organization. The answer holds the <code>account_id</code> and <code>role_name</code>
to give to <code>POST /api/cloud_account/verification</code>.</p>
<form method="post" action="{action}">
<button type="submit">Create stack</button>
</form>
</body></html>
"""
