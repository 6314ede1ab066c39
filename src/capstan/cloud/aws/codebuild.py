"""CodeBuild: one project per target that clones the repository at a commit with a short-lived
token, runs the build command, builds the container image and pushes it to the target's ECR
repository.

The git token never reaches the image or the build's record: it is a SecureString parameter the
build names (CodeBuild resolves it as the build starts; `BatchGetBuilds` shows the parameter's
name), the clone sends it as an HTTP header given to that one git command (`git -c` is not
written to `.git/config`, unlike credentials in the clone URL), the shell forgets it at once, and
`.git` is left out of the Docker build context.

Base images come from Docker Hub signed in with the operator's credentials when it supplies them
(`DOCKERHUB_USERNAME`, and `DOCKERHUB_TOKEN` as a parameter like the git token): anonymous pulls
are limited per address, and CodeBuild's addresses are shared.

Static websites build with `SITE_BUILDSPEC` instead: the same source fetch, the build command,
then `aws s3 sync` of the publish directory into the site's bucket. Their environment reaches
the build as `PARAMETER_STORE` variables (SSM parameter names, resolved by CodeBuild when the
build starts), never as plain-text values in the build's record.

The clone URL is derived from the git host's REST base (`git_api_url`): `https://api.github.com`
clones from `https://github.com`; any other host (GitHub Enterprise's `https://host/api/v3`, the
sandbox git host's `{base_url}/sandbox/git_host/api`) clones from the URL's origin and path with
the `/api...` part removed (`https://host`, `{base_url}/sandbox/git_host`).
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.coalesce import Coalescer
from capstan.cloud.aws.errors import NOT_AUTHORIZED, aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

BUILD_IMAGE = "aws/codebuild/standard:7.0"
# An arm64 target's image is built on ARM: CodeBuild's ARM environment and its aarch64 image
# (https://docs.aws.amazon.com/codebuild/latest/userguide/build-env-ref-available.html).
ARM_BUILD = {
    "environmentTypeOverride": "ARM_CONTAINER",
    "imageOverride": "aws/codebuild/amazonlinux2-aarch64-standard:3.0",
    "computeTypeOverride": "BUILD_GENERAL1_SMALL",
}
BUILD_STREAM_PREFIX = "build"
# CodeBuild's refusal of a PARAMETER_STORE variable names the variable.
_VARIABLE = re.compile(r"for the environment variable (?P<name>\w+)")
# How every build fetches its source (the pre_build commands of both buildspecs): see the module
# docstring for where the token goes.
FETCH_SOURCE = """\
      - echo "Cloning $SOURCE_REPO at $SOURCE_COMMIT"
      - AUTH="$(printf 'x-access-token:%s' "$GIT_TOKEN" | base64 -w0)" && unset GIT_TOKEN
      - >-
        git -c http.extraHeader="Authorization: Basic $AUTH"
        clone --quiet "$GIT_CLONE_BASE/$SOURCE_REPO.git" source && unset AUTH
      - cd source && git checkout --quiet "$SOURCE_COMMIT"
      - >-
        cd -- "${ROOT_DIR:-.}" ||
        { echo "error: root_dir $ROOT_DIR is not a directory of the repository"; false; }
"""
# Inline buildspec (v0.2: the commands of a build share one shell, so `cd` carries over). The
# build runs in `ROOT_DIR` (a monorepo's service directory; empty: the repository's root), and
# builds `DOCKERFILE_PATH` (relative to it) with that directory as the context. Every build is
# started with its buildspec (`buildspecOverride`), so a project made before a change of it
# builds as the current one says.
BUILDSPEC = (
    """\
version: 0.2
env:
  shell: bash
phases:
  pre_build:
    commands:
"""
    + FETCH_SOURCE
    + """\
      - aws ecr get-login-password | docker login --username AWS --password-stdin "${IMAGE_URI%%/*}"
      - >-
        if [ -n "$DOCKERHUB_USERNAME" ]; then
        printf %s "$DOCKERHUB_TOKEN" |
        docker login --username "$DOCKERHUB_USERNAME" --password-stdin;
        fi; unset DOCKERHUB_TOKEN
  build:
    commands:
      - if [ -n "$BUILD_COMMAND" ]; then bash -c "$BUILD_COMMAND"; fi
      - printf '\\n.git\\n' >> .dockerignore
      - DOCKERFILE_PATH="${DOCKERFILE_PATH:-Dockerfile}"
      - >-
        test -f "$DOCKERFILE_PATH" ||
        { echo "error: no Dockerfile at ${ROOT_DIR:+$ROOT_DIR/}$DOCKERFILE_PATH"; false; }
      - docker build -f "$DOCKERFILE_PATH" -t "$IMAGE_URI" .
  post_build:
    commands:
      - test "$CODEBUILD_BUILD_SUCCEEDING" = 1 && docker push "$IMAGE_URI"
"""
)


# What a static website's build sets itself; a site's environment may not name these (nor
# CodeBuild's own `CODEBUILD_*` variables).
SITE_BUILD_VARIABLES = frozenset(
    {
        "GIT_TOKEN",
        "SOURCE_COMMIT",
        "SOURCE_REPO",
        "GIT_API_URL",
        "GIT_CLONE_BASE",
        "ROOT_DIR",
        "BUILD_COMMAND",
        "PUBLISH_DIR",
        "SITE_BUCKET",
        "SITE_PREFIX",
    }
)


# A static website: the build command must leave `PUBLISH_DIR`; its files are synced to the
# site's bucket (`--delete`: files the new build no longer has are removed). Build-time variables
# are in the environment of the build command only; nothing is injected into the files.
SITE_BUILDSPEC = (
    """\
version: 0.2
env:
  shell: bash
phases:
  pre_build:
    commands:
"""
    + FETCH_SOURCE
    + """\
  build:
    commands:
      - bash -c "$BUILD_COMMAND"
      - >-
        test -d "$PUBLISH_DIR" ||
        { echo "error: the build did not produce publish_dir $PUBLISH_DIR"; exit 1; }
  post_build:
    commands:
      - >-
        test "$CODEBUILD_BUILD_SUCCEEDING" = 1 &&
        aws s3 sync "$PUBLISH_DIR" "s3://$SITE_BUCKET/$SITE_PREFIX/" --delete --no-progress
"""
)


@dataclass(frozen=True)
class BuildInfo:
    id: str
    status: str  # IN_PROGRESS | SUCCEEDED | FAILED | FAULT | STOPPED | TIMED_OUT
    image_uri: str | None
    failed_phase_messages: tuple[str, ...]
    log_group: str | None
    log_stream: str | None
    project: str = ""
    service_role: str | None = None
    # The build's environment variables as CodeBuild describes them (name, value, type), and
    # the buildspec it ran: what the same build started again is given.
    variables: tuple[dict[str, str], ...] = ()
    buildspec: str | None = None


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
    session: AwsSession,
    project_id: str,
    resource_id: str,
    *,
    service_role_arn: str,
    buildspec: str = BUILDSPEC,
    privileged: bool = True,
) -> str:
    """The target's build project, made if missing. Image builds need privileged mode (Docker);
    site builds (`SITE_BUILDSPEC`) do not. CreateProject is the look: it answers
    `ResourceAlreadyExistsException` for a project that exists."""
    codebuild = _client(session)
    name = names.service_name(resource_id)
    with aws_errors():
        try:
            codebuild.create_project(
                name=name,
                description=f"Capstan builds of {resource_id}",
                source={"type": "NO_SOURCE", "buildspec": buildspec},
                artifacts={"type": "NO_ARTIFACTS"},
                environment={
                    "type": "LINUX_CONTAINER",
                    "image": BUILD_IMAGE,
                    "computeType": "BUILD_GENERAL1_SMALL",
                    "privilegedMode": privileged,
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
            if _role_not_ready(error):
                # A role made moments ago is not yet assumable by CodeBuild (IAM is eventually
                # consistent); a later pass succeeds.
                raise RetryableCloudError(
                    "build_role_not_ready",
                    "CodeBuild cannot assume the project's new build role yet.",
                    detail=str(error),
                ) from error
            if error_code(error) != "ResourceAlreadyExistsException":
                raise
    return name


def _role_not_ready(error: ClientError) -> bool:
    message = str(error.response.get("Error", {}).get("Message", ""))
    return error_code(error) == "InvalidInputException" and "sts:AssumeRole" in message


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
    parameters: dict[str, str] | None = None,
    arm: bool = False,
    buildspec: str | None = None,
) -> str:
    """Start a build (`arm`: on CodeBuild's ARM environment, for an arm64 image; `buildspec`:
    instead of the project's, when given). With `idempotency_token`, a repeat of the same request
    within five minutes (a retry after a crash between the call and recording its id) answers the
    same build.

    `parameters`: variable name -> SSM parameter name, resolved by CodeBuild as the build starts
    (type `PARAMETER_STORE`), so their values never appear in the build's record."""
    variables = [
        {"name": key, "value": value, "type": "PARAMETER_STORE"}
        for key, value in (parameters or {}).items()
        if key not in environment
    ]
    variables += [
        {"name": key, "value": value, "type": "PLAINTEXT"} for key, value in environment.items()
    ]
    extra: dict[str, Any] = {"idempotencyToken": idempotency_token} if idempotency_token else {}
    if arm:
        extra.update(ARM_BUILD)
    if buildspec:
        extra["buildspecOverride"] = buildspec
    with aws_errors():
        started = _client(session).start_build(
            projectName=project_name, environmentVariablesOverride=variables, **extra
        )
    return str(started["build"]["id"])


# One coalescer of build looks per session (an account's role in a region): passes looking at
# their builds at the same moment share one BatchGetBuilds (it takes up to 100 ids).
_looks: weakref.WeakKeyDictionary[AwsSession, Coalescer[str, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
_looks_lock = threading.Lock()


def _build_looks(session: AwsSession) -> Coalescer[str, dict[str, Any]]:
    with _looks_lock:
        looks = _looks.get(session)
        if looks is None:
            owner = weakref.ref(session)  # the coalescer must not keep its session alive

            def fetch(ids: list[str]) -> dict[str, dict[str, Any]]:
                alive = owner()
                assert alive is not None  # a caller holds it
                with aws_errors():
                    builds = _client(alive).batch_get_builds(ids=ids)["builds"]
                return {str(build["id"]): build for build in builds}

            looks = _looks[session] = Coalescer(fetch, limit=100)
        return looks


def describe_build(session: AwsSession, build_id: str) -> BuildInfo | None:
    """The build, or None when CodeBuild has no such build; looked at together with the builds
    other passes look at in the same moment."""
    build = _build_looks(session).get(build_id)
    if build is None:
        return None
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
        project=str(build.get("projectName") or ""),
        service_role=build.get("serviceRole"),
        variables=tuple(
            {
                "name": str(item["name"]),
                "value": str(item.get("value", "")),
                "type": str(item.get("type", "PLAINTEXT")),
            }
            for item in build.get("environment", {}).get("environmentVariables", [])
        ),
        buildspec=build.get("source", {}).get("buildspec"),
    )


def explain_failure(message: str) -> str:
    """A failed phase's message in Capstan's words, where CodeBuild refused the build's role
    something as the build started (its text names the account's ARNs: read, never shown);
    any other message (a command that failed) as it is."""
    denied = NOT_AUTHORIZED.search(message)
    if denied is None or not denied["resource"]:
        return message
    action, resource = denied["action"], denied["resource"]
    if "CloudWatch Logs log streams" in message:
        group = resource.partition(":log-group:")[2].partition(":log-stream:")[0]
        return (
            f"The build could not start: its build role may not write its log group {group} "
            f"({action} was denied)."
        )
    if action.startswith("ssm:"):
        name = resource.partition(":parameter")[2]
        variable = _VARIABLE.search(message)
        of = f" of its variable {variable['name']}" if variable else ""
        return (
            f"The build could not start: its build role may not read the parameter {name}{of} "
            f"({action} was denied)."
        )
    return f"The build failed: its build role was denied {action}."


def role_denied(message: str) -> bool:
    """Whether a failed phase's message is CodeBuild's refusal of the build's service role as
    the build provisioned (its log stream, or a `PARAMETER_STORE` variable's value) for want of
    a grant: what a policy IAM has not propagated yet explains. An explicit deny is not."""
    if NOT_AUTHORIZED.search(message) is None or "explicit deny" in message:
        return False
    return "CloudWatch Logs log streams" in message or _VARIABLE.search(message) is not None


def start_again(session: AwsSession, info: BuildInfo) -> str:
    """Start the build `info` describes once more, with the same variables; the new build's id
    (the same one if asked again within five minutes: the old id is the idempotency token)."""
    extra = {"buildspecOverride": info.buildspec} if info.buildspec else {}
    with aws_errors():
        started = _client(session).start_build(
            projectName=info.project,
            environmentVariablesOverride=list(info.variables),
            idempotencyToken="again-" + info.id.rsplit(":", 1)[-1],
            **extra,
        )
    return str(started["build"]["id"])


def stop_build(session: AwsSession, build_id: str) -> None:
    """Stop a build that is still running (nothing happens when it has finished or is gone)."""
    with aws_errors(), ignoring("ResourceNotFoundException", "InvalidInputException"):
        _client(session).stop_build(id=build_id)


def delete_project(session: AwsSession, resource_id: str) -> None:
    with aws_errors(), ignoring("ResourceNotFoundException"):
        _client(session).delete_project(name=names.service_name(resource_id))
