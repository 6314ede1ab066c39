"""CodeBuild, simulated: builds keep their environment overrides and log settings, stay
IN_PROGRESS until the runner finishes them, and finish the way the source says.

A static website's build (it has `SITE_BUCKET`) runs as `SITE_BUILDSPEC` would: it resolves its
`PARAMETER_STORE` variables from SSM (a missing parameter fails the build as it starts, as in
AWS), fetches the source, "runs" the build command — the files the repository's
`capstan-sandbox.json` declares under its `publish_dir`, with `${NAME}` replaced by the build's
variables — fails like the buildspec when `PUBLISH_DIR` is not that directory, and syncs the
files into `SITE_BUCKET` (`--delete`: keys the build no longer has are removed). A build stopped
meanwhile syncs nothing.

Every build first makes its log stream, with the build's service role: a role that may not
(`logs:CreateLogStream`, `logs:PutLogEvents` on the project's log group) fails the build as it
provisions, in CodeBuild's words ("ACCESS_DENIED: Service role … does not allow AWS CodeBuild to
create Amazon CloudWatch Logs log streams …"), and no line is written (`build_logs.refusal`).

CodeBuild checks that it can assume a project's service role when the project is made: a role
IAM has not propagated yet (`iam_propagation`) is refused with `InvalidInputException`
"CodeBuild is not authorized to perform: sts:AssumeRole on <role ARN>", AWS's words (quoted in
https://github.com/hashicorp/terraform-provider-aws/issues/4233, which retries it for IAM's
eventual consistency). moto has no UpdateProject, the other call that checks it.

moto refuses a NO_SOURCE project without a source location (AWS wants none), answers StartBuild
but drops `environmentVariablesOverride` and the project's logs config, and its BatchGetBuilds
marks every build SUCCEEDED on sight. `install()` fixes all three (in moto's
response and backend classes, once per process); `BuildRunner` does what the build would do.
"""

from __future__ import annotations

import base64
import copy
import json
import mimetypes
import threading
import time
from string import Template
from typing import TYPE_CHECKING, Any

import httpx
from moto.codebuild import responses as codebuild_responses
from moto.codebuild.exceptions import InvalidInputException
from moto.codebuild.models import CodeBuildBackend, codebuild_backends
from moto.codebuild.responses import CodeBuildResponse
from moto.core.responses import ActionResult
from moto.core.utils import iso_8601_datetime_with_milliseconds
from moto.s3.models import s3_backends
from moto.ssm.models import ssm_backends

from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.role_checks import RoleRequests
from capstan_sandbox.cloud.simulator import build_logs, build_queue, build_shell, images, registry
from capstan_sandbox.cloud.simulator.backends import each
from capstan_sandbox.cloud.simulator.site_source import directory as _directory
from capstan_sandbox.cloud.simulator.site_source import has_directory as _has_directory

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

_MARK = "_capstan_simulated"
_install_lock = threading.Lock()
SOURCE_FILE = "capstan-sandbox.json"
_PHASES = ("PROVISIONING", "DOWNLOAD_SOURCE", "INSTALL", "PRE_BUILD", "BUILD", "POST_BUILD")


# StartBuild's idempotencyToken: a repeat within five minutes answers the same build, as AWS does.
IDEMPOTENCY_SECONDS = 300.0
_started_by_token: dict[tuple[str, str, str, str], tuple[str, float]] = {}


def install() -> None:
    with _install_lock:
        if getattr(CodeBuildResponse.start_build, _MARK, False):
            return
        original_start = CodeBuildResponse.start_build
        original_validate = codebuild_responses._validate_required_params_source

        def validate_source(source: dict[str, Any]) -> None:
            # AWS: a NO_SOURCE project has an inline buildspec and no location.
            if source.get("type") == "NO_SOURCE" and source.get("buildspec"):
                return
            original_validate(source)

        codebuild_responses._validate_required_params_source = validate_source

        def start_build(self: CodeBuildResponse) -> Any:
            project_name = self._get_param("projectName")
            token = self._get_param("idempotencyToken")
            key = (self.current_account, self.region, project_name, token)
            if token and (seen := _started_by_token.get(key)) is not None:
                build_id, at = seen
                if time.monotonic() - at < IDEMPOTENCY_SECONDS:  # AWS: the same build
                    repeated = self.codebuild_backend.batch_get_builds([build_id])
                    if repeated:
                        return ActionResult({"build": repeated[0]})
            build_queue.check_start()
            result = original_start(self)
            backend = self.codebuild_backend
            build = backend.build_metadata[project_name].build_metadata
            _amend(
                backend.codebuild_projects[project_name].project_metadata,
                build,
                self._get_param("environmentVariablesOverride") or [],
                self._get_param("buildspecOverride"),
            )
            if token:
                _started_by_token[key] = (build["id"], time.monotonic())
            return result

        original_create_project = CodeBuildBackend.create_project

        def create_project(self: CodeBuildBackend, *args: Any, **kwargs: Any) -> Any:
            role = str(kwargs.get("service_role") or "")
            if build_queue.unpropagated_role(self.account_id, role) is not None:
                raise InvalidInputException(
                    f"CodeBuild is not authorized to perform: sts:AssumeRole on {role}"
                )
            return original_create_project(self, *args, **kwargs)

        def batch_get_builds(self: CodeBuildBackend, ids: list[str]) -> list[dict[str, Any]]:
            return [
                build
                for history in list(self.build_metadata_history.values())
                for build in list(history)
                if build["id"] in ids
            ]

        setattr(start_build, _MARK, True)
        CodeBuildResponse.start_build = start_build  # type: ignore[method-assign]
        CodeBuildBackend.batch_get_builds = batch_get_builds  # type: ignore[method-assign]
        CodeBuildBackend.create_project = create_project  # type: ignore[method-assign]


def _amend(
    project: dict[str, Any],
    build: dict[str, Any],
    overrides: list[dict[str, Any]],
    buildspec: str | None = None,
) -> None:
    """Make the build look as AWS describes it: the project's environment with the overrides,
    its source (with StartBuild's `buildspecOverride`, which this build runs instead of the
    project's) and its log destination (`<streamName>/<build uuid>`)."""
    environment = copy.deepcopy(project.get("environment") or {})
    variables = {item["name"]: item for item in environment.get("environmentVariables", [])}
    for item in overrides:
        variables[item["name"]] = {
            "name": item["name"],
            "value": item.get("value", ""),
            "type": item.get("type", "PLAINTEXT"),
        }
    environment["environmentVariables"] = list(variables.values())
    build["environment"] = environment
    build["source"] = copy.deepcopy(project.get("source") or {})
    if buildspec:
        build["source"]["buildspec"] = buildspec
    build_uuid = str(build["id"]).split(":", 1)[-1]
    cloudwatch = (project.get("logsConfig") or {}).get("cloudWatchLogs") or {}
    group = cloudwatch.get("groupName") or f"/aws/codebuild/{project['name']}"
    prefix = cloudwatch.get("streamName")
    stream = f"{prefix}/{build_uuid}" if prefix else build_uuid
    build["logs"] = {
        "groupName": group,
        "streamName": stream,
        "cloudWatchLogs": {"status": "ENABLED", "groupName": group, "streamName": prefix},
        "s3Logs": {"status": "DISABLED"},
    }
    variable_values = {name: item.get("value") for name, item in variables.items()}
    if variable_values.get("SOURCE_COMMIT"):
        build["sourceVersion"] = variable_values["SOURCE_COMMIT"]


class BuildRunner:
    """Finishes IN_PROGRESS builds `build_seconds` after they leave the queue (`build_queue`)."""

    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self._seen: dict[str, float] = {}
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def tick(self, now: float) -> None:
        delay = self._simulator.knobs.build_seconds
        for account_id, region, backend in each(codebuild_backends):
            builds = [
                build
                for history in list(backend.build_metadata_history.values())
                for build in list(history)
                if build.get("buildStatus") == "IN_PROGRESS"
            ]
            build_queue.admit(builds)
            for build in builds:
                if build.get("currentPhase") == build_queue.QUEUED:
                    continue
                build_id = build["id"]
                if build_id not in self._seen and (
                    role := build_queue.unpropagated_role(
                        account_id, str(build.get("serviceRole") or "")
                    )
                ):
                    _complete(
                        build,
                        "PROVISIONING",
                        f"CLIENT_ERROR: CodeBuild is not authorized to perform: sts:AssumeRole "
                        f"on {role}",
                    )
                    continue
                seen = self._seen.setdefault(build_id, now)
                with self._lock:
                    if now - seen < delay or build_id in self._running:
                        continue
                    self._running.add(build_id)
                self._simulator.pool.submit(self._finish, account_id, region, build)

    def _finish(self, account_id: str, region: str, build: dict[str, Any]) -> None:
        try:
            run_build(account_id, region, build)
        finally:
            with self._lock:
                self._running.discard(build["id"])
                self._seen.pop(build["id"], None)


def run_build(account_id: str, region: str, build: dict[str, Any]) -> None:
    refused = build_logs.refusal(account_id, region, build)
    if refused is not None:  # no stream, so no log: the build ends as it provisions
        _complete(build, "PROVISIONING", refused)
        return
    items = build.get("environment", {}).get("environmentVariables", [])
    if any(item.get("name") == "SITE_BUCKET" for item in items):
        run_site_build(account_id, region, build, items)
        return
    plain, stored = _variables(items)
    lines = ["[Container] Entering phase PROVISIONING"]
    try:
        resolved = _parameters(account_id, region, build, stored)
    except BuildFailed as failed:
        lines += build_logs.failure_lines(failed.phase, failed.error)
        build_logs.write(account_id, region, build, lines)
        _complete(build, failed.phase, failed.error)
        return
    source = build.get("source") or {}
    outcome = build_shell.run(str(source.get("buildspec") or ""), plain | resolved)
    lines += outcome.lines
    failed_phase, error = outcome.failed_phase, outcome.error
    if failed_phase is None:
        for pushed in outcome.pushed:
            denied = registry.push_denial(account_id, build, pushed.tag)
            if denied is not None:  # docker push's own words, then the command's failure
                lines.append(f"denied: {denied}")
                failed_phase = "POST_BUILD"
                error = (
                    "COMMAND_EXECUTION_ERROR: Error while executing command: docker push "
                    f"{pushed.tag}. Reason: exit status 1"
                )
                break
            try:
                registry.push(account_id, region, pushed.tag, pushed.layer)
            except Exception as problem:  # e.g. the repository was deleted meanwhile
                failed_phase, error = "POST_BUILD", f"push failed: {problem}"
                break
            images.remember(account_id, region, pushed.tag, pushed.dockerfile, pushed.layer)
    build_logs.write(account_id, region, build, lines)
    _complete(build, failed_phase, error)


def _variables(items: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """The build's plain-text variables, and its PARAMETER_STORE ones (variable -> name)."""
    plain = {
        str(item["name"]): str(item.get("value", ""))
        for item in items
        if item.get("type", "PLAINTEXT") == "PLAINTEXT"
    }
    stored = {
        str(item["name"]): str(item.get("value", ""))
        for item in items
        if item.get("type") == "PARAMETER_STORE"
    }
    return plain, stored


class SourceUnavailable(Exception):
    pass


class BuildFailed(Exception):
    def __init__(self, phase: str, error: str) -> None:
        super().__init__(error)
        self.phase = phase
        self.error = error


def run_site_build(
    account_id: str, region: str, build: dict[str, Any], items: list[dict[str, Any]]
) -> None:
    plain, stored = _variables(items)
    repo, commit = plain.get("SOURCE_REPO", ""), plain.get("SOURCE_COMMIT", "")
    publish_dir = _directory(plain.get("PUBLISH_DIR", ""))
    # The build runs in `ROOT_DIR` (a monorepo's site): `PUBLISH_DIR` is relative to it.
    root_dir = _directory(plain.get("ROOT_DIR", ""))
    bucket = plain.get("SITE_BUCKET", "")
    lines = ["[Container] Entering phase PROVISIONING"]
    failure: BuildFailed | None = None
    try:
        resolved = _parameters(account_id, region, build, stored)
        token = resolved.pop("GIT_TOKEN", "")
        own = {name for name in plain if name not in product().build_variables}
        lines += [
            "[Container] Entering phase DOWNLOAD_SOURCE",
            f"Cloning {repo} at {commit}",
        ]
        try:
            outcome = fetch_outcome(plain | {"GIT_TOKEN": token})
        except SourceUnavailable as problem:
            raise BuildFailed("DOWNLOAD_SOURCE", f"could not fetch source: {problem}") from None
        lines += [
            "[Container] Entering phase BUILD",
            f"[Container] Running command {plain.get('BUILD_COMMAND')}",
            "build-time variables: " + (", ".join(sorted(own | set(resolved))) or "(none)"),
        ]
        if root_dir and not _has_directory(outcome, root_dir):
            raise BuildFailed(
                "PRE_BUILD",
                f"error: root_dir {plain.get('ROOT_DIR')} is not a directory of the repository",
            )
        if outcome.get("build") == "fail":
            raise BuildFailed(
                "BUILD", str(outcome.get("error") or "the build command exited with status 1")
            )
        # The sample declares its output's path from the repository's root.
        produced = _directory(str(outcome.get("publish_dir") or ""))
        if not produced or produced != _directory(f"{root_dir}/{publish_dir}"):
            raise BuildFailed(
                "BUILD", f"error: the build did not produce publish_dir {plain.get('PUBLISH_DIR')}"
            )
        variables = plain | resolved
        files = {
            str(key).lstrip("/"): Template(str(content)).safe_substitute(variables).encode()
            for key, content in dict(outcome.get("files") or {}).items()
        }
        lines += [f"built {len(files)} files into {publish_dir}"]
        lines += ["[Container] Entering phase POST_BUILD"]
        if build.get("buildStatus") != "IN_PROGRESS":
            return  # stopped meanwhile: a stopped build syncs nothing
        prefix = plain.get("SITE_PREFIX", "").strip("/")
        lines += _sync(account_id, build, bucket, publish_dir, files, prefix)
        lines += ["[Container] Phase complete: POST_BUILD State: SUCCEEDED"]
    except BuildFailed as failed:
        failure = failed
        lines += build_logs.failure_lines(failed.phase, failed.error)
    build_logs.write(account_id, region, build, lines)
    if build.get("buildStatus") == "IN_PROGRESS":
        _complete(build, failure.phase if failure else None, failure.error if failure else None)


def _parameters(
    account_id: str, region: str, build: dict[str, Any], stored: dict[str, str]
) -> dict[str, str]:
    """The values of the build's PARAMETER_STORE variables, decrypted, as CodeBuild resolves
    them when the build starts: with the build's service role, which must be allowed to read
    each (`ssm:GetParameters`), or the build fails as it provisions."""
    backend = ssm_backends[account_id][region]
    role = RoleRequests(account_id, str(build.get("serviceRole") or ""))
    values = {}
    for variable, name in stored.items():
        parameter = backend.get_parameter(name)
        if parameter is None:
            raise BuildFailed(
                "PROVISIONING",
                f"CLIENT_ERROR: Parameter {name} for the environment variable {variable} "
                "does not exist",
            )
        arn = f"arn:{role.partition}:ssm:{region}:{account_id}:parameter/{name.lstrip('/')}"
        refused = role.refusal(
            "ssm:GetParameters", arn, "parameter", build_logs.role_session(build)
        )
        if refused is not None:
            raise BuildFailed(
                "PROVISIONING",
                f"CLIENT_ERROR: AccessDeniedException: {refused} for the environment variable "
                f"{variable}",
            )
        values[variable] = str(parameter.decrypt(parameter.value))
    return values


def _sync(
    account_id: str,
    build: dict[str, Any],
    bucket: str,
    publish_dir: str,
    files: dict[str, bytes],
    prefix: str = "",
) -> list[str]:
    """`aws s3 sync <publish_dir> s3://<bucket>/<prefix>/ --delete`, and its output lines (the
    deletions, like the CLI's, only under the prefix), as the build's service role: a listing,
    upload or deletion it may not make fails the sync in the CLI's words."""
    backend = s3_backends[account_id]["aws"]
    role = RoleRequests(account_id, str(build.get("serviceRole") or ""))

    def allowed(action: str, resource: str, kind: str, operation: str) -> None:
        if role.denial(action, f"arn:{role.partition}:s3:::{resource}", kind) is not None:
            raise BuildFailed(
                "POST_BUILD",
                f"fatal error: An error occurred (AccessDenied) when calling the {operation} "
                "operation: Access Denied",
            )

    try:
        found = backend.get_bucket(bucket)
    except Exception:
        raise BuildFailed(
            "POST_BUILD",
            f"fatal error: An error occurred (NoSuchBucket) when calling the ListObjectsV2 "
            f"operation: The specified bucket does not exist: {bucket}",
        ) from None
    allowed("s3:ListBucket", bucket, "bucket", "ListObjectsV2")
    lines = []
    under = f"{prefix}/" if prefix else ""
    existing = {str(key) for key in list(found.keys.keys()) if str(key).startswith(under)}
    files = {under + key: body for key, body in files.items()}
    for key, body in sorted(files.items()):
        allowed("s3:PutObject", f"{bucket}/{key}", "object", "PutObject")
        stored = backend.put_object(bucket, key, body)
        kind, _ = mimetypes.guess_type(key)
        stored.set_metadata({"Content-Type": kind or "binary/octet-stream"})
        lines.append(f"upload: {publish_dir}/{key.removeprefix(under)} to s3://{bucket}/{key}")
    for key in sorted(existing - set(files)):
        allowed("s3:DeleteObject", f"{bucket}/{key}", "object", "DeleteObject")
        backend.delete_object(bucket, key)
        lines.append(f"delete: s3://{bucket}/{key}")
    return lines


def fetch_outcome(variables: dict[str, str]) -> dict[str, Any]:
    """What the repository's `capstan-sandbox.json` at the commit says (fetched as a build would,
    with the build's own token)."""
    api = variables.get("GIT_API_URL", "").rstrip("/")
    url = f"{api}/repos/{variables.get('SOURCE_REPO', '')}/contents/{SOURCE_FILE}"
    try:
        answer = httpx.get(
            url,
            params={"ref": variables.get("SOURCE_COMMIT", "")},
            headers={
                "Authorization": f"token {variables.get('GIT_TOKEN', '')}",
                "Accept": "application/vnd.github+json",
            },
            timeout=10,
        )
    except httpx.HTTPError as error:
        raise SourceUnavailable(f"{type(error).__name__}: {error}") from error
    if answer.status_code != 200:
        raise SourceUnavailable(f"HTTP {answer.status_code} {answer.reason_phrase} from {url}")
    try:
        content = answer.json().get("content", "")
        decoded = json.loads(base64.b64decode(content))
    except (ValueError, AttributeError) as error:
        raise SourceUnavailable(f"{SOURCE_FILE} is not valid JSON: {error}") from error
    if not isinstance(decoded, dict):
        raise SourceUnavailable(f"{SOURCE_FILE} is not a JSON object")
    return decoded


def _complete(build: dict[str, Any], failed_phase: str | None, error: str | None) -> None:
    stamp = iso_8601_datetime_with_milliseconds()
    # SUBMITTED, and QUEUED as the queue ended it (`build_queue.admit`).
    phases = [
        phase
        for phase in build.get("phases", [])
        if phase.get("phaseType") in ("SUBMITTED", "QUEUED")
    ]
    if not any(phase.get("phaseType") == "QUEUED" for phase in phases):
        phases.append({"phaseType": "QUEUED", "phaseStatus": "SUCCEEDED", "startTime": stamp})
    for phase_type in _PHASES:
        phase: dict[str, Any] = {
            "phaseType": phase_type,
            "phaseStatus": "SUCCEEDED",
            "startTime": stamp,
            "endTime": stamp,
            "durationInSeconds": 1,
        }
        if phase_type == failed_phase:
            phase["phaseStatus"] = "FAILED"
            phase["contexts"] = [build_logs.context(error or "")]
        phases.append(phase)
        if phase_type == failed_phase:
            break
    for phase_type in ("FINALIZING", "COMPLETED"):
        phases.append({"phaseType": phase_type, "phaseStatus": "SUCCEEDED", "startTime": stamp})
    build["phases"] = phases
    build["endTime"] = stamp
    build["currentPhase"] = "COMPLETED"
    build["buildComplete"] = True
    build["buildStatus"] = "FAILED" if failed_phase else "SUCCEEDED"
