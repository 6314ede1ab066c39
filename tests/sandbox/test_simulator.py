"""The sandbox simulator, through plain boto3 calls as any AWS client would make them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.codebuild import BUILDSPEC, clone_base, explain_failure
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import GOOD_TOKEN, GitHost, git_host
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated, new_account


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "simulator")) as session:
        yield session


@pytest.fixture
def source() -> Iterator[GitHost]:
    with git_host() as host:
        host.files[("acme/app", "c1")] = {"build": "succeed"}
        yield host


@pytest.fixture(autouse=True)
def restore_knobs() -> Iterator[None]:
    before = simulator().knobs
    yield
    simulator().configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})


def _project(admin: AwsSession, name: str, *, logs_of: str | None = None) -> None:
    """A build project `name` whose service role may push images and write the log group
    `logs_of` (by default its own, `/<name>`)."""
    admin.client("logs").create_log_group(logGroupName=f"/{name}")
    admin.client("ecr").create_repository(repositoryName=name)
    # The build's service role pushes the image (the sandbox evaluates each push as IAM would).
    iam = admin.client("iam")
    iam.create_role(
        RoleName="b",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "codebuild.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )
    iam.put_role_policy(
        RoleName="b",
        PolicyName="push",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "ecr:*", "Resource": "*"},
                    # CodeBuild makes the build's log stream with the role, and writes to it.
                    {
                        "Effect": "Allow",
                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                        "Resource": f"arn:aws:logs:*:*:log-group:{logs_of or '/' + name}:*",
                    },
                ],
            }
        ),
    )
    iam_propagated()
    admin.client("codebuild").create_project(
        name=name,
        source={"type": "NO_SOURCE", "buildspec": BUILDSPEC},
        artifacts={"type": "NO_ARTIFACTS"},
        environment={
            "type": "LINUX_CONTAINER",
            "image": "aws/codebuild/standard:7.0",
            "computeType": "BUILD_GENERAL1_SMALL",
        },
        serviceRole=f"arn:aws:iam::{admin.client('sts').get_caller_identity()['Account']}:role/b",
        logsConfig={"cloudWatchLogs": {"status": "ENABLED", "groupName": f"/{name}"}},
    )


def _start_image_build(admin: AwsSession, source: GitHost) -> str:
    """Start project `app`'s build of `acme/app` at `c1` into its repository; the build's id."""
    account = admin.client("sts").get_caller_identity()["Account"]
    variables = {
        "GIT_TOKEN": GOOD_TOKEN,
        "GIT_API_URL": source.api_url,
        "GIT_CLONE_BASE": clone_base(source.api_url),
        "SOURCE_REPO": "acme/app",
        "SOURCE_COMMIT": "c1",
        "IMAGE_URI": f"{account}.dkr.ecr.us-east-1.amazonaws.com/app:c1",
        "DOCKERHUB_USERNAME": "capstan-tests",
    }
    return str(
        admin.client("codebuild").start_build(
            projectName="app",
            environmentVariablesOverride=[
                {"name": name, "value": value, "type": "PLAINTEXT"}
                for name, value in variables.items()
            ],
        )["build"]["id"]
    )


def _finished(codebuild: Any, build_id: str) -> dict[str, Any]:
    """The build, once it is no longer in progress."""
    return wait_until(
        lambda: (
            (b := codebuild.batch_get_builds(ids=[build_id])["builds"][0])["buildStatus"]
            != "IN_PROGRESS"
            and b
        )
    )


def _failed_phase(build: dict[str, Any]) -> dict[str, Any]:
    [failed] = [phase for phase in build["phases"] if phase.get("phaseStatus") == "FAILED"]
    return failed


def test_a_build_stays_in_progress_until_build_seconds_pass(
    admin: AwsSession, source: GitHost
) -> None:
    simulator().configure(build_seconds=1.0)
    _project(admin, "app")
    codebuild = admin.client("codebuild")
    started = time.monotonic()
    build_id = _start_image_build(admin, source)
    assert codebuild.batch_get_builds(ids=[build_id])["builds"][0]["buildStatus"] == "IN_PROGRESS"
    build = _finished(codebuild, build_id)
    assert time.monotonic() - started >= 1.0
    assert build["buildStatus"] == "SUCCEEDED"
    assert build["logs"]["groupName"] == "/app"
    variables = {v["name"]: v["value"] for v in build["environment"]["environmentVariables"]}
    assert variables["SOURCE_COMMIT"] == "c1"
    images = admin.client("ecr").describe_images(repositoryName="app")["imageDetails"]
    assert images[0]["imageTags"] == ["c1"]
    events = admin.client("logs").get_log_events(
        logGroupName="/app", logStreamName=build["logs"]["streamName"], startFromHead=True
    )["events"]
    # The buildspec's own commands ran: the image was built and pushed by them.
    messages = [event["message"] for event in events]
    assert '[Container] Running command docker build -f "$DOCKERFILE_PATH" -t "$IMAGE_URI" .' in (
        messages
    )
    assert any(message.startswith("c1: digest: sha256:") for message in messages)


def test_a_build_whose_role_may_not_read_a_parameter_fails_as_it_provisions(
    admin: AwsSession, source: GitHost
) -> None:
    """CodeBuild resolves `PARAMETER_STORE` variables with the build's service role: a
    parameter the role may not read (here the role has ECR's actions only) fails the build in
    PROVISIONING, in CodeBuild's words, and nothing is pushed."""
    simulator().configure(build_seconds=0.0)
    _project(admin, "app")
    account = admin.client("sts").get_caller_identity()["Account"]
    admin.client("ssm").put_parameter(
        Name="/capstan/build-tokens/app/git", Value=GOOD_TOKEN, Type="SecureString"
    )
    plain = {
        "GIT_API_URL": source.api_url,
        "GIT_CLONE_BASE": clone_base(source.api_url),
        "SOURCE_REPO": "acme/app",
        "SOURCE_COMMIT": "c1",
        "IMAGE_URI": f"{account}.dkr.ecr.us-east-1.amazonaws.com/app:c1",
    }
    codebuild = admin.client("codebuild")
    build_id = codebuild.start_build(
        projectName="app",
        environmentVariablesOverride=[
            {
                "name": "GIT_TOKEN",
                "value": "/capstan/build-tokens/app/git",
                "type": "PARAMETER_STORE",
            },
            *({"name": k, "value": v, "type": "PLAINTEXT"} for k, v in plain.items()),
        ],
    )["build"]["id"]
    build = _finished(codebuild, build_id)
    assert build["buildStatus"] == "FAILED"
    failed = _failed_phase(build)
    assert failed["phaseType"] == "PROVISIONING"
    message = failed["contexts"][0]["message"]
    assert "is not authorized to perform: ssm:GetParameters" in message
    assert "parameter/capstan/build-tokens/app/git" in message
    assert explain_failure(message) == (
        "The build could not start: its build role may not read the parameter "
        "/capstan/build-tokens/app/git of its variable GIT_TOKEN (ssm:GetParameters was denied)."
    )
    # CodeBuild's own refusal is in its `[Container]` lines only, as CodeBuild logs a phase's
    # context: no line of the build's output (which Capstan may show) carries it.
    events = admin.client("logs").get_log_events(
        logGroupName="/app", logStreamName=build["logs"]["streamName"], startFromHead=True
    )["events"]
    said = [event["message"] for event in events]
    assert f"[Container] Phase context status code: CLIENT_ERROR Message: {message}" in said
    assert all(line.startswith("[Container]") for line in said)
    assert admin.client("ecr").describe_images(repositoryName="app")["imageDetails"] == []


def test_a_build_whose_role_may_not_write_its_log_group_fails_as_it_provisions(
    admin: AwsSession, source: GitHost
) -> None:
    """CodeBuild makes the build's log stream with the build's service role as the build
    provisions: a role that may write another group only (`/other`) fails the build there, in
    CodeBuild's words, before any command runs (nothing is pushed, no line is written); Capstan
    says it in its own."""
    simulator().configure(build_seconds=0.0)
    _project(admin, "app", logs_of="/other")
    codebuild = admin.client("codebuild")
    build_id = _start_image_build(admin, source)
    build = _finished(codebuild, build_id)
    assert build["buildStatus"] == "FAILED"
    failed = _failed_phase(build)
    assert failed["phaseType"] == "PROVISIONING"
    assert failed["contexts"][0]["statusCode"] == "ACCESS_DENIED"
    message = failed["contexts"][0]["message"]
    assert message.startswith("Service role arn:aws:iam::")
    assert "does not allow AWS CodeBuild to create Amazon CloudWatch Logs log streams" in message
    assert "is not authorized to perform: logs:CreateLogStream on resource: " in message
    assert admin.client("ecr").describe_images(repositoryName="app")["imageDetails"] == []
    streams = admin.client("logs").describe_log_streams(logGroupName="/app")["logStreams"]
    assert streams == []
    assert explain_failure(message) == (
        "The build could not start: its build role may not write its log group /app "
        "(logs:CreateLogStream was denied)."
    )


def test_a_site_build_whose_role_may_not_write_its_bucket_fails_its_sync(
    admin: AwsSession, source: GitHost
) -> None:
    """A static website's `aws s3 sync` runs as the build's service role: a role without the
    bucket (here: ECR's actions only) fails the build in POST_BUILD, in the CLI's words, and
    the bucket stays empty."""
    simulator().configure(build_seconds=0.0)
    _project(admin, "site")
    admin.client("s3").create_bucket(Bucket="capstan-site-test")
    # The role reads the build's git token (CodeBuild resolves it), and has no S3 action.
    admin.client("ssm").put_parameter(Name="/site/git", Value=GOOD_TOKEN, Type="SecureString")
    admin.client("iam").put_role_policy(
        RoleName="b",
        PolicyName="token",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameters", "Resource": "*"}],
            }
        ),
    )
    iam_propagated()
    source.files[("acme/site", "s1")] = {
        "build": "succeed",
        "publish_dir": "dist",
        "files": {"index.html": "<h1>hello</h1>"},
    }
    plain = {
        "GIT_API_URL": source.api_url,
        "GIT_CLONE_BASE": clone_base(source.api_url),
        "SOURCE_REPO": "acme/site",
        "SOURCE_COMMIT": "s1",
        "BUILD_COMMAND": "npm run build",
        "PUBLISH_DIR": "dist",
        "SITE_BUCKET": "capstan-site-test",
    }
    codebuild = admin.client("codebuild")
    build_id = codebuild.start_build(
        projectName="site",
        environmentVariablesOverride=[
            {"name": "GIT_TOKEN", "value": "/site/git", "type": "PARAMETER_STORE"},
            *({"name": k, "value": v, "type": "PLAINTEXT"} for k, v in plain.items()),
        ],
    )["build"]["id"]
    build = _finished(codebuild, build_id)
    assert build["buildStatus"] == "FAILED"
    failed = _failed_phase(build)
    assert failed["phaseType"] == "POST_BUILD"
    assert (
        "(AccessDenied) when calling the ListObjectsV2 operation"
        in (failed["contexts"][0]["message"])
    )
    assert "Contents" not in admin.client("s3").list_objects_v2(Bucket="capstan-site-test")


def test_update_service_starts_a_new_deployment_that_completes(admin: AwsSession) -> None:
    simulator().configure(task_start_seconds=0.3)
    ecs = admin.client("ecs")
    ecs.create_cluster(clusterName="c")
    first, second = (
        ecs.register_task_definition(
            family="f", containerDefinitions=[{"name": "app", "image": f"i:{n}", "memory": 512}]
        )["taskDefinition"]["taskDefinitionArn"]
        for n in (1, 2)
    )
    ecs.create_service(cluster="c", serviceName="s", taskDefinition=first, desiredCount=2)

    def deployments() -> list[dict[str, object]]:
        return list(
            ecs.describe_services(cluster="c", services=["s"])["services"][0]["deployments"]
        )

    wait_until(lambda: deployments()[0]["rolloutState"] == "COMPLETED")
    ecs.update_service(cluster="c", service="s", taskDefinition=second)
    rolling = deployments()
    assert [(d["status"], d["taskDefinition"], d["rolloutState"]) for d in rolling] == [
        ("PRIMARY", second, "IN_PROGRESS"),
        ("ACTIVE", first, "COMPLETED"),
    ]
    wait_until(lambda: deployments()[0]["rolloutState"] == "COMPLETED")
    done = deployments()
    assert len(done) == 1 and done[0]["taskDefinition"] == second
    assert done[0]["runningCount"] == 2


def test_cost_explorer_answers_by_tag_from_run_time(admin: AwsSession) -> None:
    simulator().configure(task_start_seconds=0)
    ecs = admin.client("ecs")
    ecs.create_cluster(clusterName="c")
    definition = ecs.register_task_definition(
        family="f",
        cpu="1024",
        memory="2048",
        containerDefinitions=[{"name": "app", "image": "i"}],
    )["taskDefinition"]["taskDefinitionArn"]
    ecs.create_service(
        cluster="c",
        serviceName="priced",
        taskDefinition=definition,
        desiredCount=1,
        tags=[{"key": "capstan:resource", "value": "svc_priced"}],
    )
    ce = admin.client("ce")

    def spend(value: str) -> float:
        answer = ce.get_cost_and_usage(
            TimePeriod={"Start": "2020-01-01", "End": "2100-01-01"},
            Granularity="MONTHLY",
            Metrics=["UnblendedCost"],
            Filter={"Tags": {"Key": "capstan:resource", "Values": [value]}},
        )
        return sum(float(p["Total"]["UnblendedCost"]["Amount"]) for p in answer["ResultsByTime"])

    first = wait_until(lambda: spend("svc_priced"))
    time.sleep(0.5)
    assert spend("svc_priced") > first
    assert spend("svc_other") == 0.0
    # About 0.5 s of a 1 vCPU / 2 GB task at ~0.049 USD an hour: tiny, but accrued.
    assert spend("svc_priced") < 0.001


def test_cost_explorer_counts_calls_can_be_off_and_reports_only_by_active_tags(
    admin: AwsSession,
) -> None:
    account_id = admin.client("sts").get_caller_identity()["Account"]
    ledger = simulator().cost
    ledger.add(account_id, {"capstan:resource": "svc_spent"}, 1.25)
    ce = admin.client("ce")

    def spend() -> float:
        answer = ce.get_cost_and_usage(
            TimePeriod={"Start": "2020-01-01", "End": "2100-01-01"},
            Granularity="MONTHLY",
            Metrics=["UnblendedCost"],
            Filter={"Tags": {"Key": "capstan:resource", "Values": ["svc_spent"]}},
        )
        return sum(float(p["Total"]["UnblendedCost"]["Amount"]) for p in answer["ResultsByTime"])

    assert spend() == 1.25
    [tag] = ce.list_cost_allocation_tags(TagKeys=["capstan:resource"])["CostAllocationTags"]
    assert tag["Status"] == "Active" and tag["Type"] == "UserDefined"

    # Inactive: AWS answers $0 without complaint; activating it is what brings the figure back.
    ce.update_cost_allocation_tags_status(
        CostAllocationTagsStatus=[{"TagKey": "capstan:resource", "Status": "Inactive"}]
    )
    assert ce.list_cost_allocation_tags(Status="Active")["CostAllocationTags"] == []
    assert spend() == 0.0
    ce.update_cost_allocation_tags_status(
        CostAllocationTagsStatus=[{"TagKey": "capstan:resource", "Status": "Active"}]
    )
    assert spend() == 1.25
    assert ledger.calls(account_id, "svc_spent") == 3

    ledger.switch_off(account_id)
    try:
        with pytest.raises(ClientError) as refused:
            spend()
    finally:
        ledger.switch_on(account_id)
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert "not enabled for cost explorer" in refused.value.response["Error"]["Message"]
    assert ledger.calls(account_id, "svc_spent") == 3


def test_unknown_knobs_are_refused() -> None:
    with pytest.raises(TypeError, match="unknown simulator knobs: build_minutes"):
        simulator().configure(build_minutes=1)


def test_fetch_outcome_parses_the_contents_api(source: GitHost) -> None:
    from capstan_sandbox.cloud.simulator.codebuild import SourceUnavailable, fetch_outcome

    variables = {
        "GIT_API_URL": source.api_url,
        "SOURCE_REPO": "acme/app",
        "SOURCE_COMMIT": "c1",
        "GIT_TOKEN": GOOD_TOKEN,
    }
    assert fetch_outcome(variables) == {"build": "succeed"}
    with pytest.raises(SourceUnavailable, match="HTTP 404"):
        fetch_outcome({**variables, "SOURCE_COMMIT": "nope"})
    with pytest.raises(SourceUnavailable, match="HTTP 401"):
        fetch_outcome({**variables, "GIT_TOKEN": "wrong"})
    assert json.dumps(source.requests[0][1]) == json.dumps(f"token {GOOD_TOKEN}")
