"""What a resolver works with: the call's `Scope`, the `Target`s it names, and the registry.

A resolver gives the resources one IAM action is authorized against, from the call's
parameters (`resolves("ecs:CreateService")`); `resources.resources_for` runs them. The resolvers
themselves live by service family: `resolvers_compute` (ECS, ECR, logs, SSM, S3, CodeBuild),
`resolvers_network` (ELB, EC2, ACM, CloudFront, ElastiCache, Route 53, Application Auto
Scaling) and `resolvers_iam`. Where a resource does not exist yet its id is unknown: the ARN ends
in `*` (`vpc/*`) and `existing` is False, so no `aws:ResourceTag` is looked up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from capstan_sandbox.cloud.requests import Call

UNKNOWN = "?"  # a resource the sandbox cannot name: only a statement on "*" covers it


@dataclass(frozen=True)
class Target:
    """One resource a call acts on: its ARN, its catalogue resource type, keys it adds."""

    arn: str
    type: str | None = None
    context: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # Tags that the resource has now are looked up (aws:ResourceTag) unless it is being created.
    existing: bool = True


@dataclass(frozen=True)
class Scope:
    call: Call
    prefix: str
    account: str
    partition: str

    @property
    def region(self) -> str:
        return self.call.region

    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        return (
            f"arn:{self.partition}:{service}:{self.region if region else ''}:"
            f"{self.account if account else ''}:{resource}"
        )


# Services where tagging a resource in the call that creates it is authorized as a second
# action, on the new resource, with `<service>:CreateAction` naming the call (AWS documents this
# for each of them).


Resolver = Callable[[Scope], list[Target]]
RESOLVERS: dict[str, Resolver] = {}


def resolves(*actions: str) -> Callable[[Resolver], Resolver]:
    def register(resolver: Resolver) -> Resolver:
        for action in actions:
            RESOLVERS[action.lower()] = resolver
        return resolver

    return register


def last(value: str) -> str:
    return value.rsplit("/", 1)[-1]


def numbered(call: Call, stem: str) -> list[str]:
    """Values of a list parameter in any protocol's flattening (`Names.member.1`, `names.1`)."""
    return call.all(rf"{re.escape(stem)}(?:\.member)?\.\d+")
