"""CodeBuild's concurrency quota in the sandbox, as AWS applies it: builds past the quota wait in
phase QUEUED (the driver reads them as in progress) until one ends; with a quota of 0 StartBuild
is refused, and the driver says which quota. And IAM's propagation: a build CodeBuild refused for
a role made moments ago is started again, within a bound."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession
from capstan.cloud.builds import ROLE_PROPAGATION, Build
from capstan.cloud.credentials import utcnow
from capstan.cloud.deploy import BuildSpec, Deployer, Target
from capstan.cloud.errors import QuotaExceededError
from capstan.sandbox.cloud import quotas
from capstan.sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import (
    COMMIT,
    DOMAIN,
    GOOD_TOKEN,
    REPO,
    GitHost,
    new_id,
    web_target,
)
from tests.cloud.deploy_helpers import REGISTRY_LOGIN as LOGIN
from tests.polling import wait_until

pytestmark = pytest.mark.usefixtures("fast_simulator")


@pytest.fixture
def one_build_at_a_time() -> Iterator[None]:
    before = quotas.configure(codebuild_concurrent_builds=1)
    knobs = simulator().configure(build_seconds=1.0)
    yield
    simulator().configure(build_seconds=knobs.build_seconds)
    quotas.configure(codebuild_concurrent_builds=before.codebuild_concurrent_builds)


def spec_of(target: Target, source: GitHost) -> BuildSpec:
    return BuildSpec(target, REPO, COMMIT, source.api_url, GOOD_TOKEN, None, registry_login=LOGIN)


def phases(customer: AwsSession, build_id: str) -> dict[str, dict[str, str]]:
    (build,) = customer.client("codebuild").batch_get_builds(ids=[build_id])["builds"]
    return {phase["phaseType"]: phase for phase in build["phases"]} | {
        "current": {"phaseType": build["currentPhase"]}
    }


def test_a_build_past_the_concurrency_waits_queued_and_then_runs(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    one_build_at_a_time: None,
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    first, second = web_target(project_id), web_target(project_id)
    started = [deployer.start_build(spec_of(t, source)) for t in (first, second)]
    wait_until(lambda: phases(customer, started[0])["current"]["phaseType"] != "QUEUED")
    assert phases(customer, started[1])["current"]["phaseType"] == "QUEUED"
    assert deployer.describe_build(started[1]).state == "in_progress"  # queued is no failure

    done = [
        wait_until(lambda b=b: (d := deployer.describe_build(b)).state != "in_progress" and d)
        for b in started
    ]
    assert [build.state for build in done] == ["succeeded", "succeeded"]
    # The second left the queue only when the first had ended.
    (first_build,) = customer.client("codebuild").batch_get_builds(ids=[started[0]])["builds"]
    assert phases(customer, started[1])["QUEUED"]["endTime"] >= first_build["endTime"]


def test_no_concurrency_refuses_the_build_with_the_quota_named(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, _operator = sessions
    target = web_target(new_id("prj"))
    spec = spec_of(target, source)
    before = quotas.configure(codebuild_concurrent_builds=0)
    try:
        with pytest.raises(QuotaExceededError) as reached:
            deployer.start_build(spec)
        assert "concurrent CodeBuild builds" in reached.value.message
        with pytest.raises(ClientError) as refused:  # AWS's own answer, as the driver met it
            customer.client("codebuild").start_build(projectName=f"capstan-{target.resource_id}")
        assert refused.value.response["Error"]["Code"] == "AccountLimitExceededException"
        assert refused.value.response["Error"]["Message"] == (
            "Cannot have more than 0 builds in queue for the account"
        )
    finally:
        quotas.configure(codebuild_concurrent_builds=before.codebuild_concurrent_builds)
    assert deployer.start_build(spec)  # raised: it starts


@pytest.fixture
def slow_iam() -> Iterator[None]:
    """A new role stays unusable by CodeBuild for 1.5 s, as IAM's propagation in AWS."""
    before = simulator().configure(iam_propagation_seconds=1.5)
    yield
    simulator().configure(iam_propagation_seconds=before.iam_propagation_seconds)


def raw_build(customer: AwsSession, build_id: str) -> dict[str, Any]:
    (build,) = customer.client("codebuild").batch_get_builds(ids=[build_id])["builds"]
    return dict(build)


def test_a_build_refused_for_a_role_too_new_is_started_again_until_it_runs(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    slow_iam: None,
) -> None:
    customer, _operator = sessions
    target = web_target(new_id("prj"))  # a new project: its build role is made now
    first = deployer.start_build(spec_of(target, source))
    refused = wait_until(
        lambda: (b := raw_build(customer, first))["buildStatus"] != "IN_PROGRESS" and b
    )
    # What the driver met before: CodeBuild's refusal, a failed build.
    assert refused["buildStatus"] == "FAILED"
    assert any(
        "sts:AssumeRole" in context["message"]
        for phase in refused["phases"]
        for context in phase.get("contexts", [])
    )
    followed = [first]

    def finished() -> Build | None:
        build = deployer.describe_build(followed[-1])
        if build.id != followed[-1]:
            followed.append(build.id)
        return build if build.state != "in_progress" else None

    done = wait_until(finished, timeout=30)
    assert done.state == "succeeded" and done.image_uri
    assert len(followed) >= 2  # started again, under a new id


def test_a_role_still_refused_minutes_after_it_was_made_fails_the_build(
    access: AwsSession,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    slow_iam: None,
) -> None:
    customer, operator = sessions
    later = Deployer(
        access, operator, domain=DOMAIN, clock=lambda: utcnow() + ROLE_PROPAGATION + timedelta(1)
    )
    target = web_target(new_id("prj"))
    first = later.start_build(spec_of(target, source))
    wait_until(lambda: raw_build(customer, first)["buildStatus"] == "FAILED")
    failed = later.describe_build(first)
    assert failed.state == "failed" and failed.id == first
    assert failed.error and failed.error.startswith("CodeBuild could not assume the build role")
    assert "trusts codebuild.amazonaws.com" in failed.error
