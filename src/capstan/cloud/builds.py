"""Image builds in a customer's AWS account: CodeBuild projects that build a commit into the
target's ECR repository, and what a finished build says about itself.

`BuildDriver` is part of the app driver (`Deployer.builds`): it starts a build — an image build,
or a static website's build that fills its bucket — and returns, stops superseded ones, and reads
a build's state and its log. Its calls block (run them through
`Cloud.run`) and raise only `RetryableCloudError` or `TerminalCloudError`.

IAM is eventually consistent: a build role made moments ago may not be usable by CodeBuild yet.
CodeBuild then refuses the project (`CreateProject`: "CodeBuild is not authorized to perform:
sts:AssumeRole"), or fails a build as it provisions (the same words, or the role's own grants
denied while they propagate). For as long as the role is younger than `ROLE_PROPAGATION` the
driver waits: the project's refusal is retryable (the reconciler backs off), a refused build is
started again. After that each is a failure naming the role and what to check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from capstan.cloud.aws import codebuild, ecr, iam, logs, names, s3, ssm
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.credentials import utcnow
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud.target import LogLine, Target

# How long a new build role may stay unusable by CodeBuild before a build refused for it is a
# failure: IAM makes a new role usable within seconds; minutes mean something else is wrong.
ROLE_PROPAGATION = timedelta(minutes=2)
_ERROR_LINE = re.compile(r"\b(err(or)?|fatal|failed|exception|could not)\b|ERR!", re.IGNORECASE)


@dataclass(frozen=True)
class BuildSpec:
    target: Target
    repo: str  # "owner/name"
    commit_sha: str
    git_api_url: str  # the git host's REST base, e.g. https://api.github.com
    # One-hour installation token for this one repository: passed to this build only, never
    # stored or logged (kept out of repr).
    source_token: str = field(repr=False)
    build_command: str | None
    # The deployment the build is for: CodeBuild's idempotency token, so starting it again after
    # a crash does not start a second build.
    deployment_id: str | None = None
    registry_login: RegistryLogin | None = None
    architecture: str = "x86_64"  # or "arm64": built on CodeBuild's ARM environment
    # Where in the repository the build runs ("": its root), and the Dockerfile relative to it.
    root_dir: str = ""
    dockerfile_path: str = "Dockerfile"


@dataclass(frozen=True)
class RegistryLogin:
    """Docker Hub credentials the operator supplies, so builds pull base images signed in (an
    anonymous pull is rate-limited per address, and CodeBuild's addresses are shared)."""

    username: str
    token: str = field(repr=False)


@dataclass(frozen=True)
class Build:
    id: str
    state: Literal["in_progress", "succeeded", "failed"]
    image_uri: str | None  # set when succeeded
    error: str | None  # set when failed: the reason, from the build's log


@dataclass(frozen=True)
class SiteBuildSpec:
    target: Target
    repo: str  # "owner/name"
    commit_sha: str
    git_api_url: str
    # The one-repository installation token, for this build only (see `BuildSpec`).
    source_token: str = field(repr=False)
    build_command: str
    publish_dir: str
    bucket: str
    deployment_id: str
    # Where in the bucket this build's output goes (`<prefix>/…`): each build keeps its own.
    prefix: str
    # The build-time environment: written to SSM (as `environment_version` of the site's
    # environment), referenced by name from the build.
    environment: dict[str, str] = field(repr=False, default_factory=dict)
    environment_version: str | None = None
    # Where in the repository the build runs ("": its root); `publish_dir` is relative to it.
    root_dir: str = ""


def _source(spec: BuildSpec | SiteBuildSpec) -> dict[str, str]:
    """What every build is told of its source: the commit and where to fetch it (the token is a
    parameter: `_token`)."""
    return {
        "SOURCE_COMMIT": spec.commit_sha,
        "SOURCE_REPO": spec.repo,
        "GIT_API_URL": spec.git_api_url,
        "GIT_CLONE_BASE": codebuild.clone_base(spec.git_api_url),
    }


def _token(customer: AwsSession, spec: BuildSpec | SiteBuildSpec) -> dict[str, str]:
    """The build's `GIT_TOKEN`, as the name of the parameter that holds it."""
    target = spec.target
    return {
        "GIT_TOKEN": ssm.put_build_token(
            customer, target.project_id, target.resource_id, "git", spec.source_token
        )
    }


class BuildDriver:
    """Synchronous boto3 work in the organization's account (`customer`: the assumed role)."""

    def __init__(self, customer: AwsSession, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._customer = customer
        self._clock = clock

    def start(self, spec: BuildSpec, *, build_role_arn: str) -> str:
        """Start a build of `spec.commit_sha` into the target's repository; the build's id."""
        target = spec.target
        logs.ensure_group(
            self._customer,
            target.project_id,
            target.resource_id,
            names.build_log_group(target.resource_id),
        )
        repository = ecr.ensure_repository(self._customer, target.project_id, target.resource_id)
        project = self._project(target, build_role_arn)
        environment = {
            **_source(spec),
            "IMAGE_URI": f"{repository}:{spec.commit_sha}",
            "ROOT_DIR": spec.root_dir,
            "DOCKERFILE_PATH": spec.dockerfile_path,
        }
        if spec.build_command:
            environment["BUILD_COMMAND"] = spec.build_command
        parameters = _token(self._customer, spec)
        if spec.registry_login is not None:
            environment["DOCKERHUB_USERNAME"] = spec.registry_login.username
            parameters["DOCKERHUB_TOKEN"] = ssm.put_build_token(
                self._customer,
                target.project_id,
                target.resource_id,
                "dockerhub",
                spec.registry_login.token,
            )
        return codebuild.start_build(
            self._customer,
            project,
            environment=environment,
            parameters=parameters,
            idempotency_token=spec.deployment_id,
            arm=spec.architecture == "arm64",
            buildspec=codebuild.BUILDSPEC,
        )

    def _project(
        self,
        target: Target,
        role_arn: str,
        *,
        buildspec: str = codebuild.BUILDSPEC,
        privileged: bool = True,
    ) -> str:
        """The target's build project, made if missing (see the module docstring for a role
        CodeBuild cannot assume yet)."""
        try:
            return codebuild.ensure_project(
                self._customer,
                target.project_id,
                target.resource_id,
                service_role_arn=role_arn,
                buildspec=buildspec,
                privileged=privileged,
            )
        except RetryableCloudError as error:
            if error.code != "build_role_not_ready" or self._role_is_new(role_arn):
                raise
            raise TerminalCloudError(
                "build_role_unusable", _unusable(role_arn), detail=error.detail
            ) from error

    def _role_is_new(self, role_arn: str) -> bool:
        """Whether the role was made less than `ROLE_PROPAGATION` ago by the driver's clock."""
        created = iam.role_created_at(self._customer, role_arn)
        return created is not None and self._clock() - created < ROLE_PROPAGATION

    def describe(self, build_id: str) -> Build:
        info = codebuild.describe_build(self._customer, build_id)
        if info is None:
            return Build(build_id, "failed", None, "The build no longer exists.")
        if info.status == "IN_PROGRESS":
            return Build(build_id, "in_progress", None, None)
        if info.status == "SUCCEEDED":
            return Build(build_id, "succeeded", info.image_uri, None)
        if _role_refused(info):
            return self._role_not_ready(info)
        return Build(build_id, "failed", None, self._failure_reason(info))

    def _role_not_ready(self, info: codebuild.BuildInfo) -> Build:
        """A build CodeBuild could not start because of its build role (it could not assume it,
        or the role's grants were denied): a role made moments ago (IAM is eventually
        consistent) gets the same build started again, as long as the role is younger than
        `ROLE_PROPAGATION` (the caller then follows the new build's id); after that it is a
        failure with what to check."""
        if self._role_is_new(info.service_role or ""):
            return Build(codebuild.start_again(self._customer, info), "in_progress", None, None)
        if not _assume_refused(info):  # the role's own grant was denied: the build's reason
            return Build(info.id, "failed", None, self._failure_reason(info))
        return Build(info.id, "failed", None, _unusable(info.service_role or "the build role"))

    def _failure_reason(self, info: codebuild.BuildInfo) -> str:
        """The build's own error line: the last output line that reads like an error (CodeBuild's
        `[Container]` bookkeeping lines aside), else the failed phase's message."""
        output = [
            line.message
            for line in self._events(info)
            if line.message.strip() and not line.message.startswith("[Container]")
        ]
        errors = [message for message in output if _ERROR_LINE.search(message)]
        if errors:
            return errors[-1]
        if info.failed_phase_messages:
            return codebuild.explain_failure(info.failed_phase_messages[-1])
        if output:
            return output[-1]
        return f"The build ended {info.status.lower().replace('_', ' ')}."

    def _events(self, info: codebuild.BuildInfo) -> list[LogLine]:
        if not info.log_group or not info.log_stream:
            return []
        return [
            LogLine(event.timestamp, event.message)
            for event in logs.stream_events(self._customer, info.log_group, info.log_stream)
        ]

    def log(self, build_id: str) -> list[LogLine]:
        info = codebuild.describe_build(self._customer, build_id)
        return [] if info is None else self._events(info)

    def start_site(self, spec: SiteBuildSpec) -> str:
        """Start the build that fills the bucket; the build's id. The environment goes to SSM and
        the build names the parameters (CodeBuild resolves them as it starts)."""
        target = spec.target
        log_group = names.build_log_group(target.resource_id)
        role = iam.ensure_site_build_role(
            self._customer,
            target.project_id,
            target.resource_id,
            bucket_arn=s3.arn(self._customer, spec.bucket),
            log_group=log_group,
        )
        logs.ensure_group(self._customer, target.project_id, target.resource_id, log_group)
        project = self._project(target, role, buildspec=codebuild.SITE_BUILDSPEC, privileged=False)
        stored = ssm.put_environment(
            self._customer,
            target.project_id,
            target.resource_id,
            spec.environment,
            spec.environment_version,
        )
        prefix = ssm.version_path(target.resource_id, spec.environment_version)
        environment = {
            **stored.plain,  # the build's own variables are reserved names: they cannot clash
            **_source(spec),
            "ROOT_DIR": spec.root_dir,
            "BUILD_COMMAND": spec.build_command,
            "PUBLISH_DIR": spec.publish_dir,
            "SITE_BUCKET": spec.bucket,
            "SITE_PREFIX": spec.prefix,
        }
        return codebuild.start_build(
            self._customer,
            project,
            environment=environment,
            parameters={
                **{variable: prefix + variable for variable in stored.parameters},
                **_token(self._customer, spec),
            },
            idempotency_token=spec.deployment_id,
            buildspec=codebuild.SITE_BUILDSPEC,
        )

    def stop(self, build_ids: list[str]) -> bool:
        """Stop whichever of these builds still run; True once none does (a superseded build
        must not sync its older files over a newer build's)."""
        settled = True
        for build_id in build_ids:
            info = codebuild.describe_build(self._customer, build_id)
            if info is not None and info.status == "IN_PROGRESS":
                codebuild.stop_build(self._customer, build_id)
                settled = False
        return settled


def _role_refused(info: codebuild.BuildInfo) -> bool:
    """Whether the build failed as it provisioned because of its service role: CodeBuild could
    not assume it, or the role was denied what CodeBuild does with it before any command runs
    (its log stream, its parameters), which a policy IAM has not propagated yet explains."""
    return info.status == "FAILED" and (
        _assume_refused(info)
        or any(codebuild.role_denied(message) for message in info.failed_phase_messages)
    )


def _assume_refused(info: codebuild.BuildInfo) -> bool:
    return any("sts:AssumeRole" in message for message in info.failed_phase_messages)


def _unusable(role_arn: str) -> str:
    minutes = int(ROLE_PROPAGATION.total_seconds() // 60)
    name = role_arn.rsplit("/", 1)[-1]  # the account's id stays out of what users see
    return (
        f"CodeBuild could not assume the build role {name} more than {minutes} minutes "
        "after it was made. Check that the role exists and trusts codebuild.amazonaws.com, "
        "then redeploy."
    )
