"""Extension: `sts:AssumeRole` enforces the role's trust policy, as AWS does.

moto issues credentials for any role ARN, existing or not, trusting anyone. With this extension
installed (`install()`, idempotent; `start_sandbox_cloud` does it) AssumeRole succeeds only when
the role exists in the target account, was made longer ago than IAM takes to propagate a new role
(`iam_propagation`: until then AWS refuses it as it refuses a role that is not there), and its
trust policy — every one it had in that time, for a trust policy just changed — admits the caller
with the external ID presented (see `capstan_sandbox.cloud.trust`). A refusal is AWS's: HTTP 403
`AccessDenied`, "User: <caller> is not authorized to perform: sts:AssumeRole on resource: <role>".

Every decision is recorded, like a CloudTrail event, so tests can prove what was (or was not)
attempted: `assume_role_attempts(role_arn=...)`.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from moto.core.exceptions import AccessDeniedError
from moto.iam.exceptions import NotFoundException
from moto.iam.models import iam_backends
from moto.sts.responses import TokenResponse

from capstan_sandbox.cloud import iam_propagation
from capstan_sandbox.cloud.trust import Decision, TrustRequest, caller_principals, evaluate

_ROLE_ARN = re.compile(
    r"^arn:(?P<partition>[\w-]+):iam::(?P<account>\d{12}):role/(?P<path_name>.+)$"
)
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/[^/]+$"
)
_MARK = "_capstan_trust_enforced"
_install_lock = threading.Lock()


@dataclass(frozen=True)
class AssumeRoleAttempt:
    at: datetime
    caller_arn: str
    role_arn: str
    external_id: str | None
    decision: Decision

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW


_attempts_lock = threading.Lock()
_attempts: deque[AssumeRoleAttempt] = deque(maxlen=10_000)


class AssumeRoleAccessDenied(AccessDeniedError):
    """STS's `AccessDenied` (HTTP 403) for a refused AssumeRole, worded as AWS words it."""

    def __init__(self, caller_arn: str, role_arn: str) -> None:
        super().__init__(user_arn=caller_arn, action=f"sts:AssumeRole on resource: {role_arn}")


def install() -> None:
    """Make moto's AssumeRole check trust policies (once per process), and IAM's changes take
    time to propagate (`iam_propagation`)."""
    iam_propagation.install()
    with _install_lock:
        if getattr(TokenResponse.assume_role, _MARK, False):
            return
        unchecked = TokenResponse.assume_role

        def assume_role(self: TokenResponse) -> Any:
            role_arn = str(self._get_param("RoleArn") or "")
            external_id = self._get_param("ExternalId")
            _user_id, caller_arn, _account = self.backend.get_caller_identity(
                self.get_access_key(), self.region
            )
            decision = decide(caller_arn=caller_arn, role_arn=role_arn, external_id=external_id)
            with _attempts_lock:
                _attempts.append(
                    AssumeRoleAttempt(
                        datetime.now(UTC), caller_arn, role_arn, external_id, decision
                    )
                )
            if decision is not Decision.ALLOW:
                raise AssumeRoleAccessDenied(caller_arn, role_arn)
            return unchecked(self)

        setattr(assume_role, _MARK, True)
        assume_role.__wrapped__ = unchecked  # type: ignore[attr-defined]
        TokenResponse.assume_role = assume_role  # type: ignore[method-assign]


def decide(*, caller_arn: str, role_arn: str, external_id: str | None) -> Decision:
    """Whether `caller_arn` may assume `role_arn` presenting `external_id`."""
    role = _find_role(role_arn)
    if role is None or iam_propagation.settling(role):
        return Decision.IMPLICIT_DENY
    request = TrustRequest(
        principals=caller_principals(caller_arn, role_arn=_session_role_arn(caller_arn)),
        context={"sts:externalid": external_id},
    )
    trusts = iam_propagation.trusts(role)
    for trust in trusts:
        decision = evaluate(trust, request)
        if decision is not Decision.ALLOW:
            return decision
    return Decision.ALLOW if trusts else Decision.IMPLICIT_DENY


def assume_role_attempts(
    *, role_arn: str | None = None, external_id: str | None = None
) -> list[AssumeRoleAttempt]:
    """AssumeRole calls seen by this process's sandbox, oldest first, optionally filtered."""
    with _attempts_lock:
        attempts = list(_attempts)
    return [
        attempt
        for attempt in attempts
        if (role_arn is None or attempt.role_arn == role_arn)
        and (external_id is None or attempt.external_id == external_id)
    ]


def _iam(partition: str, account: str) -> Any:
    try:
        return iam_backends[account][partition]
    except KeyError:
        return None


def _find_role(role_arn: str) -> Any:
    match = _ROLE_ARN.match(role_arn)
    if match is None:
        return None
    iam = _iam(match["partition"], match["account"])
    if iam is None:
        return None
    # The ARN names the role with its path, exactly (list(): other threads may add roles).
    return next((role for role in list(iam.roles.values()) if role.arn == role_arn), None)


def _session_role_arn(caller_arn: str) -> str | None:
    """The ARN (with its path) of the role behind an assumed-role session, if it still exists."""
    match = _ASSUMED_ROLE.match(caller_arn)
    if match is None:
        return None
    iam = _iam(match["partition"], match["account"])
    if iam is None:
        return None
    try:
        return str(iam.get_role(match["role"]).arn)
    except NotFoundException:
        return None
