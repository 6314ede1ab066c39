"""Role trust policies, evaluated for `sts:AssumeRole` the way AWS evaluates them.

The evaluation itself is `capstan_sandbox.cloud.policy`'s (the same evaluator authorizes every
call the customer role makes); this module adds what is particular to trust policies:

- principals: `"*"`, `{"AWS": "*"}`, or `{"AWS": [...]}` naming the caller's exact ARN, the role
  behind an assumed-role session, the caller's account root (`arn:aws:iam::A:root`) or bare
  account id; `NotPrincipal` is honoured;
- the request context holds `sts:ExternalId` when the caller sent one. Conditions on keys the
  request does not carry do not hold (as AWS treats a condition on a key absent from the request).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from capstan_sandbox.cloud import policy
from capstan_sandbox.cloud.policy import Decision, parse_policy

_ARN = re.compile(r"^arn:(?P<partition>[\w-]+):(?P<service>[\w-]+):[\w-]*:(?P<account>\d{12})?:")
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/[^/]+$"
)

__all__ = ["Decision", "TrustRequest", "caller_principals", "evaluate", "parse_policy"]


@dataclass(frozen=True)
class TrustRequest:
    """An `sts:AssumeRole` call as the trust policy sees it."""

    # Every name a trust policy may use for the caller (see `caller_principals`).
    principals: frozenset[str]
    # Condition keys (lower-case) and their values; a key absent or None is not in the request.
    context: Mapping[str, str | None] = field(default_factory=dict)
    action: str = "sts:AssumeRole"


def caller_principals(caller_arn: str, *, role_arn: str | None = None) -> frozenset[str]:
    """The names that admit `caller_arn`: itself, its account (root ARN and bare id) and, for an
    assumed-role session, its role's ARN (`role_arn`, which carries the role's path, when known).
    """
    names = {caller_arn}
    match = _ARN.match(caller_arn)
    if match is not None and match["account"]:
        names.add(match["account"])
        names.add(f"arn:{match['partition']}:iam::{match['account']}:root")
    assumed = _ASSUMED_ROLE.match(caller_arn)
    if assumed is not None:
        names.add(
            role_arn
            or f"arn:{assumed['partition']}:iam::{assumed['account']}:role/{assumed['role']}"
        )
    return frozenset(names)


def evaluate(document: str | Mapping[str, Any], request: TrustRequest) -> Decision:
    context = {key.lower(): [value] for key, value in request.context.items() if value is not None}
    try:
        return policy.evaluate(
            [document],
            policy.Request(action=request.action, context=context, principals=request.principals),
        )
    except policy.UnsupportedCondition:
        return Decision.IMPLICIT_DENY  # a trust policy the sandbox cannot read admits no one
