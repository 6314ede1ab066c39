"""A build's log, as CodeBuild keeps it: a stream `<streamName>/<build uuid>` in the project's
log group, which CodeBuild makes as the build provisions, with the build's service role
(`refusal`: AWS's reason when that role may not), and the build's lines in it (`write`). A
failed phase is told in CodeBuild's `[Container]` lines and its context (`failure_lines`,
`context`): a status code of CodeBuild's own apart from its message."""

from __future__ import annotations

import re
from typing import Any

from capstan_sandbox.cloud.role_checks import RoleRequests
from capstan_sandbox.cloud.simulator import logs as sim_logs

# "CLIENT_ERROR: …": a failure's status code (CodeBuild's own), then its message.
_CODED = re.compile(r"(?P<code>[A-Z][A-Z_]+): (?P<message>.*)", re.DOTALL)


def role_session(build: dict[str, Any]) -> str:
    """The name of the session CodeBuild works in as the build's service role:
    `AWSCodeBuild-<build uuid>` (the id's part after the project's name)."""
    return f"AWSCodeBuild-{str(build.get('id', '')).rsplit(':', 1)[-1]}"


def refusal(account_id: str, region: str, build: dict[str, Any]) -> str | None:
    """CodeBuild's reason the build cannot start when its service role may not make the build's
    log stream and write to it (CodeBuild makes it as the build provisions, as that role), or
    None. A build without a CloudWatch Logs destination writes none."""
    logs_info = build.get("logs", {})
    group, stream = logs_info.get("groupName"), logs_info.get("streamName")
    if not group or not stream:
        return None
    role = RoleRequests(account_id, str(build.get("serviceRole") or ""))
    arn = f"arn:{role.partition}:logs:{region}:{account_id}:log-group:{group}:log-stream:{stream}"
    session = role_session(build)
    for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
        refused = role.refusal(action, arn, "log-stream", session)
        if refused is not None:
            return (
                f"ACCESS_DENIED: Service role {role.role_arn} does not allow AWS CodeBuild to "
                "create Amazon CloudWatch Logs log streams for build "
                f"{build.get('arn', build.get('id', ''))}. Error message: {refused}"
            )
    return None


def write(account_id: str, region: str, build: dict[str, Any], lines: list[str]) -> None:
    logs_info = build.get("logs", {})
    if logs_info.get("groupName") and logs_info.get("streamName"):
        sim_logs.write(
            account_id,
            region,
            logs_info["groupName"],
            logs_info["streamName"],
            lines,
            create_group=True,
        )


def context(error: str) -> dict[str, str]:
    """A failed phase's context as CodeBuild gives it: its status code (`CLIENT_ERROR`,
    `ACCESS_DENIED`, `COMMAND_EXECUTION_ERROR`, …) and its message apart; an error named no code
    is a command's."""
    coded = _CODED.match(error)
    if coded is not None:
        return {"statusCode": coded["code"], "message": coded["message"]}
    return {
        "statusCode": "COMMAND_EXECUTION_ERROR",
        "message": f"Error while executing command. Reason: {error}",
    }


def failure_lines(phase: str, error: str) -> list[str]:
    """What the build's log says of a failed phase: a command's own error line, then CodeBuild's
    `[Container]` line; a failure of CodeBuild's own (a status code) only in its `[Container]`
    lines, as CodeBuild writes its phase context."""
    done = f"[Container] Phase complete: {phase} State: FAILED"
    coded = _CODED.match(error)
    if coded is None:
        return [error, done]
    code, message = coded["code"], coded["message"]
    return [done, f"[Container] Phase context status code: {code} Message: {message}"]
