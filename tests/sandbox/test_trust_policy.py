"""The trust-policy evaluator on its own: principals, actions, conditions, Deny."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from capstan_sandbox.cloud import policy as policy_module
from capstan_sandbox.cloud.trust import (
    Decision,
    TrustRequest,
    caller_principals,
    evaluate,
    parse_policy,
)

CONTROL_PLANE = "arn:aws:iam::111111111111:user/capstan-control-plane"
OTHER_USER = "arn:aws:iam::222222222222:user/mallory"
SESSION = "arn:aws:sts::333333333333:assumed-role/deployer/ci-run-7"


def request(caller: str = CONTROL_PLANE, external_id: str | None = "ext-1") -> TrustRequest:
    return TrustRequest(
        principals=caller_principals(caller), context={"sts:externalid": external_id}
    )


def allow(principal: Any = CONTROL_PLANE, **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole", **extra}


def policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def with_external_id(value: Any, operator: str = "StringEquals") -> dict[str, Any]:
    return {"Condition": {operator: {"sts:ExternalId": value}}}


def test_caller_principals_name_the_caller_its_account_and_its_role() -> None:
    assert caller_principals(CONTROL_PLANE) == {
        CONTROL_PLANE,
        "111111111111",
        "arn:aws:iam::111111111111:root",
    }
    assert caller_principals(SESSION) == {
        SESSION,
        "333333333333",
        "arn:aws:iam::333333333333:root",
        "arn:aws:iam::333333333333:role/deployer",
    }
    with_path = "arn:aws:iam::333333333333:role/team/deployer"
    assert with_path in caller_principals(SESSION, role_arn=with_path)


@pytest.mark.parametrize(
    "principal",
    [
        {"AWS": CONTROL_PLANE},
        {"AWS": [OTHER_USER, CONTROL_PLANE]},
        {"AWS": "arn:aws:iam::111111111111:root"},
        {"AWS": "111111111111"},
        {"AWS": "*"},
        "*",
    ],
)
def test_principals_that_admit_the_caller(principal: Any) -> None:
    assert evaluate(policy(allow(principal)), request()) is Decision.ALLOW


@pytest.mark.parametrize(
    "principal",
    [
        {"AWS": OTHER_USER},
        {"AWS": "arn:aws:iam::222222222222:root"},
        {"AWS": "222222222222"},
        {"AWS": "arn:aws:iam::111111111111:user/capstan-*"},  # no partial wildcards in AWS
        {"Service": "ecs-tasks.amazonaws.com"},
        {"Federated": "arn:aws:iam::111111111111:saml-provider/x"},
        "arn:aws:iam::111111111111:root",
    ],
)
def test_principals_that_do_not(principal: Any) -> None:
    assert evaluate(policy(allow(principal)), request()) is Decision.IMPLICIT_DENY


def test_a_session_is_admitted_through_its_role() -> None:
    document = policy(allow({"AWS": "arn:aws:iam::333333333333:role/deployer"}))
    assert evaluate(document, request(SESSION)) is Decision.ALLOW
    assert evaluate(document, request(CONTROL_PLANE)) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    "action", ["sts:AssumeRole", "sts:assumerole", "sts:*", "*", "sts:Assume*"]
)
def test_actions_that_cover_assume_role(action: str) -> None:
    statement = {**allow({"AWS": CONTROL_PLANE}), "Action": [action]}
    assert evaluate(policy(statement), request()) is Decision.ALLOW


@pytest.mark.parametrize(
    "action", ["sts:AssumeRoleWithWebIdentity", "sts:TagSession", "iam:*", "sts:AssumeRole?"]
)
def test_actions_that_do_not(action: str) -> None:
    statement = {**allow({"AWS": CONTROL_PLANE}), "Action": action}
    assert evaluate(policy(statement), request()) is Decision.IMPLICIT_DENY


def test_external_id_must_equal() -> None:
    document = policy(allow({"AWS": CONTROL_PLANE}, **with_external_id("ext-1")))
    assert evaluate(document, request(external_id="ext-1")) is Decision.ALLOW
    assert evaluate(document, request(external_id="ext-2")) is Decision.IMPLICIT_DENY
    assert evaluate(document, request(external_id="EXT-1")) is Decision.IMPLICIT_DENY
    assert evaluate(document, request(external_id=None)) is Decision.IMPLICIT_DENY


def test_external_id_any_of_a_list() -> None:
    document = policy(allow({"AWS": CONTROL_PLANE}, **with_external_id(["a-1", "ext-1"])))
    assert evaluate(document, request(external_id="ext-1")) is Decision.ALLOW
    assert evaluate(document, request(external_id="b-1")) is Decision.IMPLICIT_DENY


def test_external_id_string_like() -> None:
    document = policy(allow({"AWS": CONTROL_PLANE}, **with_external_id("ext-?-*", "StringLike")))
    assert evaluate(document, request(external_id="ext-7-anything")) is Decision.ALLOW
    assert evaluate(document, request(external_id="ext-77-x")) is Decision.IMPLICIT_DENY
    assert evaluate(document, request(external_id=None)) is Decision.IMPLICIT_DENY
    literal = policy(allow({"AWS": CONTROL_PLANE}, **with_external_id("a.b", "StringLike")))
    assert evaluate(literal, request(external_id="axb")) is Decision.IMPLICIT_DENY


def test_condition_key_names_are_case_insensitive() -> None:
    document = policy(
        allow({"AWS": CONTROL_PLANE}, Condition={"StringEquals": {"STS:externalid": "ext-1"}})
    )
    assert evaluate(document, request()) is Decision.ALLOW


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"aws:PrincipalAccount": "111111111111"}},
        {"StringEquals": {"sts:ExternalId": "ext-1", "aws:SourceIp": "10.0.0.1"}},
        {
            "StringEquals": {"sts:ExternalId": "ext-1"},
            "Bool": {"aws:MultiFactorAuthPresent": "true"},
        },
    ],
)
def test_conditions_on_keys_the_request_lacks_are_not_satisfied(condition: dict[str, Any]) -> None:
    document = policy(allow({"AWS": CONTROL_PLANE}, Condition=condition))
    assert evaluate(document, request()) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEqualsIgnoreCase": {"sts:ExternalId": "EXT-1"}},
        {"StringEqualsIfExists": {"sts:ExternalId": "ext-1"}},
        {"ForAnyValue:StringEquals": {"sts:ExternalId": ["other", "ext-1"]}},
        {"StringNotEquals": {"sts:ExternalId": "leaked"}},
    ],
)
def test_the_operators_aws_documents(condition: dict[str, Any]) -> None:
    document = policy(allow({"AWS": CONTROL_PLANE}, Condition=condition))
    assert evaluate(document, request()) is Decision.ALLOW


def test_an_operator_the_sandbox_cannot_read_admits_no_one() -> None:
    condition = {"DateLessThan": {"aws:CurrentTime": "2999-01-01T00:00:00Z"}}
    document = policy(allow({"AWS": CONTROL_PLANE}, Condition=condition))
    assert evaluate(document, request()) is Decision.IMPLICIT_DENY


def test_every_condition_must_hold() -> None:
    condition = {
        "StringEquals": {"sts:ExternalId": "ext-1"},
        "StringLike": {"sts:ExternalId": "ext-*"},
    }
    document = policy(allow({"AWS": CONTROL_PLANE}, Condition=condition))
    assert evaluate(document, request(external_id="ext-1")) is Decision.ALLOW
    condition["StringLike"] = {"sts:ExternalId": "other-*"}
    assert evaluate(document, request(external_id="ext-1")) is Decision.IMPLICIT_DENY


def test_explicit_deny_wins() -> None:
    deny = {**allow({"AWS": "*"}), "Effect": "Deny", **with_external_id("leaked")}
    document = policy(allow({"AWS": CONTROL_PLANE}), deny)
    assert evaluate(document, request(external_id="fine")) is Decision.ALLOW
    assert evaluate(document, request(external_id="leaked")) is Decision.EXPLICIT_DENY


def test_not_principal_and_not_action() -> None:
    deny_others = {"Effect": "Deny", "NotPrincipal": {"AWS": CONTROL_PLANE}, "Action": "*"}
    document = policy(allow("*"), deny_others)
    assert evaluate(document, request(CONTROL_PLANE)) is Decision.ALLOW
    assert evaluate(document, request(OTHER_USER)) is Decision.EXPLICIT_DENY
    not_action = {"Effect": "Allow", "Principal": "*", "NotAction": "sts:TagSession"}
    assert evaluate(policy(not_action), request()) is Decision.ALLOW
    not_assume = {"Effect": "Allow", "Principal": "*", "NotAction": "sts:Assume*"}
    assert evaluate(policy(not_assume), request()) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    "document",
    [
        "",
        "not json",
        "[]",
        json.dumps({"Statement": "nope"}),
        json.dumps({"Statement": [allow(CONTROL_PLANE) | {"Effect": "allow"}]}),
        json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*"}]}),
        json.dumps({"Statement": [{"Effect": "Allow", "Action": "*"}]}),
    ],
)
def test_unreadable_or_incomplete_policies_deny(document: str) -> None:
    assert evaluate(document, request()) is Decision.IMPLICIT_DENY


def test_documents_as_iam_stores_them() -> None:
    document = policy(allow({"AWS": CONTROL_PLANE}))
    assert evaluate(json.dumps(document), request()) is Decision.ALLOW
    assert evaluate(quote(json.dumps(document)), request()) is Decision.ALLOW
    single = {"Version": "2012-10-17", "Statement": allow({"AWS": CONTROL_PLANE})}
    assert evaluate(single, request()) is Decision.ALLOW
    assert parse_policy(json.dumps(document)) == document


# -- a resource policy with a service principal (CloudFront reading a bucket) ---------------------

DISTRIBUTION = "arn:aws:cloudfront::111111111111:distribution/EDFDVBD6EXAMPLE"
READ_THROUGH_OAC = {
    "Effect": "Allow",
    "Principal": {"Service": "cloudfront.amazonaws.com"},
    "Action": "s3:GetObject",
    "Resource": "arn:aws:s3:::capstan-site-x/*",
    "Condition": {"StringEquals": {"AWS:SourceArn": DISTRIBUTION}},
}


def _cloudfront_reads(key: str, source: str = DISTRIBUTION) -> policy_module.Decision:
    request = policy_module.Request(
        action="s3:GetObject",
        resource=f"arn:aws:s3:::{key}",
        context={"aws:sourcearn": [source]},
        principals=frozenset({"cloudfront.amazonaws.com"}),
    )
    return policy_module.evaluate([policy(READ_THROUGH_OAC)], request)


def test_a_bucket_policy_admits_its_distribution_to_its_own_objects_only() -> None:
    assert _cloudfront_reads("capstan-site-x/index.html") is Decision.ALLOW
    assert _cloudfront_reads("capstan-site-y/index.html") is Decision.IMPLICIT_DENY  # Resource
    assert _cloudfront_reads("capstan-site-x/index.html", DISTRIBUTION[:-1] + "Z") is (
        Decision.IMPLICIT_DENY
    )
    other_service = {**READ_THROUGH_OAC, "Principal": {"Service": "ecs-tasks.amazonaws.com"}}
    request = policy_module.Request(
        action="s3:GetObject",
        resource="arn:aws:s3:::capstan-site-x/index.html",
        context={"aws:sourcearn": [DISTRIBUTION]},
        principals=frozenset({"cloudfront.amazonaws.com"}),
    )
    assert policy_module.evaluate([policy(other_service)], request) is Decision.IMPLICIT_DENY
