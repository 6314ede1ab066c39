"""Elastic Load Balancing v2: the host-header rules of a project's listeners — per web server one
rule forwarding its hostname to its target group, on the listener that serves it (HTTP, or HTTPS
once the project's certificate is issued and HTTP redirects to it; `move_host_rules` moves them
between the two). The load balancer, its listeners and the target groups themselves are
`elbv2`."""

from __future__ import annotations

import hashlib
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import QuotaExceededError, TerminalCloudError

_MAX_PRIORITY = 50_000
# DescribeRules answers a page at a time: this many rules at most (AWS's largest page; without
# `PageSize` a page is smaller — moto's 50).
RULES_PAGE = 400
# A host-header condition value holds at most 128 characters (a DNS name up to 253).
HOST_HEADER_CHARS = 128
# On a custom domain's rule (its value: the domain's id), beside the project and resource tags.
DOMAIN_TAG = "capstan:domain"


def _client(session: AwsSession) -> Any:
    return session.client("elbv2")


def listener_rules(elbv2: Any, listener_arn: str) -> list[dict[str, Any]]:
    """Every rule of the listener (its default rule too), page after page."""
    pages = elbv2.get_paginator("describe_rules").paginate(
        ListenerArn=listener_arn, PaginationConfig={"PageSize": RULES_PAGE}
    )
    return [rule for page in pages for rule in page["Rules"]]


def _rules_for(
    elbv2: Any, listener_arn: str, target_group_arn: str, *, own: str | None = None
) -> list[dict[str, Any]]:
    """The listener's rules forwarding to the target group (one, unless a retried first
    roll-out made a second: see `ensure_host_rule`), a custom domain's rules to the group left
    out (`DOMAIN_TAG`). Rules matching the target's `own` hostname are its own (a domain never
    holds a service's hostname): the tags are read only when another rule is there."""
    found = []
    for rule in listener_rules(elbv2, listener_arn):
        for action in rule.get("Actions", []):
            forward = action.get("ForwardConfig", {}).get("TargetGroups", [])
            if action.get("TargetGroupArn") == target_group_arn or any(
                group.get("TargetGroupArn") == target_group_arn for group in forward
            ):
                found.append(dict(rule))
                break
    if not found or (own is not None and all(_hosts(r) == [host_pattern(own)] for r in found)):
        return found
    tags = _tags(elbv2, [str(rule["RuleArn"]) for rule in found])
    return [rule for rule in found if DOMAIN_TAG not in tags.get(str(rule["RuleArn"]), {})]


def _every_rule_to(elbv2: Any, listener_arn: str, target_group_arn: str) -> list[dict[str, Any]]:
    """Every rule forwarding to the target group, a custom domain's too."""
    found = []
    for rule in listener_rules(elbv2, listener_arn):
        if _forwarded_group(rule) == target_group_arn or any(
            group.get("TargetGroupArn") == target_group_arn
            for action in rule.get("Actions", [])
            for group in action.get("ForwardConfig", {}).get("TargetGroups", [])
        ):
            found.append(dict(rule))
    return found


def _rule_for(
    elbv2: Any, listener_arn: str, target_group_arn: str, *, own: str | None = None
) -> dict[str, Any] | None:
    found = _rules_for(elbv2, listener_arn, target_group_arn, own=own)
    return found[0] if found else None


def _tags(elbv2: Any, arns: list[str]) -> dict[str, dict[str, str]]:
    """The tags of these rules, by ARN (DescribeTags takes 20 at a time)."""
    tags: dict[str, dict[str, str]] = {}
    for start in range(0, len(arns), 20):
        for description in elbv2.describe_tags(ResourceArns=arns[start : start + 20])[
            "TagDescriptions"
        ]:
            tags[description["ResourceArn"]] = {
                tag["Key"]: tag["Value"] for tag in description.get("Tags", [])
            }
    return tags


def host_pattern(hostname: str) -> str:
    """The host-header value matching `hostname`: the name itself when it fits 128 characters,
    else its head (the first label and its dot: what tells the project's hostnames apart, since
    they share the rest) and its tail around a `*`. Only this project's listener holds it, so it
    matches no other of its hostnames."""
    if len(hostname) <= HOST_HEADER_CHARS:
        return hostname
    head = 64  # a DNS label is at most 63 characters, and its dot
    tail = HOST_HEADER_CHARS - head - 1
    return f"{hostname[:head]}*{hostname[-tail:]}"


def _host_condition(hostname: str) -> list[dict[str, Any]]:
    return [{"Field": "host-header", "HostHeaderConfig": {"Values": [host_pattern(hostname)]}}]


def _hosts(rule: dict[str, Any]) -> list[str]:
    for condition in rule.get("Conditions", []):
        if condition.get("Field") == "host-header":
            values = condition.get("HostHeaderConfig", {}).get("Values") or condition.get(
                "Values", []
            )
            return [str(value) for value in values]
    return []


def ensure_host_rule(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    listener_arn: str,
    target_group_arn: str,
    hostname: str,
    *,
    first: bool = False,
) -> str:
    """The listener rule forwarding `hostname` to the target group (host moved if it differs).

    Priorities are unique per listener: start from a hash of the resource id (so concurrent
    deploys of one project rarely collide) and probe on `PriorityInUse`.

    `first`: the target's host rule was never recorded as made (its first roll-out): the rule is
    made at once at its own priority, without reading the listener's rules, which cost in
    proportion to the project's web servers. `PriorityInUse` there — a retried first roll-out's
    own rule, or another target's whose hash met this one's — falls back to reading them. (Only
    when a retried roll-out had probed past a collision and the colliding rule was deleted since
    can a second rule be made; it forwards the same host to the same group, and
    `delete_host_rule` removes both.)
    """
    elbv2 = _client(session)
    start = int(hashlib.sha256(resource_id.encode()).hexdigest(), 16) % _MAX_PRIORITY
    request = {
        "ListenerArn": listener_arn,
        "Conditions": _host_condition(hostname),
        "Actions": [{"Type": "forward", "TargetGroupArn": target_group_arn}],
        "Tags": names.tag_list(project_id, resource_id),
    }
    with aws_errors():
        if first and (made := _create_rule(elbv2, request, start + 1)) is not None:
            return made
        rule = _rule_for(elbv2, listener_arn, target_group_arn, own=hostname)
        if rule is not None:
            if _hosts(rule) != [host_pattern(hostname)]:
                elbv2.modify_rule(RuleArn=rule["RuleArn"], Conditions=_host_condition(hostname))
            return str(rule["RuleArn"])
        for attempt in range(1 if first else 0, 50):  # `first` tried the first priority
            priority = (start + attempt) % _MAX_PRIORITY + 1
            if (made := _create_rule(elbv2, request, priority)) is not None:
                return made
        created = elbv2.create_rule(Priority=start + 1, **request)  # the last word is AWS's error
        return str(created["Rules"][0]["RuleArn"])


def _create_rule(elbv2: Any, request: dict[str, Any], priority: int) -> str | None:
    """The new rule's ARN; None when the priority is taken (`PriorityInUse`)."""
    try:
        created = elbv2.create_rule(Priority=priority, **request)
    except ClientError as error:
        if error_code(error) != "PriorityInUse":
            raise
        return None
    return str(created["Rules"][0]["RuleArn"])


def delete_host_rule(session: AwsSession, listener_arn: str, target_group_arn: str) -> None:
    """Remove every rule forwarding to the target group (it is going: a custom domain's rule to
    it too, which the load balancer would otherwise keep it in use by)."""
    elbv2 = _client(session)
    with aws_errors():
        for rule in _every_rule_to(elbv2, listener_arn, target_group_arn):
            with ignoring("RuleNotFound"):
                elbv2.delete_rule(RuleArn=rule["RuleArn"])


def host_of(session: AwsSession, listener_arn: str, target_group_arn: str) -> str | None:
    """The host-header value of the listener's rule forwarding to the target group, if any."""
    with aws_errors():
        rule = _rule_for(_client(session), listener_arn, target_group_arn)
    hosts = _hosts(rule) if rule is not None else []
    return hosts[0] if hosts else None


def move_host_rules(
    session: AwsSession, project_id: str, source_listener_arn: str, target_listener_arn: str
) -> None:
    """Move every host-header rule of the source listener to the target listener, one web
    server at a time: its rule is made on the target (the source's hostname and tags) unless the
    target has one for its target group already (a roll-out put it there since: the newer), then
    removed from the source. So a web server has one rule, or for a moment two, never none. The
    source is read again after a round, for a rule a roll-out put there meanwhile. Nothing
    happens once either listener is gone (another pass moved them first)."""
    elbv2 = _client(session)
    for _round in range(3):
        try:
            with aws_errors():
                source = _host_rules(elbv2, source_listener_arn)
                if not source:
                    return
                present = {
                    _forwarded_group(rule) for rule in listener_rules(elbv2, target_listener_arn)
                }
        except TerminalCloudError as error:
            if error.code == "listener_not_found":
                return
            raise
        for group, (hostname, tags, rule_arn) in source.items():
            if group not in present:
                moved = (tags.get(names.PROJECT_TAG, project_id), tags.get(names.RESOURCE_TAG))
                try:
                    _put(session, moved, target_listener_arn, group, hostname)
                except QuotaExceededError:
                    # No room on the load balancer for both of this web server's rules: its old
                    # one goes first (a moment without a rule for it, rather than no move).
                    _delete_rule(elbv2, rule_arn)
                    _put(session, moved, target_listener_arn, group, hostname)
            _delete_rule(elbv2, rule_arn)


def _put(
    session: AwsSession,
    owner: tuple[str, str | None],
    listener_arn: str,
    group: str,
    hostname: str,
) -> None:
    project_id, resource_id = owner
    ensure_host_rule(session, project_id, resource_id or project_id, listener_arn, group, hostname)


def _delete_rule(elbv2: Any, rule_arn: str) -> None:
    with aws_errors(), ignoring("RuleNotFound"):
        elbv2.delete_rule(RuleArn=rule_arn)


def _host_rules(elbv2: Any, listener_arn: str) -> dict[str, tuple[str, dict[str, str], str]]:
    """target group -> (hostname, tags, rule ARN) of the listener's host-header rules."""
    rules = [rule for rule in listener_rules(elbv2, listener_arn) if not rule.get("IsDefault")]
    tags = _tags(elbv2, [str(rule["RuleArn"]) for rule in rules])
    found: dict[str, tuple[str, dict[str, str], str]] = {}
    for rule in rules:
        group, hosts = _forwarded_group(rule), _hosts(rule)
        # A custom domain's rule stays with its listener: it goes where the domain's
        # certificate is served, which its own reconciler decides.
        if DOMAIN_TAG in tags.get(str(rule["RuleArn"]), {}):
            continue
        if group is not None and hosts:
            arn = str(rule["RuleArn"])
            found[group] = (hosts[0], tags.get(arn, {}), arn)
    return found


def _forwarded_group(rule: dict[str, Any]) -> str | None:
    for action in rule.get("Actions", []):
        if action.get("TargetGroupArn"):
            return str(action["TargetGroupArn"])
        for group in action.get("ForwardConfig", {}).get("TargetGroups", []):
            if group.get("TargetGroupArn"):
                return str(group["TargetGroupArn"])
    return None


def ensure_domain_rule(
    session: AwsSession,
    project_id: str,
    domain_id: str,
    listener_arn: str,
    target_group_arn: str,
    hostname: str,
) -> str:
    """The listener rule forwarding a custom domain's `hostname` to its service's target group,
    tagged with the domain (`DOMAIN_TAG`), so that the service's own rule is never taken for
    it; its ARN. Priorities probe from a hash of the domain's id, as `ensure_host_rule`'s."""
    elbv2 = _client(session)
    with aws_errors():
        for rule in _domain_rules(elbv2, listener_arn, domain_id):
            if _forwarded_group(rule) == target_group_arn and _hosts(rule) == [
                host_pattern(hostname)
            ]:
                return str(rule["RuleArn"])
            _delete_rule(elbv2, str(rule["RuleArn"]))  # made for an older target group
        start = int(hashlib.sha256(domain_id.encode()).hexdigest(), 16) % _MAX_PRIORITY
        request = {
            "ListenerArn": listener_arn,
            "Conditions": _host_condition(hostname),
            "Actions": [{"Type": "forward", "TargetGroupArn": target_group_arn}],
            "Tags": names.tag_list(project_id, domain_id, **{DOMAIN_TAG: domain_id}),
        }
        for attempt in range(50):
            priority = (start + attempt) % _MAX_PRIORITY + 1
            if (made := _create_rule(elbv2, request, priority)) is not None:
                return made
        created = elbv2.create_rule(Priority=start + 1, **request)  # the last word is AWS's error
        return str(created["Rules"][0]["RuleArn"])


def delete_domain_rules(session: AwsSession, listener_arn: str, domain_id: str) -> None:
    """Remove the custom domain's rules from the listener (only those its tag names: a
    hostname let go may already be another domain's)."""
    elbv2 = _client(session)
    try:
        with aws_errors():
            for rule in _domain_rules(elbv2, listener_arn, domain_id):
                _delete_rule(elbv2, str(rule["RuleArn"]))
    except TerminalCloudError as error:
        if error.code != "listener_not_found":
            raise


def _domain_rules(elbv2: Any, listener_arn: str, domain_id: str) -> list[dict[str, Any]]:
    rules = [rule for rule in listener_rules(elbv2, listener_arn) if not rule.get("IsDefault")]
    tags = _tags(elbv2, [str(rule["RuleArn"]) for rule in rules])
    return [
        rule for rule in rules if tags.get(str(rule["RuleArn"]), {}).get(DOMAIN_TAG) == domain_id
    ]
