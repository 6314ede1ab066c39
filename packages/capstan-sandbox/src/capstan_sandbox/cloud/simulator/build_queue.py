"""CodeBuild's concurrency quota, as AWS applies it (`codebuild_concurrent_builds` of
`cloud/quotas.py`; new accounts may have 0 or 1):

- with a quota of 0, `StartBuild` is refused: `AccountLimitExceededException`, "Cannot have more
  than 0 builds in queue for the account";
- otherwise at most that many builds of an account and region run at once; the others stay
  IN_PROGRESS in phase QUEUED, first started first, until a running one ends (`admit`, called
  by the build runner on every tick; the runner starts a build's time when it leaves the queue).

And the build's service role: a build whose role CodeBuild cannot assume (IAM has not propagated
it yet, `iam_propagation`, or it does not trust CodeBuild) fails as it leaves the queue, in
PROVISIONING, "CLIENT_ERROR: CodeBuild is not authorized to perform: sts:AssumeRole on <role>"
(`unpropagated_role`; CreateProject is refused for it too).
"""

from __future__ import annotations

from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.utils import iso_8601_datetime_with_milliseconds

from capstan_sandbox.cloud.quotas import quotas
from capstan_sandbox.cloud.role_checks import unassumable

QUEUED = "QUEUED"


class AccountLimitExceededException(JsonRESTError):
    code = 400

    def __init__(self, limit: int) -> None:
        super().__init__(
            "AccountLimitExceededException",
            f"Cannot have more than {limit} builds in queue for the account",
        )


def check_start() -> None:
    """Refuse `StartBuild` in an account whose concurrency quota is 0."""
    limit = quotas().codebuild_concurrent_builds
    if limit <= 0:
        raise AccountLimitExceededException(limit)


def admit(builds: list[dict[str, Any]]) -> None:
    """Move queued builds (of one account and region, IN_PROGRESS) into provisioning while fewer
    than the quota run, oldest first."""
    running = [build for build in builds if build.get("currentPhase") != QUEUED]
    waiting = sorted(
        (build for build in builds if build.get("currentPhase") == QUEUED),
        key=lambda build: str(build.get("startTime") or ""),
    )
    free = max(0, quotas().codebuild_concurrent_builds - len(running))
    for build in waiting[:free]:
        stamp = iso_8601_datetime_with_milliseconds()
        for phase in build.get("phases") or []:
            if phase.get("phaseType") == QUEUED:
                phase["phaseStatus"] = "SUCCEEDED"
                phase["endTime"] = stamp
        build.setdefault("phases", []).append({"phaseType": "PROVISIONING", "startTime": stamp})
        build["currentPhase"] = "PROVISIONING"


def unpropagated_role(account_id: str, role_arn: str) -> str | None:
    """`role_arn` when CodeBuild cannot assume it (IAM has not propagated it yet, or it does not
    trust CodeBuild: `role_checks.unassumable`), else None."""
    return role_arn if unassumable(account_id, role_arn, "codebuild.amazonaws.com") else None


__all__ = ["AccountLimitExceededException", "admit", "check_start", "unpropagated_role"]
