"""Names and tags of Capstan's cloud resources, derived from Capstan's ids and nothing else.

Every resource carries `capstan:project` and `capstan:resource`; the project's shared resources
(VPC, load balancer, cluster, roles) name the project itself as their `capstan:resource`. Names
are deterministic so that a step run twice (or after a crash) finds what it made the first time,
and they respect each service's limits (target groups and load balancers: 32 characters of
letters, digits and hyphens).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

PROJECT_TAG = "capstan:project"
RESOURCE_TAG = "capstan:resource"
# What no project owns (the network every project of an account and region shares).
SHARED_TAG = "capstan:shared"
DEPLOYMENT_TAG = "capstan:deployment"
# The `capstan:project` of what all projects of an account share (the sites' origin access
# control and viewer function): no project's deletion removes it.
SHARED = "shared"
# Path of every IAM role Capstan makes, and of every SSM parameter (`/capstan/<resource>/<NAME>`).
ROLE_PATH = "/capstan/"
SSM_PREFIX = "/capstan"
CONTAINER_NAME = "app"
CONTAINER_PORT = 8080
_NOT_NAME_CHARACTERS = re.compile(r"[^a-z0-9-]")


def tag_map(project_id: str, resource_id: str, **extra: str) -> dict[str, str]:
    return {PROJECT_TAG: project_id, RESOURCE_TAG: resource_id, **extra}


def tag_list(
    project_id: str, resource_id: str, *, key: str = "Key", value: str = "Value", **extra: str
) -> list[dict[str, Any]]:
    """Tags as most AWS APIs take them (`[{"Key": ..., "Value": ...}]`; ECS: key="key")."""
    return [{key: k, value: v} for k, v in tag_map(project_id, resource_id, **extra).items()]


def short_name(prefix: str, resource_id: str, limit: int = 32) -> str:
    """`<prefix>-<id>` in letters, digits and hyphens within `limit`, stable for one id.

    Capstan ids (`svc_` + 26 characters) fit 32 without their underscore; anything longer keeps
    its head and gets a hash of the whole id, so two ids never share a name.
    """
    slug = _NOT_NAME_CHARACTERS.sub("", resource_id.lower())
    name = f"{prefix}-{slug}"
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(resource_id.encode()).hexdigest()[:8]
    return f"{name[: limit - 9]}-{digest}"


def service_name(resource_id: str) -> str:
    """ECS service, task definition family and CodeBuild project of a target."""
    return f"capstan-{resource_id}"


def cluster_name(project_id: str, generation: int = 0) -> str:
    """The project's ECS cluster. A project's network has a generation: 0 for the one it was
    made with, one more each time it moves to a new network (`cloud/network_move.py`), whose
    load balancer, target groups and cluster run beside the old ones until the move is done."""
    return f"capstan-{project_id}" + (f"-n{generation}" if generation else "")


def _generation(generation: int) -> str:
    """What a later network generation adds to a load balancer's or target group's id."""
    return f"n{generation}" if generation else ""


def load_balancer_name(project_id: str, generation: int = 0) -> str:
    return short_name("cp", project_id + _generation(generation))


def target_group_name(resource_id: str, generation: int = 0) -> str:
    return short_name("cp", resource_id + _generation(generation))


def repository_name(resource_id: str) -> str:
    return f"capstan/{resource_id}"


def build_log_group(resource_id: str) -> str:
    return f"/capstan/{resource_id}/build"


def runtime_log_group(resource_id: str) -> str:
    return f"/capstan/{resource_id}/runtime"


def parameter_path(resource_id: str) -> str:
    return f"{SSM_PREFIX}/{resource_id}/"


def build_token_parameter(project_id: str, resource_id: str, name: str) -> str:
    """Where a target's builds read a token from (`git`, `dockerhub`: a SecureString the build
    resolves as it starts): under the project, so a project's build role reads its own targets'
    tokens only."""
    return f"{SSM_PREFIX}/build-tokens/{project_id}/{resource_id}/{name}"


def task_role_name(project_id: str) -> str:
    return f"capstan-task-{project_id}"


def execution_role_name(project_id: str) -> str:
    return f"capstan-exec-{project_id}"


def build_role_name(project_id: str) -> str:
    return f"capstan-build-{project_id}"


def scheduler_role_name(project_id: str) -> str:
    return f"capstan-sched-{project_id}"


def schedule_group_name(project_id: str) -> str:
    """The project's EventBridge Scheduler group: its cron jobs' schedules, and the access
    role's scope for them."""
    return f"capstan-{project_id}"


def schedule_name(resource_id: str) -> str:
    return f"capstan-{resource_id}"
