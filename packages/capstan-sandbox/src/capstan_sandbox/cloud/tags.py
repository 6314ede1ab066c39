"""Tags a resource has now, read from moto's backends by ARN (for `aws:ResourceTag/…`).

`tags_of(arn)` answers {key: value}, {} for a resource without tags, and None when the sandbox
cannot tell (the resource does not exist, or its service is not taught here): the authorizer then
puts no `aws:ResourceTag` key in the context, so a condition on one does not hold — stricter than
AWS, never looser.
"""

from __future__ import annotations

import re
from typing import Any

_ARN = re.compile(
    r"^arn:(?P<partition>[\w-]+):(?P<service>[\w-]+):(?P<region>[\w-]*):(?P<account>\d*):"
    r"(?P<resource>.+)$"
)
_EC2_ID = re.compile(r"^[a-z-]+/(?P<id>[a-z]+-[0-9a-f]+)$")


def tags_of(arn: str) -> dict[str, str] | None:
    matched = _ARN.match(arn)
    if matched is None:
        return None
    reader = _READERS.get(matched["service"])
    if reader is None:
        return None
    try:
        return reader(
            matched["partition"], matched["region"], matched["account"], arn, matched["resource"]
        )
    except (KeyError, AttributeError, LookupError):
        return None


def find_role(account: str, partition: str, name: str) -> Any:
    """moto's role called `name` in `account` (role names are unique in an account), or None."""
    from moto.iam.models import iam_backends

    try:
        roles = list(iam_backends[account][partition].roles.values())
    except KeyError:
        return None
    return next((role for role in roles if role.name == name), None)


def role_arn(account: str, partition: str, name: str) -> str:
    """A role's ARN: with its path when it exists, without one when it does not (IAM checks a
    missing role against `role/<name>`)."""
    role = find_role(account, partition, name)
    return str(role.arn) if role is not None else f"arn:{partition}:iam::{account}:role/{name}"


def _ec2(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.ec2.models import ec2_backends

    matched = _EC2_ID.match(resource)
    if matched is None:
        return None
    backend = ec2_backends[account][region]
    if matched["id"] not in backend.tags:
        return None if not _ec2_exists(backend, matched["id"]) else {}
    return dict(backend.tags[matched["id"]])


def _ec2_exists(backend: Any, resource_id: str) -> bool:
    for collection in ("vpcs", "subnets", "internet_gateways", "route_tables", "groups"):
        found = getattr(backend, collection, None)
        if isinstance(found, dict) and (
            resource_id in found
            or any(resource_id in v for v in found.values() if isinstance(v, dict))
        ):
            return True
    return False


def _acm(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.acm.models import acm_backends

    bundle = acm_backends[account][region]._certificates.get(arn)
    if bundle is None:
        return None
    return {key: value or "" for key, value in bundle.tags.items()}


def _cloudfront(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.cloudfront.models import cloudfront_backends

    backend = cloudfront_backends[account][partition if partition != "aws" else "global"]
    listed = backend.tagger.list_tags_for_resource(arn)["Tags"]
    return {tag["Key"]: tag["Value"] for tag in listed}


def _iam(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.iam.models import iam_backends

    iam = iam_backends[account][partition]
    for role in list(iam.roles.values()):
        if role.arn == arn:
            tags: Any = role.tags  # {key: {"Key": key, "Value": value}}
            return {key: tag["Value"] for key, tag in tags.items()}
    return None


def _ssm(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.ssm.models import ssm_backends

    backend = ssm_backends[account][region]
    name = resource.removeprefix("parameter")
    if backend.get_parameter(name) is None:
        return None
    return dict(backend.list_tags_for_resource("Parameter", name))


def _secretsmanager(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.secretsmanager.models import secretsmanager_backends

    secrets = secretsmanager_backends[account][region].secrets
    if arn not in secrets:
        return None
    return {tag["Key"]: tag["Value"] for tag in secrets[arn].tags or []}


def _ecr(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.ecr.models import ecr_backends

    backend = ecr_backends[account][region]
    if resource.removeprefix("repository/") not in backend.repositories:
        return None
    return {tag["Key"]: tag["Value"] for tag in backend.list_tags_for_resource(arn)["tags"]}


def _ecs(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    """A task definition's, cluster's or service's tags (`aws:ResourceTag` on RunTask...)."""
    from moto.ecs.models import ecs_backends

    try:
        tags = ecs_backends[account][region].list_tags_for_resource(arn)
    except Exception:  # moto's not-found errors are its own classes: not there, no tags
        return None
    return {tag["key"]: tag["value"] for tag in tags or []}


def _scheduler(
    partition: str, region: str, account: str, arn: str, resource: str
) -> dict[str, str] | None:
    from moto.scheduler.models import scheduler_backends

    tags = scheduler_backends[account][region].list_tags_for_resource(arn)["Tags"]
    return {tag["Key"]: tag["Value"] for tag in tags}


_READERS = {
    "ecr": _ecr,
    "ecs": _ecs,
    "scheduler": _scheduler,
    "ec2": _ec2,
    "acm": _acm,
    "cloudfront": _cloudfront,
    "iam": _iam,
    "ssm": _ssm,
    "secretsmanager": _secretsmanager,
}
