"""The largest task definition Capstan builds from what its API takes fits ECS's 65,536 bytes with
2 KiB to spare: a worker with 200 variables whose names hold 16 KiB, the most variables that
reference a database, and a start command at its limit. Counted with every name the cloud gives
at its longest, and registered in the sandbox (which refuses a larger one as ECS does) through the
driver's own path."""

from __future__ import annotations

from typing import Any

from capstan.apps import schemas
from capstan.cloud.aws import ecs, iam, names, rds, ssm
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.databases import PASSWORD_VARIABLE, DatabaseConnection
from capstan.cloud.task_definition_size import (
    TASK_DEFINITION_BYTES,
    definition_bytes,
)
from capstan.projects.service import known_regions
from tests.cloud.deploy_helpers import largest_start_command, new_id, variable_names

# Room kept for what ECS may count beyond the request: the definition's tags (Capstan's take 214
# bytes), or what ECS adds to a definition it keeps (its ARN, revision, status, attributes).
MARGIN = 2 * 1024
ACCOUNT = "123456789012"
# Each reference is a whole connection URL: their names are the shortest, leaving the 16 KiB of
# names to the secret variables, which hold each name twice.
REFERENCES = [chr(ord("A") + i) for i in range(schemas.MAX_DATABASE_VARIABLES)]


def _largest_environment() -> tuple[dict[str, str], list[str]]:
    """The secret variables (name -> value) and the references of the largest environment the
    API takes, checked by the API's own model."""
    secret_names = variable_names(
        schemas.MAX_VARIABLES - len(REFERENCES), schemas.MAX_NAMES_BYTES - len(REFERENCES)
    )
    listed: list[dict[str, Any]] = [{"name": name, "value": "v"} for name in secret_names]
    listed += [{"name": name, "value_from": {"database": new_id("dbs")}} for name in REFERENCES]
    schemas.Environment.model_validate({"environment": listed})
    return {name: "v" for name in secret_names}, REFERENCES


def _longest_connection(region: str, partition: str) -> DatabaseConnection:
    """The longest connection `DatabaseDriver.connection` makes: a user and database name of 63
    characters, and RDS's address `<instance>.<12 characters>.<region>.rds.amazonaws.com`."""
    address = f"{rds.instance_identifier(new_id('dbs'))}.{'c' * 12}.{region}.rds.amazonaws.com"
    url = f"postgresql://{'u' * 63}@{address}:{rds.PORT}/{'d' * 63}?sslmode=require"
    secret = f"rds!db-{'0' * 8}-{'0' * 4}-{'0' * 4}-{'0' * 4}-{'0' * 12}-AbCdEf"
    return DatabaseConnection(
        url=url, secret_arn=f"arn:{partition}:secretsmanager:{region}:{ACCOUNT}:secret:{secret}"
    )


def _container(
    parameters: dict[str, str], connection: DatabaseConnection, region: str, resource_id: str
) -> ecs.ContainerSpec:
    """A worker's container as `Deployer.deploy` makes it, its image pinned by digest."""
    return ecs.ContainerSpec(
        image=f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/"
        f"{names.repository_name(resource_id)}@sha256:{'f' * 64}",
        cpu=4096,
        memory=30720,
        secrets={**parameters, PASSWORD_VARIABLE: connection.password_from},
        plain=dict.fromkeys(REFERENCES, connection.url),
        log_group=names.runtime_log_group(resource_id),
        region=region,
        port=None,
        health_path=None,
        command=largest_start_command(),
    )


def test_the_largest_task_definition_the_api_allows_keeps_2_kib_to_spare() -> None:
    region = max(sorted(known_regions()), key=len)  # a project's region is one of these
    project_id, resource_id, version = new_id("prj"), new_id("svc"), new_id("dep")
    variables, _ = _largest_environment()
    prefix = ssm.version_path(resource_id, version)
    container = _container(
        {name: prefix + name for name in variables},  # as put_environment answers
        _longest_connection(region, "aws"),
        region,
        resource_id,
    )
    role = f"arn:aws:iam::{ACCOUNT}:role/capstan/capstan-%s-{project_id}"
    definition = ecs.task_definition(
        resource_id, container, task_role_arn=role % "task", execution_role_arn=role % "exec"
    )
    size = definition_bytes(definition)
    assert size == 63_281, "apps/schemas.py gives the figures: update them"
    assert size <= TASK_DEFINITION_BYTES - MARGIN


def test_the_sandbox_registers_a_worker_at_the_apis_maxima(
    access: AwsSession, sessions: tuple[AwsSession, AwsSession]
) -> None:
    """Through the driver: the parameters written by `ssm.put_environment`, named as it answers,
    and the definition registered by `ecs.ensure_task_definition` with the project's roles (read
    back by the account's administrator: the access role reads no task definition)."""
    customer, _operator = sessions
    project_id, resource_id, deployment_id = new_id("prj"), new_id("svc"), new_id("dep")
    region = access.endpoint.region
    roles = iam.ensure_project_roles(access, project_id)
    variables, references = _largest_environment()
    stored = ssm.put_environment(access, project_id, resource_id, variables, deployment_id)
    container = _container(
        stored.parameters, _longest_connection(region, access.partition()), region, resource_id
    )
    arn = ecs.ensure_task_definition(
        access,
        project_id,
        resource_id,
        deployment_id,
        container,
        task_role_arn=roles["task"],
        execution_role_arn=roles["execution"],
    )
    described = customer.client("ecs").describe_task_definition(taskDefinition=arn)
    (registered,) = described["taskDefinition"]["containerDefinitions"]
    assert len(registered["secrets"]) == len(variables) + 1  # and PGPASSWORD
    assert sorted(item["name"] for item in registered["environment"]) == references
    assert registered["command"] == [container.command]
