"""Which resources AWS authorizes a call against, and with what request context.

`resources_for(call, prefix, account, partition)` gives one `Check` per (action, resource) that
IAM evaluates for the call:

- the actions: the catalogue's (`iam_catalogue.actions_for`); what AWS asks beyond them
  (`implied`: dependent actions, actions implied by parameters and tags set on create,
  implied resources, what a service validates on the caller); `iam:PassRole` for each role
  the call hands to a service (a task definition's roles, a build project's service role);
- the resources: ARNs in the catalogue's formats, filled from the call's parameters by one
  resolver per action (`RESOLVERS`). Actions the catalogue lists with no resource type are
  authorized against `*`. A role named by `RoleName` is authorized against its ARN with its path
  when it exists, and against the path-less ARN when it does not (as IAM does: a `GetRole` of a
  missing role under `/capstan/` is checked against `role/<name>`);
- the context: `aws:RequestTag/…` and `aws:TagKeys` from the tags the call sets,
  `aws:ResourceTag/…` from the tags the resource has now (`tags.tags_of`), the service keys a
  resolver adds (`iam:PassedToService`, `iam:PermissionsBoundary`, `iam:AWSServiceName`), and the
  global `aws:PrincipalAccount` and `aws:RequestedRegion`. Only keys the catalogue says the
  action supports stay, so a condition on a key AWS would not send fails here too.

An action the catalogue does not know is a `ResourceGap`. One that names resource types but has
no resolver here is authorized against `?`, an ARN no pattern but `*` matches: what the sandbox
cannot name, only a statement on every resource may allow.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

# The resolvers register themselves as they are imported.
from capstan_sandbox.cloud import (  # noqa: F401
    iam_catalogue,
    implied,
    implied_requests,
    policy,
    resolvers_compute,
    resolvers_iam,
    resolvers_network,
    resolvers_scheduler,
    service_linked,
)
from capstan_sandbox.cloud.requests import Call, request_tags
from capstan_sandbox.cloud.resolving import RESOLVERS, UNKNOWN, Scope, Target
from capstan_sandbox.cloud.tags import role_arn, tags_of


class ResourceGap(LookupError):
    """The sandbox does not know how IAM authorizes this operation."""


@dataclass(frozen=True)
class Check:
    """One request IAM evaluates for a call, and the error the service answers when it is
    refused (None: `AccessDenied`, in the protocol's shape)."""

    request: policy.Request
    refused_as: str | None = None


def resources_for(call: Call, prefix: str, account: str, partition: str) -> list[Check]:
    scope = Scope(call, prefix, account, partition)
    checks: list[Check] = []
    tags = request_tags(call)
    common: dict[str, list[str]] = {
        "aws:principalaccount": [account],
        "aws:requestedregion": [call.region],
    }
    seen: set[tuple[str, str]] = set()

    def ask(action: str, target: Target, sets: Mapping[str, str], refused_as: str | None) -> None:
        if (action.lower(), target.arn) in seen:
            return  # asked once, however many rules lead to it
        seen.add((action.lower(), target.arn))
        checks.append(Check(request_for(action, target, sets, common), refused_as))

    for action in iam_catalogue.actions_for(prefix, call.operation):
        entry = iam_catalogue.action(action)
        if entry is None:
            raise ResourceGap(f"{action} is not an IAM action in the catalogue")
        resolver = RESOLVERS.get(action.lower())
        if not entry.get("resourceTypes"):  # the catalogue says IAM checks it against "*"
            # (a resolver may add the keys the call gives, such as the cluster it lists)
            targets = resolver(scope) if resolver is not None else [Target("*")]
        elif resolver is not None:
            targets = resolver(scope)
        else:
            # AWS would name the resource; the sandbox cannot, so only "*" covers it (stricter).
            targets = [Target(UNKNOWN)]
        targets += implied.implied_resources(scope, action)
        for position, target in enumerate(targets):
            ask(action, target, tags, None)
            for also in implied.asked(scope, action, target, tags, first=position == 0):
                ask(also.action, also.target, tags if also.tags is None else also.tags, None)
    for also, rule in implied_requests.asked_by_parameters(scope):
        ask(also.action, also.target, tags if also.tags is None else also.tags, rule.refused_as)
    for passed, service in _passed_roles(scope):
        target = Target(passed, "role", {"iam:passedtoservice": [service]})
        ask("iam:PassRole", target, {}, None)
    linked = service_linked.missing(call, prefix, account, partition)
    if linked is not None:  # the service's first use makes its role, as the caller
        arn = service_linked.role_arn(account, partition, linked)
        target = Target(arn, "role", {"iam:awsservicename": [linked]}, existing=False)
        ask(service_linked.ACTION, target, {}, None)
    for also, rule in implied_requests.validated_by_service(scope):
        ask(also.action, also.target, tags if also.tags is None else also.tags, rule.refused_as)
    return checks


def request_for(
    action: str,
    target: Target,
    request_tags: Mapping[str, str],
    common: Mapping[str, list[str]],
) -> policy.Request:
    supported = iam_catalogue.supported_keys(action, target.type)
    context: dict[str, list[str]] = dict(common)
    if request_tags and "aws:requesttag/" in supported:
        for key, value in request_tags.items():
            context[f"aws:requesttag/{key.lower()}"] = [value]
    if request_tags and "aws:tagkeys" in supported:
        context["aws:tagkeys"] = list(request_tags)
    if target.existing and target.arn != "*" and "aws:resourcetag/" in supported:
        for key, value in (tags_of(target.arn) or {}).items():
            context[f"aws:resourcetag/{key.lower()}"] = [value]
    for key, values in target.context.items():
        if key in supported or key.startswith("aws:"):
            context[key] = list(values)
    return policy.Request(action=action, resource=target.arn, context=context)


# -- roles handed to services -------------------------------------------------------------------

_PASSED = {
    ("ecs", "RegisterTaskDefinition"): (
        ("taskRoleArn", "executionRoleArn"),
        "ecs-tasks.amazonaws.com",
    ),
    ("codebuild", "CreateProject"): (("serviceRole",), "codebuild.amazonaws.com"),
    ("codebuild", "UpdateProject"): (("serviceRole",), "codebuild.amazonaws.com"),
}


def _passed_roles(scope: Scope) -> Iterator[tuple[str, str]]:
    names, service = _PASSED.get((scope.prefix, scope.call.operation), ((), ""))
    for name in names:
        value = scope.call.params.get(name)
        if value:
            yield (
                (
                    value
                    if value.startswith("arn:")
                    else role_arn(scope.account, scope.partition, value)
                ),
                service,
            )
