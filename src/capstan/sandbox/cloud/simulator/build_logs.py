"""A build's log, as CodeBuild keeps it: a stream `<streamName>/<build uuid>` in the project's
log group, which CodeBuild makes as the build provisions, with the build's service role
(`refusal`: AWS's reason when that role may not), and the build's lines in it (`write`)."""

from __future__ import annotations

from typing import Any

from capstan.sandbox.cloud.role_checks import RoleRequests
from capstan.sandbox.cloud.simulator import logs as sim_logs


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
    session = f"AWSCodeBuild-{str(build.get('id', '')).rsplit(':', 1)[-1]}"
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
