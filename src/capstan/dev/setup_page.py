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
- With `&return_to=<a path of this server>` (the dashboard's settings page sends one), both keep
  it, and the POST answers a redirect to that path with `account_id` and `role_name` in its query
  string instead, so the page fills them in. AWS's console has no such return: dev only.
"""

from __future__ import annotations

import html
from typing import Annotated
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
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
ReturnToQuery = Annotated[str | None, Query(max_length=2048)]


class SandboxStackOut(BaseModel):
    account_id: str
    role_name: str
    role_arn: str


def _own_path(return_to: str | None) -> str | None:
    """`return_to` when it is a path of this server, else None: the page never sends the
    stack's outputs to another site (browsers read `//host` and `/\\host` as another host)."""
    if return_to is None:
        return None
    parts = urlsplit(return_to)
    if (
        not return_to.startswith("/")
        or return_to[1:2] in ("/", "\\")
        or parts.scheme
        or parts.netloc
        or parts.fragment
        or any(c == "\\" or ord(c) < 0x21 or ord(c) == 0x7F for c in return_to)
    ):
        return None
    return return_to


@router.get(SETUP_PATH, response_class=HTMLResponse)
async def setup_page(external_id: ExternalIdQuery, return_to: ReturnToQuery = None) -> str:
    query = {"external_id": external_id}
    back = _own_path(return_to)
    if back is not None:
        query["return_to"] = back
    action = f"{SETUP_PATH}?{urlencode(query)}"
    return _PAGE.format(action=html.escape(action, quote=True))


@router.post(SETUP_PATH, response_model=SandboxStackOut)
async def launch_role_stack(
    external_id: ExternalIdQuery,
    session: DbSession,
    request: Request,
    return_to: ReturnToQuery = None,
) -> SandboxStackOut | Response:
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
    stack = SandboxStackOut(
        account_id=outputs["AccountId"], role_name=outputs["RoleName"], role_arn=outputs["RoleArn"]
    )
    back = _own_path(return_to)
    if back is None:
        return stack
    filled = urlencode({"account_id": stack.account_id, "role_name": stack.role_name})
    return RedirectResponse(f"{back}{'&' if '?' in back else '?'}{filled}", status_code=303)


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbox cloud: connect to Capstan</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">
<h1>Sandbox cloud</h1>
<p>This page stands in for the AWS console. In AWS you would launch Capstan's CloudFormation
stack in your own account; here the button launches the same template in a sandbox account made
for your organization. The answer holds the <code>account_id</code> and <code>role_name</code>
to give to <code>POST /api/cloud_account/verification</code> (from Capstan's settings page, you
are taken back there with both filled in).</p>
<form method="post" action="{action}">
<button type="submit">Create stack</button>
</form>
</body></html>
"""
