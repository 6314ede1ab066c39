"""Role trust policies, evaluated for `sts:AssumeRole` the way AWS evaluates them.

A pure function of the policy document and the request, so it can be tested on its own:

- a statement applies when its action, principal and every condition match the request;
- an applicable `Deny` wins over everything, otherwise an applicable `Allow` allows, otherwise
  the request is implicitly denied;
- principals: `"*"`, `{"AWS": "*"}`, or `{"AWS": [...]}` naming the caller's exact ARN, the role
  behind an assumed-role session, the caller's account root (`arn:aws:iam::A:root`) or bare
  account id; `NotPrincipal` and `NotAction` are honoured;
- conditions: `StringEquals` and `StringLike` (with `*` and `?`) on `sts:ExternalId`, values
  compared case-sensitively, any one of a list of values matching. A key the request does not
  carry (no external ID sent) does not match. Operators and keys the sandbox does not implement
  never match, so an `Allow` using them never allows (and a `Deny` using them never denies —
  as AWS treats a condition on a key absent from the request).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from urllib.parse import unquote

_ARN = re.compile(r"^arn:(?P<partition>[\w-]+):(?P<service>[\w-]+):[\w-]*:(?P<account>\d{12})?:")
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/[^/]+$"
)
_SUPPORTED_KEYS = frozenset({"sts:externalid"})


class Decision(Enum):
    ALLOW = "allow"
    IMPLICIT_DENY = "implicit_deny"
    EXPLICIT_DENY = "explicit_deny"


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


def parse_policy(document: str | Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A policy document as stored by IAM (JSON, possibly URL-encoded); None if unreadable."""
    if isinstance(document, Mapping):
        return document
    for text in (document, unquote(document)):
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        return parsed if isinstance(parsed, Mapping) else None
    return None


def evaluate(document: str | Mapping[str, Any], request: TrustRequest) -> Decision:
    policy = parse_policy(document)
    if policy is None:
        return Decision.IMPLICIT_DENY
    statements = policy.get("Statement", [])
    if isinstance(statements, Mapping):
        statements = [statements]
    allowed = False
    for statement in statements if isinstance(statements, list) else []:
        if not isinstance(statement, Mapping) or not _applies(statement, request):
            continue
        effect = statement.get("Effect")
        if effect == "Deny":
            return Decision.EXPLICIT_DENY
        if effect == "Allow":
            allowed = True
    return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


def _applies(statement: Mapping[str, Any], request: TrustRequest) -> bool:
    if "Action" in statement:
        if not _any_action_matches(statement["Action"], request.action):
            return False
    elif "NotAction" in statement:
        if _any_action_matches(statement["NotAction"], request.action):
            return False
    else:
        return False
    if "Principal" in statement:
        if not _principal_matches(statement["Principal"], request.principals):
            return False
    elif "NotPrincipal" in statement:
        if _principal_matches(statement["NotPrincipal"], request.principals):
            return False
    else:
        return False
    return _conditions_hold(statement.get("Condition", {}), request.context)


def _strings(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    return [_as_string(v) for v in values]


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _any_action_matches(patterns: Any, action: str) -> bool:
    return any(
        _wildcard(pattern, case_sensitive=False).fullmatch(action) for pattern in _strings(patterns)
    )


def _principal_matches(principal: Any, names: frozenset[str]) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        return False
    # Only IAM principals ("AWS") call AssumeRole; Service, Federated and CanonicalUser never match.
    return any(value == "*" or value in names for value in _strings(principal.get("AWS", [])))


def _conditions_hold(conditions: Any, context: Mapping[str, str | None]) -> bool:
    if not isinstance(conditions, Mapping):
        return False
    for operator, tests in conditions.items():
        if operator not in ("StringEquals", "StringLike") or not isinstance(tests, Mapping):
            return False
        for key, expected in tests.items():
            lowered = str(key).lower()
            if lowered not in _SUPPORTED_KEYS:
                return False
            actual = context.get(lowered)
            if actual is None or not _string_matches(operator, _strings(expected), actual):
                return False
    return True


def _string_matches(operator: str, expected: Iterable[str], actual: str) -> bool:
    if operator == "StringEquals":
        return any(actual == value for value in expected)
    return any(_wildcard(value, case_sensitive=True).fullmatch(actual) for value in expected)


def _wildcard(pattern: str, *, case_sensitive: bool) -> re.Pattern[str]:
    body = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern
    )
    flags = re.DOTALL if case_sensitive else re.DOTALL | re.IGNORECASE
    return re.compile(body, flags)
