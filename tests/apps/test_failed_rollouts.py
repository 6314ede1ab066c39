"""A deployment whose tasks do not stay up fails with the reason its stopped tasks give, in
Capstan's words: what the user reads in the deployment's `error`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws import names
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import ready, simulator_knobs
from tests.apps.processes import account_sessions
from tests.harness import RunningServer
from tests.polling import wait_until


@pytest.fixture
def quick_breaker() -> Iterator[None]:
    """ECS's circuit breaker trips after a second, not the sandbox's ten."""
    with simulator_knobs(circuit_breaker_seconds=1.0):
        yield


@pytest.mark.usefixtures("quick_breaker")
def test_a_worker_that_exits_fails_its_deployment_with_the_exit_code(
    server: RunningServer,
) -> None:
    org = server.new_org()
    shop = ready(org)
    worker = shop.create_worker()
    simulator().fail_rollouts(worker["id"])  # before its build ends: the app will exit
    try:
        path = f"{shop.base}/workers/{worker['id']}"
        assert shop.wait_for(path, "failed", "running", timeout=90)["status"] == "failed"
        [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
        assert "The app exited with code 1 soon after it started" in deployment["error"]
        assert "Essential container" not in deployment["error"]  # ECS's words stay out
    finally:
        simulator().heal_rollouts(worker["id"])
        org.close()


# What a Deny of the customer's own beside Capstan's policy takes from the build role, and what
# the deployment then says ({project} and {worker}: their ids).
BUILD_REFUSALS = {
    "logs:CreateLogStream": (
        "its build role may not write its log group /capstan/{worker}/build "
        "(logs:CreateLogStream was denied)."
    ),
    "ssm:GetParameters": (
        "its build role may not read the parameter /capstan/build-tokens/{project}/{worker}/git "
        "of its variable GIT_TOKEN (ssm:GetParameters was denied)."
    ),
}


@pytest.mark.parametrize("denied", sorted(BUILD_REFUSALS))
def test_a_build_its_role_is_refused_fails_with_capstans_sentence(
    server: RunningServer, denied: str
) -> None:
    """CodeBuild makes a build's log stream and reads its `PARAMETER_STORE` variables (the git
    token) with the project's build role as the build provisions: refused, the build fails
    before any command runs, and the deployment says so in Capstan's words — CodeBuild's own
    (the role's ARN, the account's id) stay out."""
    org = server.new_org()
    shop = ready(org)
    worker = shop.create_worker()
    path = f"{shop.base}/workers/{worker['id']}"
    try:
        assert shop.wait_for(path, "running", "failed", timeout=90)["status"] == "running"
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        url = org.server.settings.sandbox_cloud_url
        assert url
        with account_sessions(url, account_id) as (customer, _operator):
            # A policy of the customer's own beside Capstan's, which Capstan leaves alone.
            customer.client("iam").put_role_policy(
                RoleName=names.build_role_name(shop.project["id"]),
                PolicyName="refuse-the-build",
                PolicyDocument=json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [{"Effect": "Deny", "Action": denied, "Resource": "*"}],
                    }
                ),
            )
        assert org.api.post(f"{path}/redeploy").status_code == 202

        def redeployed() -> dict[str, Any] | None:
            newest, *older = org.api.get(f"{path}/deployments").json()["deployments"]
            return newest if older and newest["status"] in ("failed", "running") else None

        newest = wait_until(redeployed, timeout=60, what="the redeploy to end")
        assert newest["status"] == "failed"
        said = BUILD_REFUSALS[denied].format(project=shop.project["id"], worker=worker["id"])
        assert newest["error"] == f"Build failed: The build could not start: {said}"
        assert account_id not in newest["error"] and "arn:" not in newest["error"]
    finally:
        org.close()
