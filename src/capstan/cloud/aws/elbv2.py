"""Elastic Load Balancing v2: the project's Application Load Balancer and HTTP listener (default:
a fixed 404), and per web server a target group (IP targets on the container port, health check
on the server's health path) and a host-header rule forwarding the server's hostname to it."""

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

_MAX_PRIORITY = 50_000


@dataclass(frozen=True)
class LoadBalancer:
    arn: str
    dns_name: str
    hosted_zone_id: str
    listener_arn: str


@dataclass(frozen=True)
class TargetHealth:
    target_id: str
    state: str
    description: str | None


def _client(session: AwsSession) -> Any:
    return session.client("elbv2")


def find_load_balancer(session: AwsSession, project_id: str) -> LoadBalancer | None:
    elbv2 = _client(session)
    with aws_errors():
        try:
            found = elbv2.describe_load_balancers(Names=[names.load_balancer_name(project_id)])
        except ClientError as error:
            if error_code(error) == "LoadBalancerNotFound":
                return None
            raise
        balancer = found["LoadBalancers"][0]
        listeners = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])
    http = [item for item in listeners["Listeners"] if item.get("Port") == 80]
    if not http:
        return None
    return LoadBalancer(
        arn=balancer["LoadBalancerArn"],
        dns_name=balancer["DNSName"],
        hosted_zone_id=balancer["CanonicalHostedZoneId"],
        listener_arn=http[0]["ListenerArn"],
    )


def ensure_load_balancer(
    session: AwsSession, project_id: str, network: ProjectNetwork
) -> LoadBalancer:
    elbv2 = _client(session)
    tags = names.tag_list(project_id, project_id)
    with aws_errors():
        name = names.load_balancer_name(project_id)
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
        http = [item for item in listeners["Listeners"] if item.get("Port") == 80]
        if http:
            listener_arn = http[0]["ListenerArn"]
        else:
            listener_arn = elbv2.create_listener(
                LoadBalancerArn=balancer["LoadBalancerArn"],
                Protocol="HTTP",
                Port=80,
                DefaultActions=[
                    {
                        "Type": "fixed-response",
                        "FixedResponseConfig": {
                            "StatusCode": "404",
                            "ContentType": "text/plain",
                            "MessageBody": "No service here.",
                        },
                    }
                ],
                Tags=tags,
            )["Listeners"][0]["ListenerArn"]
    return LoadBalancer(
        arn=balancer["LoadBalancerArn"],
        dns_name=balancer["DNSName"],
        hosted_zone_id=balancer["CanonicalHostedZoneId"],
        listener_arn=listener_arn,
    )


def delete_load_balancer(session: AwsSession, project_id: str) -> None:
    elbv2 = _client(session)
    balancer = find_load_balancer(session, project_id)
    with aws_errors():
        if balancer is None:
            try:
                found = elbv2.describe_load_balancers(Names=[names.load_balancer_name(project_id)])[
                    "LoadBalancers"
                ]
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


def find_target_group(session: AwsSession, resource_id: str) -> str | None:
    with aws_errors():
        try:
            groups = _client(session).describe_target_groups(
                Names=[names.target_group_name(resource_id)]
            )["TargetGroups"]
        except ClientError as error:
            if error_code(error) == "TargetGroupNotFound":
                return None
            raise
    return str(groups[0]["TargetGroupArn"]) if groups else None


def ensure_target_group(
    session: AwsSession, project_id: str, resource_id: str, vpc_id: str, health_path: str
) -> str:
    elbv2 = _client(session)
    settings: dict[str, Any] = {
        "HealthCheckProtocol": "HTTP",
        "HealthCheckPath": health_path,
        "HealthCheckIntervalSeconds": 15,
        "HealthCheckTimeoutSeconds": 5,
        "HealthyThresholdCount": 2,
        "UnhealthyThresholdCount": 3,
        "Matcher": {"HttpCode": "200"},
    }
    existing = find_target_group(session, resource_id)
    with aws_errors():
        if existing is not None:
            current = elbv2.describe_target_groups(TargetGroupArns=[existing])["TargetGroups"][0]
            if current.get("HealthCheckPath") != health_path:
                elbv2.modify_target_group(TargetGroupArn=existing, **settings)
            return existing
        # CreateTargetGroup is idempotent by name with the same settings.
        created = elbv2.create_target_group(
            Name=names.target_group_name(resource_id),
            Protocol="HTTP",
            Port=names.CONTAINER_PORT,
            VpcId=vpc_id,
            TargetType="ip",
            Tags=names.tag_list(project_id, resource_id),
            **settings,
        )
    return str(created["TargetGroups"][0]["TargetGroupArn"])


def delete_target_group(session: AwsSession, resource_id: str) -> None:
    arn = find_target_group(session, resource_id)
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


def _host_condition(hostname: str) -> list[dict[str, Any]]:
    return [{"Field": "host-header", "HostHeaderConfig": {"Values": [hostname]}}]


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
            if _hosts(rule) != [hostname]:
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


def metric_dimension(arn: str) -> str:
    """CloudWatch's dimension value of a load balancer or target group ARN."""
    resource = arn.split(":", 5)[5]
    return resource.removeprefix("loadbalancer/")
