"""CodeBuild: one project per target that clones the repository at a commit with a short-lived
token, runs the build command, builds the container image and pushes it to the target's ECR
repository. The token comes as a per-build environment override and is never stored here.

The clone URL is derived from the git host's REST base (`git_api_url`): `https://api.github.com`
clones from `https://github.com`; any other host (GitHub Enterprise's `https://host/api/v3`, the
sandbox git host's `{base_url}/sandbox/git_host/api`) clones from the URL's origin and path with
the `/api...` part removed (`https://host`, `{base_url}/sandbox/git_host`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

BUILD_IMAGE = "aws/codebuild/standard:7.0"
BUILD_STREAM_PREFIX = "build"
# Inline buildspec (v0.2: the commands of a build share one shell, so `cd` carries over).
BUILDSPEC = """\
version: 0.2
env:
  shell: bash
phases:
  pre_build:
    commands:
      - echo "Cloning $SOURCE_REPO at $SOURCE_COMMIT"
      - ORIGIN="${GIT_CLONE_BASE%%://*}://x-access-token:${GIT_TOKEN}@${GIT_CLONE_BASE#*://}"
      - git clone --quiet "$ORIGIN/$SOURCE_REPO.git" source && unset ORIGIN
      - cd source && git checkout --quiet "$SOURCE_COMMIT"
      - aws ecr get-login-password | docker login --username AWS --password-stdin "${IMAGE_URI%%/*}"
  build:
    commands:
      - if [ -n "$BUILD_COMMAND" ]; then bash -c "$BUILD_COMMAND"; fi
      - docker build -t "$IMAGE_URI" .
  post_build:
    commands:
      - test "$CODEBUILD_BUILD_SUCCEEDING" = 1 && docker push "$IMAGE_URI"
"""


@dataclass(frozen=True)
class BuildInfo:
    id: str
    status: str  # IN_PROGRESS | SUCCEEDED | FAILED | FAULT | STOPPED | TIMED_OUT
    image_uri: str | None
    failed_phase_messages: tuple[str, ...]
    log_group: str | None
    log_stream: str | None


def clone_base(git_api_url: str) -> str:
    """Where repositories are cloned from, for a git host's REST base (see module docstring)."""
    parts = urlsplit(git_api_url.rstrip("/"))
    if parts.hostname == "api.github.com":
        return f"{parts.scheme}://github.com"
    path = parts.path
    index = path.find("/api")
    if index >= 0 and (len(path) == index + 4 or path[index + 4] == "/"):
        path = path[:index]
    return f"{parts.scheme}://{parts.netloc}{path}"


def _client(session: AwsSession) -> Any:
    return session.client("codebuild")


def ensure_project(
    session: AwsSession, project_id: str, resource_id: str, *, service_role_arn: str
) -> str:
    codebuild = _client(session)
    name = names.service_name(resource_id)
    with aws_errors():
        found = codebuild.batch_get_projects(names=[name])["projects"]
        if found:
            return name
        try:
            codebuild.create_project(
                name=name,
                description=f"Capstan builds of {resource_id}",
                source={"type": "NO_SOURCE", "buildspec": BUILDSPEC},
                artifacts={"type": "NO_ARTIFACTS"},
                environment={
                    "type": "LINUX_CONTAINER",
                    "image": BUILD_IMAGE,
                    "computeType": "BUILD_GENERAL1_SMALL",
                    "privilegedMode": True,
                    "environmentVariables": [],
                },
                serviceRole=service_role_arn,
                timeoutInMinutes=30,
                logsConfig={
                    "cloudWatchLogs": {
                        "status": "ENABLED",
                        "groupName": names.build_log_group(resource_id),
                        "streamName": BUILD_STREAM_PREFIX,
                    }
                },
                tags=names.tag_list(project_id, resource_id, key="key", value="value"),
            )
        except ClientError as error:
            if error_code(error) != "ResourceAlreadyExistsException":
                raise
    return name


def project_exists(session: AwsSession, resource_id: str) -> bool:
    with aws_errors():
        found = _client(session).batch_get_projects(names=[names.service_name(resource_id)])
    return bool(found["projects"])


def start_build(
    session: AwsSession,
    project_name: str,
    *,
    environment: dict[str, str],
    idempotency_token: str | None = None,
) -> str:
    """Start a build. With `idempotency_token`, a repeat of the same request within five minutes
    (a retry after a crash between the call and recording its id) answers the same build."""
    variables = [
        {"name": key, "value": value, "type": "PLAINTEXT"} for key, value in environment.items()
    ]
    extra = {"idempotencyToken": idempotency_token} if idempotency_token else {}
    with aws_errors():
        started = _client(session).start_build(
            projectName=project_name, environmentVariablesOverride=variables, **extra
        )
    return str(started["build"]["id"])


def describe_build(session: AwsSession, build_id: str) -> BuildInfo | None:
    with aws_errors():
        builds = _client(session).batch_get_builds(ids=[build_id])["builds"]
    if not builds:
        return None
    build = builds[0]
    variables = {
        item.get("name"): item.get("value")
        for item in build.get("environment", {}).get("environmentVariables", [])
    }
    messages = tuple(
        str(context.get("message"))
        for phase in build.get("phases", [])
        if phase.get("phaseStatus") in ("FAILED", "FAULT", "TIMED_OUT")
        for context in phase.get("contexts", [])
        if context.get("message")
    )
    logs = build.get("logs", {})
    return BuildInfo(
        id=str(build["id"]),
        status=str(build.get("buildStatus", "IN_PROGRESS")),
        image_uri=variables.get("IMAGE_URI"),
        failed_phase_messages=messages,
        log_group=logs.get("groupName"),
        log_stream=logs.get("streamName"),
    )


def delete_project(session: AwsSession, resource_id: str) -> None:
    with aws_errors(), ignoring("ResourceNotFoundException"):
        _client(session).delete_project(name=names.service_name(resource_id))
