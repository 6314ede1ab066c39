"""A task starts only if its execution role may read every secret its task definition names, as
ECS's agent reads them before any container runs; and a project's execution role reads its own
project's parameters only."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from capstan.cloud.aws import iam
from capstan.cloud.aws.names import tag_list
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import policy
from capstan_sandbox.cloud.authorization import policies_of_role
from capstan_sandbox.cloud.role_checks import RoleRequests
from capstan_sandbox.cloud.simulator import registry, task_start
from tests.sandbox.aws import access_role, iam_propagated, new_account


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession, AwsSession]]:
    """The account, its administrator, and Capstan's access role there (which makes the roles)."""
    account = new_account(endpoint, "secrets")
    with organization_access(endpoint, account) as session, access_role(endpoint, account) as role:
        yield account, session, role


def _definition(
    execution_role_arn: str, *value_from: str, image: str = "nginx:latest"
) -> SimpleNamespace:
    """A task definition's parts the agent reads: its role, its secrets, its image."""
    secrets = [{"name": f"V{n}", "valueFrom": value} for n, value in enumerate(value_from)]
    return SimpleNamespace(
        execution_role_arn=execution_role_arn,
        container_definitions=[{"name": "app", "image": image, "secrets": secrets}],
    )


def _parameter(session: AwsSession, project_id: str, resource_id: str) -> str:
    name = f"/capstan/{resource_id}/v1/DATABASE_URL"
    session.client("ssm").put_parameter(
        Name=name, Value="x", Type="SecureString", Tags=tag_list(project_id, resource_id)
    )
    return name


def test_a_projects_tasks_read_their_own_projects_parameters_only(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_own")
    iam_propagated()
    own = _parameter(session, "prj_own", "svc_own")
    other = _parameter(session, "prj_other", "svc_other")
    region = session.endpoint.region

    assert task_start.refusal(account, region, _definition(roles["execution"], own)) is None
    refused = task_start.refusal(account, region, _definition(roles["execution"], own, other))
    assert refused is not None
    assert refused.startswith("ResourceInitializationError: unable to pull secrets")
    assert f"ssm:GetParameters on resource: arn:aws:ssm:{region}:{account}:parameter{other}" in (
        refused
    )


def test_a_secret_the_role_has_no_grant_for_stops_the_task(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """A database's secret (Secrets Manager) is read only once the database's grant is on the
    execution role."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_db")
    iam_propagated()
    arn = _database_secret(session, "capstan-db-1234")
    region = session.endpoint.region
    definition = _definition(roles["execution"], f"{arn}:password::")

    refused = task_start.refusal(account, region, definition)
    assert refused is not None and "secretsmanager:GetSecretValue" in refused
    iam.grant_database_secret(role, "prj_db", "db_1234", arn)
    iam_propagated()
    assert task_start.refusal(account, region, definition) is None


def _database_secret(session: AwsSession, identifier: str) -> str:
    created = session.client("rds").create_db_instance(
        DBInstanceIdentifier=identifier,
        Engine="postgres",
        DBInstanceClass="db.t4g.micro",
        AllocatedStorage=20,
        MasterUsername="app",
        ManageMasterUserPassword=True,
    )
    return str(created["DBInstance"]["MasterUserSecret"]["SecretArn"])


def test_no_grant_reaches_a_database_capstan_did_not_make(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """RDS names its secrets itself (`rds!db-…`), so the boundary tells Capstan's databases'
    secrets from the account's other ones by the instance RDS tags each with: even a grant
    written on a Capstan role cannot read the master password of the account's own database."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_rds")
    iam_propagated()
    region = session.endpoint.region
    theirs = _database_secret(session, "orders-production")
    ours = _database_secret(session, "capstan-db-0001")
    iam.grant_database_secret(role, "prj_rds", "db_theirs", theirs)
    iam.grant_database_secret(role, "prj_rds", "db_0001", ours)
    iam_propagated()

    assert task_start.refusal(account, region, _definition(roles["execution"], ours)) is None
    refused = task_start.refusal(account, region, _definition(roles["execution"], theirs))
    assert refused is not None and "permissions boundary" in refused


def _repository(session: AwsSession, project_id: str, resource_id: str) -> str:
    """An image URI in the project's repository for the target, as Capstan makes them."""
    created = session.client("ecr").create_repository(
        repositoryName=f"capstan/{resource_id}", tags=tag_list(project_id, resource_id)
    )
    return f"{created['repository']['repositoryUri']}:release-1"


def test_a_projects_tasks_pull_their_own_projects_images_only(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """Repositories are named by target, not project: the execution role's grant is the
    repository's `capstan:project` tag, so another project's image is refused as ECR refuses
    it (a 403 on the manifest) and the task stops before it runs."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_pull")
    iam_propagated()
    own = _repository(session, "prj_pull", "svc_pull_own")
    other = _repository(session, "prj_pull_other", "svc_pull_other")
    region = session.endpoint.region

    assert task_start.refusal(account, region, _definition(roles["execution"], image=own)) is None
    refused = task_start.refusal(account, region, _definition(roles["execution"], image=other))
    assert refused is not None and refused.startswith("CannotPullContainerError")
    assert "403 Forbidden" in refused and "svc_pull_other" in refused


def test_a_projects_builds_push_to_their_own_projects_repositories_only(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """A build runs the project's own commands with the build role: it may push to its
    project's repositories, and `docker push` to another project's is denied in ECR's words."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_push")
    iam_propagated()
    own = _repository(session, "prj_push", "svc_push_own")
    other = _repository(session, "prj_push_other", "svc_push_other")
    build = {"serviceRole": roles["build"], "id": "capstan-svc_push_own:1"}

    assert registry.push_denial(account, build, own) is None
    denied = registry.push_denial(account, build, other)
    assert denied is not None
    assert "is not authorized to perform: ecr:BatchCheckLayerAvailability" in denied
    assert "repository/capstan/svc_push_other" in denied


def test_a_tasks_log_stream_is_made_in_capstans_log_groups_only(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """The `awslogs` driver makes the container's log stream with the execution role before
    the container starts: in a `/capstan/*` group it may (the boundary's `WriteProjectLogs`),
    in another group the task stops."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_logs")
    iam_propagated()
    region = session.endpoint.region

    def logging_to(group: str) -> SimpleNamespace:
        definition = _definition(roles["execution"])
        definition.container_definitions[0]["logConfiguration"] = {
            "logDriver": "awslogs",
            "options": {
                "awslogs-group": group,
                "awslogs-region": region,
                "awslogs-stream-prefix": "app",
            },
        }
        return definition

    assert task_start.refusal(account, region, logging_to("/capstan/svc_logs/runtime")) is None
    refused = task_start.refusal(account, region, logging_to("/aws/ecs/orders"))
    assert refused is not None and "failed to create Cloudwatch log stream" in refused
    assert "logs:CreateLogStream" in refused


def test_a_projects_roles_decrypt_only_on_a_secret_stores_behalf_by_their_own_policies(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """SecureString parameters (and a database's secret) are decrypted by SSM (and Secrets
    Manager) on the role's behalf. The boundary says so; each role's own policy says it too, so
    a reviewer reading the role sees no decrypt of any key on its own."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_kms")
    iam_propagated()
    key = (
        f"arn:aws:kms:{session.endpoint.region}:{account}:key/0b8c2e66-1111-2222-3333-444455556666"
    )

    def own_policies_allow(purpose: str, via: str | None) -> bool:
        found = policies_of_role(account, "aws", roles[purpose].rsplit("/", 1)[-1])
        assert found is not None
        context = {"kms:viaservice": [via]} if via else {}
        request = policy.Request(action="kms:Decrypt", resource=key, context=context)
        # Each state IAM may answer from, its identity policies alone (no boundary).
        return policy.authorize_in_every(
            [(identity, None) for identity, _ in found], request
        ).allowed

    for purpose in ("execution", "build"):
        assert not own_policies_allow(purpose, None)
        assert own_policies_allow(purpose, "ssm.us-east-1.amazonaws.com")
        assert not own_policies_allow(purpose, "s3.us-east-1.amazonaws.com")
    assert own_policies_allow("execution", "secretsmanager.us-east-1.amazonaws.com")


def test_a_projects_builds_write_build_logs_and_its_tasks_runtime_logs_only(
    admin: tuple[str, AwsSession, AwsSession],
) -> None:
    """A build's commands hold the build role's credentials: they may write build logs, never a
    service's runtime log (where they could forge an app's lines). The execution role writes
    its tasks' runtime logs, never a build's."""
    account, session, role = admin
    roles = iam.ensure_project_roles(role, "prj_split")
    iam_propagated()
    region = session.endpoint.region

    def may_write(purpose: str, group: str) -> bool:
        stream = f"arn:aws:logs:{region}:{account}:log-group:{group}:log-stream:app/app/1"
        requests = RoleRequests(account, roles[purpose])
        return all(
            requests.denial(action, stream, "log-stream") is None
            for action in ("logs:CreateLogStream", "logs:PutLogEvents")
        )

    assert may_write("build", "/capstan/svc_split/build")
    assert not may_write("build", "/capstan/svc_split/runtime")
    assert not may_write("build", "/capstan/svc_other/runtime")
    assert may_write("execution", "/capstan/svc_split/runtime")
    assert not may_write("execution", "/capstan/svc_split/build")
    assert not may_write("execution", "/aws/ecs/orders")
