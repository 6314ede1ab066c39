"""Elastic Load Balancing v2: the project's Application Load Balancer (made only while the project
has a web server) and HTTP listener (default: a fixed 404), and per web server a target group
(IP targets on the container port, health check on the server's health path).

Once the project's certificate is issued, an HTTPS listener on 443 serves it (TLS 1.2 and 1.3),
the HTTP listener's default action redirects every request to it (301, host, path and query
kept), and each web server's host-header rule is on the HTTPS listener alone (`serve_https`);
before, or after the certificate is gone, the rule is on the HTTP listener (`serve_http`). The
rules themselves are `host_rules`; `Listeners.serving` says which listener a web server's rule
belongs on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import host_rules, names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.network import ProjectNetwork
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import TerminalCloudError

# How long a target that is leaving keeps its in-flight requests: long enough for a web request,
# short enough that a rollout does not hold every old task for AWS's default of 300 s (see
# docs/decisions/0074).
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

# The HTTP listener's default action once HTTPS serves: ALB's redirect, keeping host, path and
# query (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-action-types.html
# "Redirect actions"; a listener rule's actions are evaluated before its default action, so a
# host rule still on HTTP keeps forwarding there).
_TO_HTTPS: list[dict[str, Any]] = [
    {
        "Type": "redirect",
        "RedirectConfig": {
            "Protocol": "HTTPS",
            "Port": str(HTTPS_PORT),
            "Host": "#{host}",
            "Path": "/#{path}",
            "Query": "#{query}",
            "StatusCode": "HTTP_301",
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
class Listeners:
    """A load balancer's HTTP and HTTPS listeners as they stand: whether the HTTP one redirects
    to HTTPS, and the HTTPS one if it has one."""

    http: str | None
    redirects: bool
    https: HttpsListener | None

    @property
    def serving(self) -> str | None:
        """The listener a web server's host rule belongs on: HTTPS once HTTP redirects to it."""
        if self.https is not None and self.redirects:
            return self.https.arn
        return self.http


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
        rules = host_rules.listener_rules(_client(session), listener_arn)
    return any(not rule.get("IsDefault") for rule in rules)


def balancer_has_rules(session: AwsSession, load_balancer_arn: str) -> bool:
    """Whether any listener of the load balancer routes anything besides its default action."""
    elbv2 = _client(session)
    with aws_errors():
        try:
            found = elbv2.describe_listeners(LoadBalancerArn=load_balancer_arn)["Listeners"]
        except ClientError as error:
            if error_code(error) == "LoadBalancerNotFound":
                return False
            raise
        for listener in found:
            try:
                rules = host_rules.listener_rules(elbv2, listener["ListenerArn"])
            except ClientError as error:
                if error_code(error) == "ListenerNotFound":
                    continue
                raise
            if any(not rule.get("IsDefault") for rule in rules):
                return True
    return False


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


def listeners(session: AwsSession, load_balancer_arn: str) -> Listeners:
    """The load balancer's listeners as they stand (none when it is gone)."""
    with aws_errors():
        try:
            found = _client(session).describe_listeners(LoadBalancerArn=load_balancer_arn)
        except ClientError as error:
            if error_code(error) == "LoadBalancerNotFound":
                return Listeners(http=None, redirects=False, https=None)
            raise
    http: str | None = None
    redirects = False
    https: HttpsListener | None = None
    for listener in found["Listeners"]:
        if listener.get("Port") == HTTP_PORT:
            http = str(listener["ListenerArn"])
            redirects = any(
                action.get("Type") == "redirect" for action in listener.get("DefaultActions", [])
            )
        elif listener.get("Port") == HTTPS_PORT:
            certificates = listener.get("Certificates") or [{}]
            https = HttpsListener(
                arn=str(listener["ListenerArn"]),
                certificate_arn=certificates[0].get("CertificateArn"),
            )
    return Listeners(http=http, redirects=redirects, https=https)


def find_https_listener(session: AwsSession, load_balancer_arn: str) -> HttpsListener | None:
    """The load balancer's HTTPS listener (port 443), if it has one."""
    return listeners(session, load_balancer_arn).https


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


def _default_actions(session: AwsSession, listener_arn: str, actions: list[dict[str, Any]]) -> None:
    with aws_errors():
        _client(session).modify_listener(ListenerArn=listener_arn, DefaultActions=actions)


def serve_https(
    session: AwsSession, project_id: str, balancer: LoadBalancer, certificate_arn: str
) -> str:
    """Serve the project's web servers over HTTPS with `certificate_arn`: the HTTPS listener
    (made, or swapped to the certificate), the HTTP listener's default action a redirect to it,
    then each host rule moved from HTTP to HTTPS. Each host keeps a rule on the listener that
    serves it throughout (a rule still on HTTP forwards before the redirect applies), and the
    rules are moved one by one, so the load balancer never holds two of a web server's
    rules against its rules quota. Idempotent; the HTTPS listener's ARN."""
    https = ensure_https_listener(session, project_id, balancer.arn, certificate_arn)
    if not listeners(session, balancer.arn).redirects:
        _default_actions(session, balancer.listener_arn, _TO_HTTPS)
    host_rules.move_host_rules(session, project_id, balancer.listener_arn, https)
    return https


def serve_http(session: AwsSession, project_id: str, balancer: LoadBalancer) -> None:
    """Serve the project's web servers over HTTP alone (the certificate is gone): each host rule
    moved from HTTPS to HTTP, the redirect ended, then the HTTPS listener removed (with any rule
    a roll-out put there meanwhile moved first). Idempotent."""
    state = listeners(session, balancer.arn)
    if state.https is not None:
        host_rules.move_host_rules(session, project_id, state.https.arn, balancer.listener_arn)
    if state.redirects:
        _default_actions(session, balancer.listener_arn, _NOTHING_HERE)
    if state.https is not None:
        host_rules.move_host_rules(session, project_id, state.https.arn, balancer.listener_arn)
        delete_https_listener(session, balancer.arn)


def metric_dimension(arn: str) -> str:
    """CloudWatch's dimension value of a load balancer or target group ARN."""
    resource = arn.split(":", 5)[5]
    return resource.removeprefix("loadbalancer/")
