"""Elastic Load Balancing v2: the project's Application Load Balancer and HTTP listener (default:
a fixed 404), and per web server a target group (IP targets on the container port, health check
on the server's health path) and a host-header rule forwarding the server's hostname to it.

Once the project has a certificate, an HTTPS listener on 443 serves it (TLS 1.2 and 1.3) with the
same host-header rules as the HTTP listener: `mirror_host_rules` copies them over, and the web
server paths write and remove each rule on both listeners."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.network import ProjectNetwork
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import TerminalCloudError

_MAX_PRIORITY = 50_000
# A host-header condition value holds at most 128 characters (a DNS name up to 253).
HOST_HEADER_CHARS = 128
# How long a target that is leaving keeps its in-flight requests: long enough for a web request,
# short enough that a rollout does not hold every old task for AWS's default of 300 s (see
# docs/decisions.md, "Deregistration delay").
DEREGISTRATION_DELAY_SECONDS = 30
HTTP_PORT = 80
HTTPS_PORT = 443
# TLS 1.3 and 1.2 with forward-secret ciphers only: AWS's recommended policy for ALBs.
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
_NOTHING_HERE: list[dict[str, Any]] = [
    {
        "Type": "fixed-response",
        "FixedResponseConfig": {
            "StatusCode": "404",
            "ContentType": "text/plain",
            "MessageBody": "No service here.",
        },
    }
]


@dataclass(frozen=True)
class LoadBalancer:
    arn: str
    dns_name: str
    hosted_zone_id: str
    listener_arn: str


@dataclass(frozen=True)
class HttpsListener:
    arn: str
    certificate_arn: str | None


@dataclass(frozen=True)
class TargetHealth:
    target_id: str
    state: str
    description: str | None


def _client(session: AwsSession) -> Any:
    return session.client("elbv2")


def find_load_balancer(
    session: AwsSession, project_id: str, generation: int = 0
) -> LoadBalancer | None:
    elbv2 = _client(session)
    with aws_errors():
        try:
            found = elbv2.describe_load_balancers(
                Names=[names.load_balancer_name(project_id, generation)]
            )
        except ClientError as error:
            if error_code(error) == "LoadBalancerNotFound":
                return None
            raise
        balancer = found["LoadBalancers"][0]
        listeners = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])
    http = [item for item in listeners["Listeners"] if item.get("Port") == HTTP_PORT]
    if not http:
        return None
    return LoadBalancer(
        arn=balancer["LoadBalancerArn"],
        dns_name=balancer["DNSName"],
        hosted_zone_id=balancer["CanonicalHostedZoneId"],
        listener_arn=http[0]["ListenerArn"],
    )


def ensure_load_balancer(
    session: AwsSession, project_id: str, network: ProjectNetwork, generation: int = 0
) -> LoadBalancer:
    elbv2 = _client(session)
    tags = names.tag_list(project_id, project_id)
    with aws_errors():
        name = names.load_balancer_name(project_id, generation)
        try:
            balancer = elbv2.describe_load_balancers(Names=[name])["LoadBalancers"][0]
        except ClientError as error:
            if error_code(error) != "LoadBalancerNotFound":
                raise
            balancer = elbv2.create_load_balancer(
                Name=name,
                Subnets=list(network.subnet_ids),
                SecurityGroups=[network.load_balancer_group_id],
                Scheme="internet-facing",
                Type="application",
                IpAddressType="ipv4",
                Tags=tags,
            )["LoadBalancers"][0]
        listeners = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])
        http = [item for item in listeners["Listeners"] if item.get("Port") == HTTP_PORT]
        if http:
            listener_arn = http[0]["ListenerArn"]
        else:
            listener_arn = elbv2.create_listener(
                LoadBalancerArn=balancer["LoadBalancerArn"],
                Protocol="HTTP",
                Port=HTTP_PORT,
                DefaultActions=_NOTHING_HERE,
                Tags=tags,
            )["Listeners"][0]["ListenerArn"]
    return LoadBalancer(
        arn=balancer["LoadBalancerArn"],
        dns_name=balancer["DNSName"],
        hosted_zone_id=balancer["CanonicalHostedZoneId"],
        listener_arn=listener_arn,
    )


def delete_load_balancer(session: AwsSession, project_id: str, generation: int = 0) -> None:
    elbv2 = _client(session)
    balancer = find_load_balancer(session, project_id, generation)
    with aws_errors():
        if balancer is None:
            try:
                found = elbv2.describe_load_balancers(
                    Names=[names.load_balancer_name(project_id, generation)]
                )["LoadBalancers"]
            except ClientError as error:
                if error_code(error) != "LoadBalancerNotFound":
                    raise
                return
            arn = found[0]["LoadBalancerArn"]
        else:
            with ignoring("ListenerNotFound"):
                elbv2.delete_listener(ListenerArn=balancer.listener_arn)
            arn = balancer.arn
        with ignoring("LoadBalancerNotFound"):
            elbv2.delete_load_balancer(LoadBalancerArn=arn)


def has_rules(session: AwsSession, listener_arn: str) -> bool:
    """Whether the listener routes anything besides its default action."""
    with aws_errors():
        rules = _client(session).describe_rules(ListenerArn=listener_arn)["Rules"]
    return any(not rule.get("IsDefault") for rule in rules)


def find_target_group(session: AwsSession, resource_id: str, generation: int = 0) -> str | None:
    with aws_errors():
        try:
            groups = _client(session).describe_target_groups(
                Names=[names.target_group_name(resource_id, generation)]
            )["TargetGroups"]
        except ClientError as error:
            if error_code(error) == "TargetGroupNotFound":
                return None
            raise
    return str(groups[0]["TargetGroupArn"]) if groups else None


def ensure_target_group(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    vpc_id: str,
    health_path: str,
    generation: int = 0,
) -> str:
    elbv2 = _client(session)
    settings: dict[str, Any] = {
        "HealthCheckProtocol": "HTTP",
        "HealthCheckPath": health_path,
        "HealthCheckIntervalSeconds": 15,
        "HealthCheckTimeoutSeconds": 5,
        "HealthyThresholdCount": 2,
        "UnhealthyThresholdCount": 3,
        # Healthy is a 2xx or a 3xx (an app whose / redirects to its sign-in page is up). This
        # check alone decides a web server's health: the container has none, since no tool
        # inside the image (curl, a shell) can be assumed.
        "Matcher": {"HttpCode": "200-399"},
    }
    name = names.target_group_name(resource_id, generation)
    with aws_errors():
        try:
            # CreateTargetGroup is the look: AWS answers the existing group for the same name
            # and settings, and `DuplicateTargetGroupName` when its settings differ.
            created = elbv2.create_target_group(
                Name=name,
                Protocol="HTTP",
                Port=names.CONTAINER_PORT,
                VpcId=vpc_id,
                TargetType="ip",
                Tags=names.tag_list(project_id, resource_id),
                **settings,
            )
            arn = str(created["TargetGroups"][0]["TargetGroupArn"])
        except ClientError as error:
            if error_code(error) != "DuplicateTargetGroupName":
                raise
            current = elbv2.describe_target_groups(Names=[name])["TargetGroups"][0]
            arn = str(current["TargetGroupArn"])
            if any(current.get(key) != settings[key] for key in ("HealthCheckPath", "Matcher")):
                elbv2.modify_target_group(TargetGroupArn=arn, **settings)
        # Every time (it is idempotent): a group made before the delay was set, or with AWS's
        # default, gets it.
        elbv2.modify_target_group_attributes(
            TargetGroupArn=arn,
            Attributes=[
                {
                    "Key": "deregistration_delay.timeout_seconds",
                    "Value": str(DEREGISTRATION_DELAY_SECONDS),
                }
            ],
        )
    return arn


def health_path(session: AwsSession, target_group_arn: str) -> str:
    """The path a target group's health check asks for."""
    with aws_errors():
        groups = _client(session).describe_target_groups(TargetGroupArns=[target_group_arn])
    return str(groups["TargetGroups"][0].get("HealthCheckPath") or "/")


def groups_in_vpc(session: AwsSession, vpc_id: str) -> list[str]:
    """The ARNs of every target group in `vpc_id`."""
    found: list[str] = []
    with aws_errors():
        for page in _client(session).get_paginator("describe_target_groups").paginate():
            found += [
                str(group["TargetGroupArn"])
                for group in page["TargetGroups"]
                if group.get("VpcId") == vpc_id
            ]
    return found


def host_of(session: AwsSession, listener_arn: str, target_group_arn: str) -> str | None:
    """The host-header value of the listener's rule forwarding to the target group, if any."""
    with aws_errors():
        rule = _rule_for(_client(session), listener_arn, target_group_arn)
    hosts = _hosts(rule) if rule is not None else []
    return hosts[0] if hosts else None


def delete_target_group_arn(session: AwsSession, target_group_arn: str) -> bool:
    """Delete a target group; False while a service's draining targets still hold it."""
    try:
        with aws_errors(), ignoring("TargetGroupNotFound"):
            _client(session).delete_target_group(TargetGroupArn=target_group_arn)
    except TerminalCloudError as error:
        if error.code != "resource_in_use":
            raise
        return False
    return True


def delete_target_group(session: AwsSession, resource_id: str, generation: int = 0) -> None:
    arn = find_target_group(session, resource_id, generation)
    if arn is None:
        return
    with aws_errors(), ignoring("TargetGroupNotFound"):
        _client(session).delete_target_group(TargetGroupArn=arn)


def target_health(session: AwsSession, target_group_arn: str) -> list[TargetHealth]:
    with aws_errors():
        answer = _client(session).describe_target_health(TargetGroupArn=target_group_arn)
    return [
        TargetHealth(
            target_id=item["Target"]["Id"],
            state=item["TargetHealth"]["State"],
            description=item["TargetHealth"].get("Description"),
        )
        for item in answer["TargetHealthDescriptions"]
    ]


def _rule_for(elbv2: Any, listener_arn: str, target_group_arn: str) -> dict[str, Any] | None:
    for rule in elbv2.describe_rules(ListenerArn=listener_arn)["Rules"]:
        for action in rule.get("Actions", []):
            if action.get("TargetGroupArn") == target_group_arn:
                return dict(rule)
            forward = action.get("ForwardConfig", {}).get("TargetGroups", [])
            if any(group.get("TargetGroupArn") == target_group_arn for group in forward):
                return dict(rule)
    return None


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
) -> str:
    """The listener rule forwarding `hostname` to the target group (host moved if it differs).

    Priorities are unique per listener: start from a hash of the resource id (so concurrent
    deploys of one project rarely collide) and probe on `PriorityInUse`.
    """
    elbv2 = _client(session)
    with aws_errors():
        rule = _rule_for(elbv2, listener_arn, target_group_arn)
        if rule is not None:
            if _hosts(rule) != [host_pattern(hostname)]:
                elbv2.modify_rule(RuleArn=rule["RuleArn"], Conditions=_host_condition(hostname))
            return str(rule["RuleArn"])
        start = int(hashlib.sha256(resource_id.encode()).hexdigest(), 16) % _MAX_PRIORITY
        for attempt in range(50):
            priority = (start + attempt) % _MAX_PRIORITY + 1
            try:
                created = elbv2.create_rule(
                    ListenerArn=listener_arn,
                    Priority=priority,
                    Conditions=_host_condition(hostname),
                    Actions=[{"Type": "forward", "TargetGroupArn": target_group_arn}],
                    Tags=names.tag_list(project_id, resource_id),
                )
            except ClientError as error:
                if error_code(error) != "PriorityInUse":
                    raise
                continue
            return str(created["Rules"][0]["RuleArn"])
        created = elbv2.create_rule(  # the last word is AWS's error
            ListenerArn=listener_arn,
            Priority=start + 1,
            Conditions=_host_condition(hostname),
            Actions=[{"Type": "forward", "TargetGroupArn": target_group_arn}],
        )
        return str(created["Rules"][0]["RuleArn"])


def delete_host_rule(session: AwsSession, listener_arn: str, target_group_arn: str) -> None:
    elbv2 = _client(session)
    with aws_errors():
        rule = _rule_for(elbv2, listener_arn, target_group_arn)
        if rule is not None:
            with ignoring("RuleNotFound"):
                elbv2.delete_rule(RuleArn=rule["RuleArn"])


def find_https_listener(session: AwsSession, load_balancer_arn: str) -> HttpsListener | None:
    """The load balancer's HTTPS listener (port 443), if it has one."""
    with aws_errors():
        try:
            listeners = _client(session).describe_listeners(LoadBalancerArn=load_balancer_arn)
        except ClientError as error:
            if error_code(error) == "LoadBalancerNotFound":
                return None
            raise
    for listener in listeners["Listeners"]:
        if listener.get("Port") == HTTPS_PORT:
            certificates = listener.get("Certificates") or [{}]
            return HttpsListener(
                arn=str(listener["ListenerArn"]),
                certificate_arn=certificates[0].get("CertificateArn"),
            )
    return None


def ensure_https_listener(
    session: AwsSession, project_id: str, load_balancer_arn: str, certificate_arn: str
) -> str:
    """An HTTPS listener on 443 serving `certificate_arn` (swapped in if it serves another);
    its ARN. Its default action, like the HTTP listener's, is a fixed 404."""
    elbv2 = _client(session)
    existing = find_https_listener(session, load_balancer_arn)
    with aws_errors():
        if existing is not None:
            if existing.certificate_arn != certificate_arn:
                elbv2.modify_listener(
                    ListenerArn=existing.arn,
                    Protocol="HTTPS",
                    SslPolicy=TLS_POLICY,
                    Certificates=[{"CertificateArn": certificate_arn}],
                )
            return existing.arn
        try:
            created = elbv2.create_listener(
                LoadBalancerArn=load_balancer_arn,
                Protocol="HTTPS",
                Port=HTTPS_PORT,
                SslPolicy=TLS_POLICY,
                Certificates=[{"CertificateArn": certificate_arn}],
                DefaultActions=_NOTHING_HERE,
                Tags=names.tag_list(project_id, project_id),
            )
        except ClientError as error:
            if error_code(error) != "DuplicateListener":
                raise
            # Someone made it meanwhile: make sure it serves this certificate.
            return ensure_https_listener(session, project_id, load_balancer_arn, certificate_arn)
    return str(created["Listeners"][0]["ListenerArn"])


def delete_https_listener(session: AwsSession, load_balancer_arn: str) -> None:
    """Remove the HTTPS listener and its rules (nothing happens when there is none)."""
    listener = find_https_listener(session, load_balancer_arn)
    if listener is None:
        return
    with aws_errors(), ignoring("ListenerNotFound"):
        _client(session).delete_listener(ListenerArn=listener.arn)


def mirror_host_rules(
    session: AwsSession, project_id: str, source_listener_arn: str, target_listener_arn: str
) -> None:
    """Make the target listener's host-header rules those of the source listener: the same
    hostnames forwarded to the same target groups, with the same tags; nothing else.

    A rule the web server paths change on both listeners while this runs could be put back to
    what the source said before; the source is read again afterwards, and mirrored again if it
    changed meanwhile."""
    elbv2 = _client(session)
    source = _host_rules(elbv2, source_listener_arn)
    for _attempt in range(3):
        _mirror(session, elbv2, project_id, source, target_listener_arn)
        again = _host_rules(elbv2, source_listener_arn)
        if again == source:
            return
        source = again


def _host_rules(elbv2: Any, listener_arn: str) -> dict[str, tuple[str, dict[str, str]]]:
    """target group -> (hostname, tags) of the listener's host-header rules."""
    with aws_errors():
        rules = [
            rule
            for rule in elbv2.describe_rules(ListenerArn=listener_arn)["Rules"]
            if not rule.get("IsDefault")
        ]
        tags: dict[str, dict[str, str]] = {}
        arns = [str(rule["RuleArn"]) for rule in rules]
        for start in range(0, len(arns), 20):
            for description in elbv2.describe_tags(ResourceArns=arns[start : start + 20])[
                "TagDescriptions"
            ]:
                tags[description["ResourceArn"]] = {
                    tag["Key"]: tag["Value"] for tag in description.get("Tags", [])
                }
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for rule in rules:
        group, hosts = _forwarded_group(rule), _hosts(rule)
        if group is not None and hosts:
            found[group] = (hosts[0], tags.get(str(rule["RuleArn"]), {}))
    return found


def _mirror(
    session: AwsSession,
    elbv2: Any,
    project_id: str,
    source: dict[str, tuple[str, dict[str, str]]],
    target_listener_arn: str,
) -> None:
    for group, (hostname, tags) in source.items():
        ensure_host_rule(
            session,
            tags.get(names.PROJECT_TAG, project_id),
            tags.get(names.RESOURCE_TAG, project_id),
            target_listener_arn,
            group,
            hostname,
        )
    with aws_errors():
        for rule in elbv2.describe_rules(ListenerArn=target_listener_arn)["Rules"]:
            if rule.get("IsDefault") or _forwarded_group(rule) in source:
                continue
            with ignoring("RuleNotFound"):
                elbv2.delete_rule(RuleArn=rule["RuleArn"])


def _forwarded_group(rule: dict[str, Any]) -> str | None:
    for action in rule.get("Actions", []):
        if action.get("TargetGroupArn"):
            return str(action["TargetGroupArn"])
        for group in action.get("ForwardConfig", {}).get("TargetGroups", []):
            if group.get("TargetGroupArn"):
                return str(group["TargetGroupArn"])
    return None


def metric_dimension(arn: str) -> str:
    """CloudWatch's dimension value of a load balancer or target group ARN."""
    resource = arn.split(":", 5)[5]
    return resource.removeprefix("loadbalancer/")
