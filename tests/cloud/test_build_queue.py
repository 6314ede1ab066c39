"""CodeBuild's concurrency quota in the sandbox, as AWS applies it: builds past the quota wait in
phase QUEUED (the driver reads them as in progress) until one ends; with a quota of 0 StartBuild
is refused, and the driver says which quota. And IAM's propagation: CodeBuild refuses a project
or a build for a role made moments ago; the driver tries again, within a bound, then names the
role."""

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
from capstan.cloud.errors import QuotaExceededError, RetryableCloudError, TerminalCloudError
from capstan_sandbox.cloud import quotas
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import (
    COMMIT,
    DOMAIN,
    GOOD_TOKEN,
    REPO,
    GitHost,
    new_id,
    start_build,
    web_target,
)
from tests.cloud.deploy_helpers import REGISTRY_LOGIN as LOGIN
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated

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
    started = [start_build(deployer, spec_of(t, source)) for t in (first, second)]
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

    def refusal() -> QuotaExceededError | None:
        try:
            deployer.start_build(spec)
        except RetryableCloudError:  # the project's new build role: not usable yet
            return None
        except QuotaExceededError as reached:
            return reached
        raise AssertionError("the build started")

    try:
        reached = wait_until(refusal, every=0.2)
        assert "concurrent CodeBuild builds" in reached.message
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
    """IAM takes half a minute to make a new role usable (more than a test takes to reach its
    first use, however loaded the machine); `iam_propagated` moves its clock past that."""
    before = simulator().configure(iam_propagation_seconds=30.0)
    yield
    simulator().configure(iam_propagation_seconds=before.iam_propagation_seconds)


def raw_build(customer: AwsSession, build_id: str) -> dict[str, Any]:
    (build,) = customer.client("codebuild").batch_get_builds(ids=[build_id])["builds"]
    return dict(build)


def test_a_project_refused_for_its_new_build_role_is_made_once_iam_lets_codebuild_assume_it(
    deployer: Deployer, source: GitHost, slow_iam: None
) -> None:
    """CodeBuild's CreateProject refuses a role it cannot assume yet, in its words; the driver
    says it may succeed later (the reconciler backs off), and it does."""
    target = web_target(new_id("prj"))  # a new project: its build role is made now
    with pytest.raises(RetryableCloudError) as refused:
        deployer.start_build(spec_of(target, source))
    assert refused.value.code == "build_role_not_ready"
    assert refused.value.detail and (
        "InvalidInputException" in refused.value.detail
        and "CodeBuild is not authorized to perform: sts:AssumeRole on arn:aws:iam::"
        in refused.value.detail
    )
    iam_propagated()
    started = start_build(deployer, spec_of(target, source))
    done = wait_until(lambda: (b := deployer.describe_build(started)).state != "in_progress" and b)
    assert done.state == "succeeded"


def test_a_build_role_codebuild_still_cannot_assume_minutes_after_it_was_made_is_named(
    access: AwsSession,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    slow_iam: None,
) -> None:
    _customer, operator = sessions
    later = Deployer(
        access, operator, domain=DOMAIN, clock=lambda: utcnow() + ROLE_PROPAGATION + timedelta(1)
    )
    target = web_target(new_id("prj"))
    with pytest.raises(TerminalCloudError) as failed:
        later.start_build(spec_of(target, source))
    assert failed.value.code == "build_role_unusable"
    assert failed.value.message.startswith(
        f"CodeBuild could not assume the build role capstan-build-{target.project_id} more "
    )
    assert "arn:" not in failed.value.message
    assert "trusts codebuild.amazonaws.com" in failed.value.message


def _delete_build_role(customer: AwsSession, target: Target) -> None:
    """Someone deletes the project's build role: the driver's next build makes it again (a new
    role, which IAM has not propagated yet) while the build project stays."""
    iam = customer.client("iam")
    name = f"capstan-build-{target.project_id}"
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    iam.delete_role(RoleName=name)


def test_a_build_refused_for_a_role_too_new_is_started_again_until_it_runs(
    access: AwsSession,
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    slow_iam: None,
) -> None:
    customer, operator = sessions
    target = web_target(new_id("prj"))
    with pytest.raises(RetryableCloudError):  # made with its project: not usable yet
        deployer.start_build(spec_of(target, source))
    iam_propagated()
    start_build(deployer, spec_of(target, source))
    _delete_build_role(customer, target)
    deployer = Deployer(access, operator, domain=DOMAIN)  # a later pass: it knows no roles
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
    again = deployer.describe_build(first)
    assert again.state == "in_progress" and again.id != first  # started again, under a new id
    followed = [first, again.id]
    iam_propagated()

    def finished() -> Build | None:
        build = deployer.describe_build(followed[-1])
        if build.id != followed[-1]:
            followed.append(build.id)
        return build if build.state != "in_progress" else None

    done = wait_until(finished, timeout=30)
    assert done.state == "succeeded" and done.image_uri


def test_a_role_still_refused_minutes_after_it_was_made_fails_the_build(
    access: AwsSession,
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    slow_iam: None,
) -> None:
    customer, operator = sessions
    target = web_target(new_id("prj"))
    with pytest.raises(RetryableCloudError):
        deployer.start_build(spec_of(target, source))
    iam_propagated()
    start_build(deployer, spec_of(target, source))
    _delete_build_role(customer, target)
    later = Deployer(
        access, operator, domain=DOMAIN, clock=lambda: utcnow() + ROLE_PROPAGATION + timedelta(1)
    )
    first = later.start_build(spec_of(target, source))
    wait_until(lambda: raw_build(customer, first)["buildStatus"] == "FAILED")
    failed = later.describe_build(first)
    assert failed.state == "failed" and failed.id == first
    assert failed.error and failed.error.startswith("CodeBuild could not assume the build role")
    assert "trusts codebuild.amazonaws.com" in failed.error
