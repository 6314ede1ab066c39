"""ECS on Fargate: the project's cluster, a task definition revision per deployment and one
rolling service per target (minimum healthy 100 %, maximum 200 %, circuit breaker with rollback)."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring, utc
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

log = logging.getLogger(__name__)

DEPLOYMENT_CONFIGURATION = {
    "minimumHealthyPercent": 100,
    "maximumPercent": 200,
    "deploymentCircuitBreaker": {"enable": True, "rollback": True},
}


@dataclass(frozen=True)
class Deployment:
    id: str
    status: str  # PRIMARY | ACTIVE | INACTIVE
    task_definition: str
    rollout_state: str | None  # IN_PROGRESS | COMPLETED | FAILED
    reason: str | None
    running: int
    desired: int
    created_at: datetime | None = None
    failed_tasks: int = 0  # tasks of it that ECS stopped (failed to start, or unhealthy)


@dataclass(frozen=True)
class ServiceEvent:
    created_at: datetime
    message: str  # ECS's words: for the log, or to be read (`placement_refusal`), never shown


@dataclass(frozen=True)
class ServiceState:
    arn: str
    status: str  # ACTIVE | DRAINING | INACTIVE
    task_definition: str | None
    desired: int
    running: int
    deployments: tuple[Deployment, ...]
    # The target groups the service registers its tasks in (a web server's one).
    target_groups: tuple[str, ...] = ()
    events: tuple[ServiceEvent, ...] = ()  # newest first, as ECS lists them


@dataclass(frozen=True)
class ContainerSpec:
    image: str
    cpu: int
    memory: int
    # variable name -> `valueFrom`: an SSM parameter's name (the task's own account and Region)
    # or a secret's ARN
    secrets: dict[str, str]
    plain: dict[str, str]  # variable name -> value, for values with nothing to hide (empty)
    log_group: str
    region: str
    port: int | None  # web servers: the container port
    health_path: str | None
    command: str | None  # workers: the entry point command
    architecture: str = "X86_64"  # or "ARM64" (Fargate's Linux only)


def _client(session: AwsSession) -> Any:
    return session.client("ecs")


def ensure_cluster(session: AwsSession, project_id: str, generation: int = 0) -> str:
    ecs = _client(session)
    name = names.cluster_name(project_id, generation)
    with aws_errors():
        found = ecs.describe_clusters(clusters=[name])["clusters"]
        if any(cluster.get("status") == "ACTIVE" for cluster in found):
            return name
        ecs.create_cluster(
            clusterName=name,
            tags=names.tag_list(project_id, project_id, key="key", value="value"),
            capacityProviders=["FARGATE"],
        )
    return name


def cluster_exists(session: AwsSession, project_id: str, generation: int = 0) -> bool:
    with aws_errors():
        found = _client(session).describe_clusters(
            clusters=[names.cluster_name(project_id, generation)]
        )
    return any(cluster.get("status") == "ACTIVE" for cluster in found["clusters"])


def active_services(session: AwsSession, project_id: str, generation: int = 0) -> list[str]:
    ecs = _client(session)
    cluster = names.cluster_name(project_id, generation)
    arns: list[str] = []
    with aws_errors():
        try:
            for page in ecs.get_paginator("list_services").paginate(cluster=cluster):
                arns += page["serviceArns"]
        except ClientError as error:
            if error_code(error) == "ClusterNotFoundException":
                return []
            raise
        active: list[str] = []
        for start in range(0, len(arns), 10):
            described = ecs.describe_services(cluster=cluster, services=arns[start : start + 10])
            active += [
                service["serviceName"]
                for service in described["services"]
                if service.get("status") != "INACTIVE"
            ]
    return active


def delete_cluster(session: AwsSession, project_id: str, generation: int = 0) -> None:
    with aws_errors(), ignoring("ClusterNotFoundException"):
        _client(session).delete_cluster(cluster=names.cluster_name(project_id, generation))


def _container(spec: ContainerSpec) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": names.CONTAINER_NAME,
        "image": spec.image,
        "essential": True,
        "logConfiguration": {
            "logDriver": "awslogs",
            "options": {
                "awslogs-group": spec.log_group,
                "awslogs-region": spec.region,
                "awslogs-stream-prefix": "app",
            },
        },
    }
    plain = dict(spec.plain)
    if spec.port is not None:
        container["portMappings"] = [{"containerPort": spec.port, "protocol": "tcp"}]
        plain["PORT"] = str(spec.port)
    # A name set both ways would leave the container's value to chance: Capstan's own wins.
    container["secrets"] = [
        {"name": name, "valueFrom": source}
        for name, source in sorted(spec.secrets.items())
        if name not in plain
    ]
    if plain:
        container["environment"] = [
            {"name": name, "value": value} for name, value in sorted(plain.items())
        ]
    if spec.command is not None:
        container["entryPoint"], container["command"] = start_command(spec.command)
    return container


# What only a shell understands; a command without any of it runs without one.
_SHELL_SYNTAX = re.compile(r"""[|&;<>()$`\\"'*?\[\]#~{}\n]""")


def start_command(command: str) -> tuple[list[str], list[str]]:
    """The container's entry point and command for a service's start command. No tool inside the
    image is assumed: a plain command (`python -m worker`) runs as its own program, replacing the
    image's entry point; only one that needs a shell (pipes, `&&`, variables, quotes…) runs under
    `sh -c`, which the image must then have."""
    if _SHELL_SYNTAX.search(command) is None:
        words = command.split()
        if words and "=" not in words[0]:  # `NAME=value command` sets a variable: a shell's job
            return words[:1], words[1:]
    return ["sh", "-c"], [command]


def task_definition(
    resource_id: str, spec: ContainerSpec, *, task_role_arn: str, execution_role_arn: str
) -> dict[str, Any]:
    """What `RegisterTaskDefinition` is given for the target's container, its tags aside."""
    return {
        "family": names.service_name(resource_id),
        "taskRoleArn": task_role_arn,
        "executionRoleArn": execution_role_arn,
        "networkMode": "awsvpc",
        "requiresCompatibilities": ["FARGATE"],
        "cpu": str(spec.cpu),
        "memory": str(spec.memory),
        "runtimePlatform": {"cpuArchitecture": spec.architecture, "operatingSystemFamily": "LINUX"},
        "containerDefinitions": [_container(spec)],
    }


def ensure_task_definition(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    deployment_id: str,
    spec: ContainerSpec,
    *,
    task_role_arn: str,
    execution_role_arn: str,
) -> str:
    """The task definition revision of `deployment_id`, registered once (found by its tag).

    The tag is read with `ListTagsForResource`, which IAM scopes to Capstan's task definitions,
    not `DescribeTaskDefinition`, which IAM cannot scope: allowed, it would read every task
    definition of the account, the plain environment variables of the customer's other
    workloads included."""
    ecs = _client(session)
    family = names.service_name(resource_id)
    with aws_errors():
        newest = ecs.list_task_definitions(familyPrefix=family, status="ACTIVE", sort="DESC")[
            "taskDefinitionArns"
        ][:3]
        ours = [arn for arn in newest if arn.rsplit("/", 1)[-1].rpartition(":")[0] == family]
        for arn, tags in _tags_of_definitions(ecs, ours):
            if tags.get(names.DEPLOYMENT_TAG) == deployment_id:
                return str(arn)
        registered = ecs.register_task_definition(
            **task_definition(
                resource_id,
                spec,
                task_role_arn=task_role_arn,
                execution_role_arn=execution_role_arn,
            ),
            tags=names.tag_list(
                project_id,
                resource_id,
                key="key",
                value="value",
                **{names.DEPLOYMENT_TAG: deployment_id},
            ),
        )
    return str(registered["taskDefinition"]["taskDefinitionArn"])


def _tags_of_definitions(ecs: Any, arns: list[str]) -> Iterator[tuple[str, dict[str, str]]]:
    """Each task definition's tags, read as they are wanted. A stack launched before Capstan
    read them so has no `ecs:ListTagsForResource`, but `ecs:DescribeTaskDefinition`: at the first
    refusal the rest are asked that way, until the stack is updated (the log says so, once)."""
    listing = True
    for arn in arns:
        if listing:
            try:
                listed = ecs.list_tags_for_resource(resourceArn=arn).get("tags", [])
                yield arn, {tag["key"]: tag["value"] for tag in listed}
                continue
            except ClientError as error:
                if error_code(error) != "AccessDeniedException":
                    raise
                listing = False
                log.warning(
                    "the access role may not ecs:ListTagsForResource (a stack from before it): "
                    "reading task definitions with ecs:DescribeTaskDefinition; update the stack"
                )
        described = ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
        yield arn, {tag["key"]: tag["value"] for tag in described.get("tags", [])}


def delete_task_definitions(session: AwsSession, resource_id: str) -> None:
    ecs = _client(session)
    family = names.service_name(resource_id)
    with aws_errors():
        for status in ("ACTIVE", "INACTIVE"):
            arns: list[str] = []
            for page in ecs.get_paginator("list_task_definitions").paginate(
                familyPrefix=family, status=status
            ):
                arns += [arn for arn in page["taskDefinitionArns"] if f"/{family}:" in arn]
            for arn in arns:
                if status == "ACTIVE":
                    with ignoring("ClientException"):
                        ecs.deregister_task_definition(taskDefinition=arn)
            for start in range(0, len(arns), 10):
                with ignoring("ClientException", "InvalidParameterException"):
                    ecs.delete_task_definitions(taskDefinitions=arns[start : start + 10])


def task_definitions_left(session: AwsSession, resource_id: str) -> list[str]:
    ecs = _client(session)
    family = names.service_name(resource_id)
    left: list[str] = []
    with aws_errors():
        for status in ("ACTIVE", "INACTIVE"):
            arns = ecs.list_task_definitions(familyPrefix=family, status=status)
            left += [arn for arn in arns["taskDefinitionArns"] if f"/{family}:" in arn]
    return left


def _deployment(raw: dict[str, Any]) -> Deployment:
    return Deployment(
        id=str(raw.get("id")),
        status=str(raw.get("status")),
        task_definition=str(raw.get("taskDefinition")),
        rollout_state=raw.get("rolloutState"),
        reason=raw.get("rolloutStateReason"),
        running=int(raw.get("runningCount") or 0),
        desired=int(raw.get("desiredCount") or 0),
        created_at=utc(raw["createdAt"]) if raw.get("createdAt") else None,
        failed_tasks=int(raw.get("failedTasks") or 0),
    )


# ECS's events when Fargate's quota keeps a service's tasks from being placed: its vCPUs (or,
# before vCPU quotas, its tasks) running at once in the region, or a new account's quota of 0.
_QUOTA_EVENT = re.compile(
    r"unable to place a task.*(reached the limit on the number of (vCPUs|tasks) you can run "
    r"concurrently|your account is currently blocked)",
    re.IGNORECASE,
)
FARGATE_QUOTA = (
    "ECS cannot start the service's tasks: the AWS account has reached its quota of Fargate "
    "vCPUs running at once in this region (6 by default; a new account may start lower). Ask "
    'for more in Service Quotas (AWS Fargate, "Fargate On-Demand vCPU resource count") or '
    "stop other services there, then redeploy."
)


def placement_refusal(service: ServiceState, deployment: Deployment) -> str | None:
    """Capstan's sentence when ECS, since `deployment` began, could not place its tasks because
    of the account's Fargate quota (ECS keeps trying, and its circuit breaker never trips on
    it); None otherwise."""
    for event in service.events:
        if deployment.created_at is not None and event.created_at < deployment.created_at:
            break  # newest first: the rest are older still
        if _QUOTA_EVENT.search(event.message):
            return FARGATE_QUOTA
    return None


# ECS's event when it cannot assume a task's role (its execution role or task role) to launch it;
# it keeps trying. A role IAM has not propagated yet explains it (see `unassumable_role`).
_UNASSUMABLE_EVENT = re.compile(
    r"failed to launch a task with \(error ECS was unable to assume the role '(?P<role>[^']+)'"
)


def unassumable_role(service: ServiceState, deployment: Deployment) -> str | None:
    """The role ECS said, since `deployment` began, it could not assume to launch the
    deployment's tasks (the newest such event), or None."""
    for event in service.events:
        if deployment.created_at is not None and event.created_at < deployment.created_at:
            break  # newest first: the rest are older still
        found = _UNASSUMABLE_EVENT.search(event.message)
        if found is not None:
            return found["role"]
    return None


def describe_service(session: AwsSession, cluster: str, service: str) -> ServiceState | None:
    """The service, or None when there is none (never made, or deleted and gone)."""
    with aws_errors():
        try:
            described = _client(session).describe_services(cluster=cluster, services=[service])
        except ClientError as error:
            if error_code(error) == "ClusterNotFoundException":
                return None
            raise
    if not described["services"]:
        return None
    raw = described["services"][0]
    return ServiceState(
        arn=str(raw["serviceArn"]),
        status=str(raw.get("status")),
        task_definition=raw.get("taskDefinition"),
        desired=int(raw.get("desiredCount") or 0),
        running=int(raw.get("runningCount") or 0),
        deployments=tuple(_deployment(item) for item in raw.get("deployments", [])),
        target_groups=tuple(
            str(item["targetGroupArn"])
            for item in raw.get("loadBalancers") or []
            if item.get("targetGroupArn")
        ),
        events=tuple(
            ServiceEvent(utc(item["createdAt"]), str(item.get("message") or ""))
            for item in raw.get("events") or []
            if item.get("createdAt")
        ),
    )


def ensure_service(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    *,
    cluster: str,
    task_definition_arn: str,
    subnet_ids: tuple[str, ...],
    security_group_id: str,
    target_group_arn: str | None,
    desired_count: int = 1,
    first: bool = False,
) -> None:
    """Create the service (with `desired_count` tasks), or roll it to `task_definition_arn` if
    it runs something else. `first`: the target's service was never known to be made — it is
    created without a look first (`DescribeServices` only when its name is in use)."""
    ecs = _client(session)
    name = names.service_name(resource_id)
    network = {
        "awsvpcConfiguration": {
            "subnets": list(subnet_ids),
            "securityGroups": [security_group_id],
            # Public subnets and no NAT: tasks need a public address to reach ECR and the logs.
            "assignPublicIp": "ENABLED",
        }
    }
    arguments: dict[str, Any] = {
        "cluster": cluster,
        "serviceName": name,
        "taskDefinition": task_definition_arn,
        "desiredCount": desired_count,
        "launchType": "FARGATE",
        "networkConfiguration": network,
        "deploymentConfiguration": DEPLOYMENT_CONFIGURATION,
        "deploymentController": {"type": "ECS"},
        "propagateTags": "SERVICE",
        "enableECSManagedTags": True,
        "tags": names.tag_list(project_id, resource_id, key="key", value="value"),
        # At most 36 characters; the same for a retried call of one deployment.
        "clientToken": hashlib.sha256(f"{name}|{task_definition_arn}".encode()).hexdigest()[:36],
    }
    if target_group_arn is not None:
        arguments["loadBalancers"] = [
            {
                "targetGroupArn": target_group_arn,
                "containerName": names.CONTAINER_NAME,
                "containerPort": names.CONTAINER_PORT,
            }
        ]
        arguments["healthCheckGracePeriodSeconds"] = 60
    if first:
        # ECS answers a retry of this very request with the service, and refuses any other
        # create of a name in use: then it is looked at and rolled, as for any redeploy.
        with aws_errors():
            try:
                ecs.create_service(**arguments)
                return
            except ClientError as error:
                if not _name_in_use(error):
                    raise
    current = describe_service(session, cluster, name)
    with aws_errors():
        if current is not None and current.status == "ACTIVE":
            if current.task_definition != task_definition_arn:
                ecs.update_service(
                    cluster=cluster,
                    service=name,
                    taskDefinition=task_definition_arn,
                    deploymentConfiguration=DEPLOYMENT_CONFIGURATION,
                    networkConfiguration=network,
                )
            return
        ecs.create_service(**arguments)


def restart_tasks(session: AwsSession, cluster: str, resource_id: str) -> None:
    """Replace the service's tasks with new ones of the same task definition, rolling as any
    deployment does: ECS reads a task's secrets only as it starts, so this is how running tasks
    get a secret's new value ("Force new deployment",
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/secrets-envvar-secrets-manager.html)."""
    with aws_errors():
        _client(session).update_service(
            cluster=cluster, service=names.service_name(resource_id), forceNewDeployment=True
        )


def _name_in_use(error: ClientError) -> bool:
    """ECS's refusal of a CreateService whose name an ACTIVE service holds."""
    message = str(error.response.get("Error", {}).get("Message", ""))
    return error_code(error) == "InvalidParameterException" and "not idempotent" in message


def revision(task_definition_arn: str | None) -> int:
    """A task definition's revision (`…:<n>`); each deployment registers a newer one."""
    if not task_definition_arn:
        return 0
    tail = task_definition_arn.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


def delete_service(session: AwsSession, cluster: str, resource_id: str) -> bool:
    """Scale to zero and delete; True when the service is gone or going (INACTIVE/DRAINING)."""
    ecs = _client(session)
    name = names.service_name(resource_id)
    current = describe_service(session, cluster, name)
    if current is None or current.status == "INACTIVE":
        return True
    with aws_errors(), ignoring("ServiceNotActiveException", "ServiceNotFoundException"):
        if current.status == "ACTIVE" and current.desired:
            ecs.update_service(cluster=cluster, service=name, desiredCount=0)
        ecs.delete_service(cluster=cluster, service=name, force=True)
    return True
