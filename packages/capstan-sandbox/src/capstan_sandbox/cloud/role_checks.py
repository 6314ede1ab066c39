"""What a role may do, for work the sandbox does *as* that role rather than as a caller of its
API: ECS's agent starting a task with the task's execution role, CodeBuild pushing an image with
the build's service role. AWS authorizes those calls as it does any other, so a grant the role
lacks fails there; moto made them without asking.

`RoleRequests(account, role_arn).denial(action, arn, type)` evaluates one request as IAM would —
the role's inline and managed policies and its permissions boundary as of now (what IAM has not
propagated yet grants nothing: `iam_propagation`), against the resource's ARN and its tags
(`aws:ResourceTag/…`, read as the authorizer reads them) — and answers IAM's reason for a
refusal, or None. A role that is gone (or none named) may do nothing: IAM finds no policy
allowing it.

Before a service does anything as a role it assumes it: `unassumable(account, role_arn,
service)` says when it cannot (IAM has not propagated the role yet, or its trust policy does not
admit the service).
"""

from __future__ import annotations

from capstan_sandbox.cloud import iam_propagation, policy, trust
from capstan_sandbox.cloud.authorization import not_authorized, policies_of_role
from capstan_sandbox.cloud.resolving import Target
from capstan_sandbox.cloud.resources import request_for
from capstan_sandbox.cloud.tags import find_role


def unassumable(
    account_id: str, role_arn: str, service: str, context: dict[str, str] | None = None
) -> bool:
    """Whether `service` (`codebuild.amazonaws.com`…) cannot assume the role now: it exists but
    IAM has not propagated it yet, or a trust policy it had in that time does not admit the
    service with the keys it sends (`context`: `aws:SourceAccount`, `aws:SourceArn`). A role
    that is not there is not this check's to refuse."""
    if ":role/" not in role_arn:
        return False
    role = find_role(account_id, role_arn.split(":")[1], role_arn.rsplit("/", 1)[-1])
    if role is None or role.arn != role_arn:
        return False
    if iam_propagation.settling(role):
        return True
    request = trust.TrustRequest(principals=frozenset({service}), context=dict(context or {}))
    trusts = iam_propagation.trusts(role)
    return not trusts or any(
        trust.evaluate(document, request) is not trust.Decision.ALLOW for document in trusts
    )


class RoleRequests:
    def __init__(self, account_id: str, role_arn: str) -> None:
        self.account_id = account_id
        self.role_arn = role_arn
        self.partition = role_arn.split(":")[1] if role_arn.count(":") >= 5 else "aws"
        found = policies_of_role(account_id, self.partition, role_arn.rsplit("/", 1)[-1])
        self.exists = found is not None
        self._states = found if found is not None else [([], None)]
        self._common = {"aws:principalaccount": [account_id]}

    def denial(
        self,
        action: str,
        resource: str,
        resource_type: str | None,
        context: dict[str, list[str]] | None = None,
    ) -> str | None:
        """IAM's reason the role may not make the request (with the service's condition keys
        `context`, such as `iam:passedtoservice`), or None when it may."""
        target = Target(resource, resource_type, context or {})
        request = request_for(action, target, {}, self._common)
        verdict = policy.authorize_in_every(self._states, request)
        return None if verdict.allowed else verdict.reason

    def refusal(
        self,
        action: str,
        resource: str,
        resource_type: str | None,
        session_name: str,
        context: dict[str, list[str]] | None = None,
    ) -> str | None:
        """AWS's sentence when the role's session `session_name` may not make the request
        ("User: …:assumed-role/<role>/<session> is not authorized to perform: …"), or None."""
        denied = self.denial(action, resource, resource_type, context)
        if denied is None:
            return None
        role_name = self.role_arn.rsplit("/", 1)[-1]
        caller = (
            f"arn:{self.partition}:sts::{self.account_id}:assumed-role/{role_name}/{session_name}"
        )
        return not_authorized(caller, action, resource, denied)
