"""What an image build leaves in the image and in its record, and what the image can run.

The sandbox runs the buildspec's own commands with simulated git and docker
(`simulator.build_shell`), so the image's layer holds what the buildspec put in the Docker build
context — the tests read it."""

from __future__ import annotations

import base64
import json

import pytest

from capstan.cloud.aws import iam
from capstan.cloud.aws.codebuild import BUILDSPEC, clone_base
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.deploy import Deployer
from capstan_sandbox.cloud import quotas
from capstan_sandbox.cloud.simulator import build_shell, images
from capstan_sandbox.git_host.samples import DISTROLESS_FILES
from tests.cloud.deploy_helpers import (
    GOOD_TOKEN,
    REGISTRY_LOGIN,
    REPO,
    GitHost,
    build,
    new_id,
    settle,
    task_spec,
    web_target,
)
from tests.polling import wait_until

pytestmark = pytest.mark.usefixtures("fast_simulator")
DISTROLESS = "d15701e55d15701e55d15701e55d15701e55d157"
# The clone the driver used before: credentials in the URL (git writes them to .git/config) and
# `.git` left in the Docker build context.
LEAKING_CLONE = """\
      - ORIGIN="${GIT_CLONE_BASE%%://*}://x-access-token:${GIT_TOKEN}@${GIT_CLONE_BASE#*://}"
      - git clone --quiet "$ORIGIN/$SOURCE_REPO.git" source && unset ORIGIN
      - cd source && git checkout --quiet "$SOURCE_COMMIT"
"""


def _secrets() -> list[bytes]:
    basic = base64.b64encode(f"x-access-token:{GOOD_TOKEN}".encode())
    return [GOOD_TOKEN.encode(), basic, REGISTRY_LOGIN.token.encode()]


def _variables(source: GitHost, commit: str) -> dict[str, str]:
    return {
        "SOURCE_REPO": REPO,
        "SOURCE_COMMIT": commit,
        "GIT_TOKEN": GOOD_TOKEN,
        "GIT_API_URL": source.api_url,
        "GIT_CLONE_BASE": clone_base(source.api_url),
        "IMAGE_URI": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/capstan/x:{commit}",
        "DOCKERHUB_USERNAME": REGISTRY_LOGIN.username,
        "DOCKERHUB_TOKEN": REGISTRY_LOGIN.token,
    }


def test_the_git_token_is_in_no_image_layer_and_no_build_record(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    account: str,
) -> None:
    customer, _operator = sessions
    target = web_target(new_id("prj"))
    build_id = build(deployer, target, source)
    finished = deployer.describe_build(build_id)
    assert finished.state == "succeeded" and finished.image_uri, finished

    image = images.image(account, "us-east-1", finished.image_uri)
    assert image is not None
    files = image.files()
    assert "app/Dockerfile" in files and "app/capstan-sandbox.json" in files
    assert not any(name.startswith("app/.git/") for name in files)
    for content in files.values():
        assert not any(secret in content for secret in _secrets())

    record = customer.client("codebuild").batch_get_builds(ids=[build_id])["builds"][0]
    assert not any(secret.decode() in json.dumps(record, default=str) for secret in _secrets())
    variables = {item["name"]: item for item in record["environment"]["environmentVariables"]}
    assert variables["GIT_TOKEN"]["type"] == "PARAMETER_STORE"
    assert variables["GIT_TOKEN"]["value"].startswith("/capstan/build-tokens/")
    assert variables["DOCKERHUB_TOKEN"]["type"] == "PARAMETER_STORE"
    assert variables["DOCKERHUB_USERNAME"]["value"] == REGISTRY_LOGIN.username
    log = [line.message for line in deployer.build_log(build_id)]
    assert not any(secret.decode() in line for line in log for secret in _secrets())
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_the_sandbox_finds_the_token_a_clone_url_leaves_in_the_image(source: GitHost) -> None:
    """The old buildspec, run by the sandbox: git kept the URL's credentials in .git/config and
    the build context took .git along."""
    commit = "1eaced1eaced1eaced1eaced1eaced1eaced1eac"
    source.files[(REPO, commit)] = {"build": "succeed"}
    start = BUILDSPEC.index('      - AUTH="')
    end = BUILDSPEC.index("      - aws ecr get-login-password")
    leaking = BUILDSPEC[:start] + LEAKING_CLONE + BUILDSPEC[end:]
    leaking = leaking.replace("      - printf '\\n.git\\n' >> .dockerignore\n", "")
    outcome = build_shell.run(leaking, _variables(source, commit))
    assert outcome.failed_phase is None, outcome.lines
    [pushed] = outcome.pushed
    layer = images.Image("python:3.12-slim", frozenset({"sh"}), pushed.layer).files()
    assert GOOD_TOKEN.encode() in layer["app/.git/config"]

    fixed = build_shell.run(BUILDSPEC, _variables(source, commit))
    assert fixed.failed_phase is None, fixed.lines
    layer = images.Image("python:3.12-slim", frozenset({"sh"}), fixed.pushed[0].layer).files()
    assert "app/.git/config" not in layer
    assert not any(GOOD_TOKEN.encode() in content for content in layer.values())


def test_an_image_without_curl_or_a_shell_runs_as_a_web_server(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    """A distroless image: the load balancer's health check decides, so it runs; the container
    health check the driver used to add (`curl` under `sh`) fails it, in the sandbox as on ECS."""
    customer, _operator = sessions
    source.files[(REPO, DISTROLESS)] = {"build": "succeed", "image_files": DISTROLESS_FILES}
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    target = web_target(project_id)
    finished = deployer.describe_build(build(deployer, target, source, DISTROLESS))
    assert finished.state == "succeeded" and finished.image_uri, finished
    good = deployer.deploy(task_spec(target, finished.image_uri))
    settle(deployer, target, good)

    ecs = customer.client("ecs")
    definition = ecs.describe_task_definition(taskDefinition=good)["taskDefinition"]
    container = definition["containerDefinitions"][0]
    assert "healthCheck" not in container
    old_check = {
        "command": ["CMD-SHELL", "curl -fsS http://localhost:8080/healthz > /dev/null || exit 1"],
        "interval": 30,
        "timeout": 5,
        "retries": 3,
        "startPeriod": 60,
    }
    keep = ("family", "taskRoleArn", "executionRoleArn", "networkMode", "cpu", "memory")
    old = ecs.register_task_definition(
        **{key: definition[key] for key in keep},
        requiresCompatibilities=["FARGATE"],
        containerDefinitions=[{**container, "healthCheck": old_check}],
    )["taskDefinition"]["taskDefinitionArn"]
    ecs.update_service(
        cluster=f"capstan-{project_id}",
        service=f"capstan-{target.resource_id}",
        taskDefinition=old,
    )
    rollout = wait_until(
        lambda: (r := deployer.describe_rollout(target, old)).state != "in_progress" and r,
        timeout=60,
    )
    assert rollout.state == "failed" and "circuit breaker" in (rollout.reason or "")
    assert "failed their container's health check" in (rollout.reason or "")
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_a_resync_writes_no_role_policy_again(access: AwsSession) -> None:
    """IAM's writes are rate-limited account-wide: roles already right are only read."""
    written: list[str] = []
    access.client("iam").meta.events.register(
        "before-call.iam.PutRolePolicy",
        lambda **_: written.append("PutRolePolicy"),
    )
    project_id = new_id("prj")
    iam.ensure_project_roles(access, project_id)
    assert len(written) == 2  # the execution and build roles' policies
    iam.ensure_project_roles(access, project_id)
    iam.put_task_grants(access, project_id, [])
    assert len(written) == 2
    iam.delete_project_roles(access, project_id)


def test_anonymous_docker_hub_pulls_meet_their_limit_and_signed_in_ones_do_not(
    source: GitHost,
) -> None:
    commit = "d0c4e2d0c4e2d0c4e2d0c4e2d0c4e2d0c4e2d0c4"
    source.files[(REPO, commit)] = {"build": "succeed"}
    anonymous = {
        name: value for name, value in _variables(source, commit).items() if "DOCKERHUB" not in name
    }
    before = quotas.configure(dockerhub_anonymous_pulls_per_hour=0)
    try:
        limited = build_shell.run(BUILDSPEC, anonymous)
        assert limited.failed_phase == "BUILD"
        assert limited.error is not None and "toomanyrequests" in limited.error
        assert "python:3.12-slim" in limited.error
        signed_in = build_shell.run(BUILDSPEC, _variables(source, commit))
        assert signed_in.failed_phase is None, signed_in.lines
        assert not any(REGISTRY_LOGIN.token in line for line in signed_in.lines)
    finally:
        quotas.configure(
            dockerhub_anonymous_pulls_per_hour=before.dockerhub_anonymous_pulls_per_hour
        )
