"""What a customer does in the AWS console, done against the sandbox cloud.

`launch_stack` stands in for the CloudFormation quick-create page: in the customer's account
(one sandbox account per Capstan organization, created through Organizations on first use and
found again by name), it creates the stack from the template — through credentials from
`OrganizationAccountAccessRole`, as an administrator of that account — waits for it, and answers
its outputs. Launching again is idempotent: an existing stack answers its outputs.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import Endpoint
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.dev.accounts import ensure_account, organization_access

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudformation.type_defs import StackTypeDef

_DONE = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"})
_WAIT_SECONDS = 60


def customer_account_name(organization_id: str) -> str:
    return f"customer-{organization_id}"


def customer_account_id(endpoint: Endpoint, organization_id: str) -> str:
    """The sandbox account standing in for an organization's own AWS account."""
    return ensure_account(
        endpoint,
        name=customer_account_name(organization_id),
        email=f"{organization_id}@customers.sandbox.capstan.test",
    )


def launch_stack(
    endpoint: Endpoint, *, account_id: str, stack_name: str, template: dict[str, Any]
) -> dict[str, str]:
    """Create `stack_name` from `template` in `account_id` (unless it exists); its outputs."""
    with organization_access(endpoint, account_id) as admin, aws_errors():
        cloudformation = cast("CloudFormationClient", admin.client("cloudformation"))
        if _describe(cloudformation, stack_name) is None:
            try:
                cloudformation.create_stack(
                    StackName=stack_name,
                    TemplateBody=json.dumps(template),
                    Capabilities=["CAPABILITY_NAMED_IAM"],
                )
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "AlreadyExistsException":
                    raise
        stack = _wait(cloudformation, stack_name)
    if stack["StackStatus"] not in _DONE:
        raise TerminalCloudError(
            "stack_failed",
            f"Stack {stack_name} ended in {stack['StackStatus']}: "
            f"{stack.get('StackStatusReason', 'no reason given')}",
        )
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", []) if "OutputKey" in o}


def _describe(cloudformation: CloudFormationClient, stack_name: str) -> StackTypeDef | None:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ValidationError":
            return None  # "Stack with id ... does not exist"
        raise
    live = [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"]
    return live[0] if live else None


def _wait(cloudformation: CloudFormationClient, stack_name: str) -> StackTypeDef:
    deadline = time.monotonic() + _WAIT_SECONDS
    while True:
        stack = _describe(cloudformation, stack_name)
        if stack is None:
            raise TerminalCloudError("stack_failed", f"Stack {stack_name} disappeared.")
        if not stack["StackStatus"].endswith("_IN_PROGRESS"):
            return stack
        if time.monotonic() > deadline:
            raise RetryableCloudError(
                "stack_in_progress", f"Stack {stack_name} is still {stack['StackStatus']}."
            )
        time.sleep(0.2)
