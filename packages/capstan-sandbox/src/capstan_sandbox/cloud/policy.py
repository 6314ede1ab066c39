"""IAM policy evaluation, as AWS documents it, for one request against policy documents.

A pure function of the documents and the request, so it can be tested on its own:

- a statement applies when its action (`Action`/`NotAction`, case-insensitive wildcards), its
  resource (`Resource`/`NotResource`, case-sensitive ARN wildcards), its principal when the
  caller asks for one (`Principal`/`NotPrincipal`, trust and resource policies; an IAM caller
  or a service principal) and every condition match the request;
- in one set of policies an applicable `Deny` wins over everything, otherwise an applicable
  `Allow` allows, otherwise the request is implicitly denied;
- an identity-based request (`authorize`) is allowed only when the identity's policies allow it
  and, if the identity has a permissions boundary, the boundary allows it too; an explicit deny
  in either denies;
- conditions: the string, ARN, numeric, `Bool` and `Null` operators, their `IfExists` forms and
  the `ForAllValues:`/`ForAnyValue:` set qualifiers. A key the request does not carry matches
  nothing (a negated operator then holds, as AWS documents). An operator this module does not
  know raises `UnsupportedCondition`: the sandbox refuses to guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any
from urllib.parse import unquote


class Decision(Enum):
    ALLOW = "allow"
    IMPLICIT_DENY = "implicit_deny"
    EXPLICIT_DENY = "explicit_deny"


class UnsupportedCondition(ValueError):
    """A condition operator the sandbox does not evaluate."""


@dataclass(frozen=True)
class Request:
    """One action on one resource, with the request context's condition keys."""

    action: str  # "iam:GetRole"
    resource: str = "*"  # the ARN AWS authorizes this action against, or "*"
    # Condition keys, lower-case, each with its values (a single-valued key has one).
    context: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # Every name a `Principal` element may use for the caller (trust and resource policies).
    principals: frozenset[str] | None = None


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


def statements(document: str | Mapping[str, Any]) -> list[Mapping[str, Any]]:
    policy = parse_policy(document)
    if policy is None:
        return []
    found = policy.get("Statement", [])
    if isinstance(found, Mapping):
        found = [found]
    return [s for s in found if isinstance(s, Mapping)] if isinstance(found, list) else []


def evaluate(documents: Iterable[str | Mapping[str, Any]], request: Request) -> Decision:
    """The decision of one set of policies (say, a role's identity policies) on `request`."""
    allowed = False
    for document in documents:
        for statement in statements(document):
            if not applies(statement, request):
                continue
            if statement.get("Effect") == "Deny":
                return Decision.EXPLICIT_DENY
            if statement.get("Effect") == "Allow":
                allowed = True
    return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    # Why not, in AWS's words: "no identity-based policy allows the X action", ...
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW


def authorize(
    identity: Sequence[str | Mapping[str, Any]],
    boundary: str | Mapping[str, Any] | None,
    request: Request,
) -> Verdict:
    """An identity-based request: the identity's policies, then its permissions boundary."""
    by_identity = evaluate(identity, request)
    by_boundary = evaluate([boundary], request) if boundary is not None else Decision.ALLOW
    if by_identity is Decision.EXPLICIT_DENY:
        return Verdict(
            Decision.EXPLICIT_DENY,
            "with an explicit deny in an identity-based policy",
        )
    if by_boundary is Decision.EXPLICIT_DENY:
        return Verdict(Decision.EXPLICIT_DENY, "with an explicit deny in a permissions boundary")
    if by_identity is not Decision.ALLOW:
        return Verdict(
            Decision.IMPLICIT_DENY,
            f"because no identity-based policy allows the {request.action} action",
        )
    if by_boundary is not Decision.ALLOW:
        return Verdict(
            Decision.IMPLICIT_DENY,
            f"because no permissions boundary allows the {request.action} action",
        )
    return Verdict(Decision.ALLOW)


def authorize_in_every(
    states: Sequence[tuple[Sequence[str | Mapping[str, Any]], str | Mapping[str, Any] | None]],
    request: Request,
) -> Verdict:
    """An identity-based request while its policies may be answered from any of `states` (IAM
    propagating a change): allowed only if each allows it; else the first refusal, an explicit
    deny before an implicit one."""
    refusals = [
        verdict
        for identity, boundary in states
        if not (verdict := authorize(identity, boundary, request)).allowed
    ]
    if not refusals:
        return Verdict(Decision.ALLOW)
    explicit = [v for v in refusals if v.decision is Decision.EXPLICIT_DENY]
    return (explicit or refusals)[0]


# -- one statement ----------------------------------------------------------------------------


def applies(statement: Mapping[str, Any], request: Request) -> bool:
    if "Action" in statement:
        if not any(_matches(p, request.action, case=False) for p in strings(statement["Action"])):
            return False
    elif "NotAction" in statement:
        if any(_matches(p, request.action, case=False) for p in strings(statement["NotAction"])):
            return False
    else:
        return False
    if request.principals is None:
        if not _resource_applies(statement, request.resource):
            return False
    else:
        if not _principal_applies(statement, request.principals):
            return False
        # A resource policy (a bucket's) names its resources too; a trust policy names none.
        has_resource = "Resource" in statement or "NotResource" in statement
        if has_resource and not _resource_applies(statement, request.resource):
            return False
    return conditions_hold(statement.get("Condition", {}), request.context)


def _resource_applies(statement: Mapping[str, Any], resource: str) -> bool:
    if "Resource" in statement:
        return any(_matches(p, resource, case=True) for p in strings(statement["Resource"]))
    if "NotResource" in statement:
        return not any(_matches(p, resource, case=True) for p in strings(statement["NotResource"]))
    return False


def _principal_applies(statement: Mapping[str, Any], names: frozenset[str]) -> bool:
    if "Principal" in statement:
        return _principal_matches(statement["Principal"], names)
    if "NotPrincipal" in statement:
        return not _principal_matches(statement["NotPrincipal"], names)
    return False


def _principal_matches(principal: Any, names: frozenset[str]) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        return False
    # An IAM caller is named under "AWS" (its ARN, its account); a service acting on its own
    # (CloudFront reading a bucket) under "Service" (`cloudfront.amazonaws.com`). Federated and
    # CanonicalUser principals are never callers here.
    named = strings(principal.get("AWS", [])) + strings(principal.get("Service", []))
    return any(value == "*" or value in names for value in named)


def strings(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    return [_as_string(v) for v in values]


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- conditions -------------------------------------------------------------------------------

_Compare = Callable[[str, str], bool]


def _numeric(test: Callable[[float, float], bool]) -> _Compare:
    def compare(actual: str, expected: str) -> bool:
        try:
            return test(float(actual), float(expected))
        except ValueError:
            return False

    return compare


# operator -> (compare(actual, expected), negated)
_OPERATORS: dict[str, tuple[_Compare, bool]] = {
    "StringEquals": (lambda a, e: a == e, False),
    "StringNotEquals": (lambda a, e: a == e, True),
    "StringEqualsIgnoreCase": (lambda a, e: a.lower() == e.lower(), False),
    "StringNotEqualsIgnoreCase": (lambda a, e: a.lower() == e.lower(), True),
    "StringLike": (lambda a, e: _matches(e, a, case=True), False),
    "StringNotLike": (lambda a, e: _matches(e, a, case=True), True),
    "ArnEquals": (lambda a, e: _matches(e, a, case=True), False),
    "ArnLike": (lambda a, e: _matches(e, a, case=True), False),
    "ArnNotEquals": (lambda a, e: _matches(e, a, case=True), True),
    "ArnNotLike": (lambda a, e: _matches(e, a, case=True), True),
    "Bool": (lambda a, e: a.lower() == e.lower(), False),
    "NumericEquals": (_numeric(lambda a, e: a == e), False),
    "NumericNotEquals": (_numeric(lambda a, e: a == e), True),
    "NumericLessThan": (_numeric(lambda a, e: a < e), False),
    "NumericLessThanEquals": (_numeric(lambda a, e: a <= e), False),
    "NumericGreaterThan": (_numeric(lambda a, e: a > e), False),
    "NumericGreaterThanEquals": (_numeric(lambda a, e: a >= e), False),
}


def conditions_hold(conditions: Any, context: Mapping[str, Sequence[str]]) -> bool:
    if not isinstance(conditions, Mapping):
        return False
    for operator, tests in conditions.items():
        if not isinstance(tests, Mapping):
            return False
        for key, expected in tests.items():
            if not _condition_holds(str(operator), strings(expected), context.get(key.lower())):
                return False
    return True


def _condition_holds(operator: str, expected: list[str], actual: Sequence[str] | None) -> bool:
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    present = bool(actual)
    if base == "Null":
        want_absent = any(value.lower() == "true" for value in expected)
        return not present if want_absent else present
    if base not in _OPERATORS or qualifier not in ("", "ForAllValues", "ForAnyValue"):
        raise UnsupportedCondition(operator)
    compare, negated = _OPERATORS[base]

    def one(value: str) -> bool:
        hit = any(compare(value, candidate) for candidate in expected)
        return not hit if negated else hit

    if qualifier == "ForAllValues":
        return all(one(value) for value in actual or [])
    if not present:
        return if_exists or (negated and qualifier == "")
    assert actual is not None
    return any(one(value) for value in actual)


@lru_cache(maxsize=4096)
def _pattern(pattern: str, case: bool) -> re.Pattern[str]:
    body = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern
    )
    return re.compile(body, re.DOTALL if case else re.DOTALL | re.IGNORECASE)


def _matches(pattern: str, value: str, *, case: bool) -> bool:
    return _pattern(pattern, case).fullmatch(value) is not None
