"""The sandbox front's Application Load Balancer: which listener rule a request's host and port
meet (`behind_load_balancer`), as ELB evaluates them, its redirect or fixed answer, and the ECS
deployment its target group's tasks run. `front` serves what this finds."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from capstan.cloud.aws import host_rules
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.names import CONTAINER_NAME, DEPLOYMENT_TAG
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import CloudError


@dataclass(frozen=True)
class NoAnswer:
    status_code: int
    reason: str


@dataclass(frozen=True)
class Redirect:
    """A load balancer's redirect action: its status and where it sends the request."""

    status_code: int
    location: str


@dataclass(frozen=True)
class ViewerRequest:
    scheme: str
    hostname: str
    path: str
    query: str

    @property
    def port(self) -> int:
        return 443 if self.scheme == "https" else 80


def behind_load_balancer(
    session: AwsSession,
    region: str,
    dns_name: str,
    request: ViewerRequest,
    *,
    certificate_needed: bool = False,
) -> dict[str, Any] | NoAnswer | Redirect | None:
    elbv2 = session.client("elbv2", region=region)
    balancers = [
        balancer
        for page in elbv2.get_paginator("describe_load_balancers").paginate()
        for balancer in page["LoadBalancers"]
        if str(balancer["DNSName"]).rstrip(".").lower() == dns_name
    ]
    if not balancers:
        return None
    hostname = request.hostname
    listener = next(
        (
            item
            for item in elbv2.describe_listeners(LoadBalancerArn=balancers[0]["LoadBalancerArn"])[
                "Listeners"
            ]
            if item.get("Port") == request.port
        ),
        None,
    )
    if listener is None:
        return NoAnswer(502, f"The load balancer has no listener on port {request.port}.")
    if (
        certificate_needed
        and request.port == 443
        and not _certificate_covers(session, region, str(listener["ListenerArn"]), hostname)
    ):
        return NoAnswer(
            502,
            f"No certificate of the load balancer's HTTPS listener covers {hostname}: a browser "
            "would refuse the connection (the listener offers its default certificate).",
        )
    action = _action_for(elbv2, listener, hostname)
    if action.get("Type") == "redirect":
        config = action.get("RedirectConfig") or {}
        status = 302 if config.get("StatusCode") == "HTTP_302" else 301
        return Redirect(status, _location(config, request))
    if action.get("Type") == "fixed-response":
        config = action.get("FixedResponseConfig") or {}
        said = config.get("MessageBody") or f"The load balancer has no rule for {hostname}."
        return NoAnswer(int(config.get("StatusCode") or 503), str(said))
    group_arn = _forwarded_group({"Actions": [action]})
    if group_arn is None:
        return NoAnswer(404, f"The load balancer has no rule for {hostname}.")
    health = elbv2.describe_target_health(TargetGroupArn=group_arn)["TargetHealthDescriptions"]
    if not any(t["TargetHealth"]["State"] == "healthy" for t in health):
        return NoAnswer(503, f"No healthy target answers for {hostname} yet.")
    return _running(session, region, group_arn) or NoAnswer(
        503, f"No ECS service runs behind {hostname}'s target group."
    )


def _certificate_covers(session: AwsSession, region: str, listener_arn: str, hostname: str) -> bool:
    """Whether one of the listener's certificates (its default and SNI ones) names `hostname`,
    as ALB picks a certificate by the client's SNI."""
    elbv2, acm = session.client("elbv2", region=region), session.client("acm", region=region)
    served = elbv2.describe_listener_certificates(ListenerArn=listener_arn)["Certificates"]
    for item in served:
        try:
            with aws_errors():
                described = acm.describe_certificate(CertificateArn=item["CertificateArn"])
        except CloudError:
            continue
        certificate = described["Certificate"]
        names = [certificate.get("DomainName"), *certificate.get("SubjectAlternativeNames", [])]
        if certificate.get("Status") == "ISSUED" and any(
            _names(str(name), hostname) for name in names if name
        ):
            return True
    return False


def _names(certificate_name: str, hostname: str) -> bool:
    """A certificate's name covers `hostname`: the same name, or `*.` over one label."""
    name, hostname = certificate_name.lower().rstrip("."), hostname.lower().rstrip(".")
    if name.startswith("*."):
        head, _, rest = hostname.partition(".")
        return bool(head) and rest == name[2:]
    return name == hostname


def _action_for(elbv2: Any, listener: dict[str, Any], hostname: str) -> dict[str, Any]:
    """The action the listener takes for `hostname`: its first rule by priority whose
    host-header matches (the only condition Capstan writes), else its default action; of a
    rule's actions the last, the one that answers."""
    rules = [
        rule
        for rule in host_rules.listener_rules(elbv2, listener["ListenerArn"])
        if not rule.get("IsDefault")
    ]
    for rule in sorted(rules, key=lambda rule: int(rule["Priority"])):
        if any(_host_matches(hostname, pattern) for pattern in _hosts(rule)):
            return _last(rule.get("Actions") or [])
    return _last(listener.get("DefaultActions") or [])


def _last(actions: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(actions, key=lambda action: int(action.get("Order") or 0))
    return ordered[-1] if ordered else {}


def _location(config: dict[str, Any], request: ViewerRequest) -> str:
    """The `Location` of a redirect: each URI component the action's, its `#{…}` keywords
    filled from the request (`#{path}` without its leading "/"); a component not set keeps the
    request's; a protocol's default port is not written."""
    port = str(request.port)
    words = {
        "#{protocol}": request.scheme.upper(),
        "#{host}": request.hostname,
        "#{port}": port,
        "#{path}": request.path.lstrip("/"),
        "#{query}": request.query,
    }

    def filled(key: str, default: str) -> str:
        value = str(config.get(key) or default)
        for word, replacement in words.items():
            value = value.replace(word, replacement)
        return value

    protocol = filled("Protocol", "#{protocol}").lower()
    port = filled("Port", "#{port}")
    shown = "" if (protocol, port) in (("http", "80"), ("https", "443")) else f":{port}"
    query = filled("Query", "#{query}")
    path = filled("Path", "/#{path}")
    return f"{protocol}://{filled('Host', '#{host}')}{shown}{path}" + (f"?{query}" if query else "")


def _host_matches(hostname: str, pattern: str) -> bool:
    """A host-header value matches as ALB's does: case-insensitive, `*` any run, `?` one
    character (the driver writes a pattern for a hostname over 128 characters)."""
    return fnmatch.fnmatchcase(hostname.lower(), pattern.lower())


def _hosts(rule: dict[str, Any]) -> list[str]:
    hosts: list[str] = []
    for condition in rule.get("Conditions", []):
        if condition.get("Field") == "host-header":
            hosts += condition.get("HostHeaderConfig", {}).get("Values") or condition.get(
                "Values", []
            )
    return hosts


def _forwarded_group(rule: dict[str, Any]) -> str | None:
    for action in rule.get("Actions", []):
        if action.get("Type") == "forward" and action.get("TargetGroupArn"):
            return str(action["TargetGroupArn"])
    return None


def _running(session: AwsSession, region: str, group_arn: str) -> dict[str, Any] | None:
    ecs = session.client("ecs", region=region)
    for cluster in ecs.list_clusters()["clusterArns"]:
        arns = ecs.list_services(cluster=cluster)["serviceArns"]
        for start in range(0, len(arns), 10):
            described = ecs.describe_services(cluster=cluster, services=arns[start : start + 10])
            for service in described["services"]:
                groups = {lb.get("targetGroupArn") for lb in service.get("loadBalancers", [])}
                if group_arn in groups and service.get("status") == "ACTIVE":
                    found = _deployment_of(ecs, service)
                    found["commit_sha"] = _commit_of(session, region, found.pop("image"))
                    found["service_arn"] = str(service["serviceArn"])
                    return found
    return None


def _commit_of(session: AwsSession, region: str, image: str) -> str | None:
    """The commit an image was built from: its tag (`<repo>:<commit>`), or for an image pinned
    by digest (`<repo>@sha256:…`) the commit tag ECR keeps on that digest."""
    location, at, digest = image.partition("@")
    if not at:
        name = image.rsplit("/", 1)[-1]
        return name.rsplit(":", 1)[-1] if ":" in name else None
    repository = location.split("/", 1)[-1]
    try:
        with aws_errors():
            described = session.client("ecr", region=region).describe_images(
                repositoryName=repository, imageIds=[{"imageDigest": digest}]
            )
    except CloudError:
        return None
    tags = [tag for image in described["imageDetails"] for tag in image.get("imageTags", [])]
    return next((tag for tag in tags if len(tag) == 40), tags[0] if tags else None)


def _deployment_of(ecs: Any, service: dict[str, Any]) -> dict[str, Any]:
    primary = next(
        (d for d in service.get("deployments", []) if d.get("status") == "PRIMARY"), None
    )
    arn = (primary or {}).get("taskDefinition") or service["taskDefinition"]
    described = ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
    definition = described["taskDefinition"]
    tags = {tag["key"]: tag["value"] for tag in described.get("tags", [])}
    container = next(
        (c for c in definition["containerDefinitions"] if c["name"] == CONTAINER_NAME),
        definition["containerDefinitions"][0],
    )
    names = {v["name"] for v in container.get("environment", [])}
    names |= {s["name"] for s in container.get("secrets", [])}
    registered = definition.get("registeredAt")
    return {
        "service_name": str(service["serviceName"]),
        "deployment_id": tags.get(DEPLOYMENT_TAG),
        "image": str(container.get("image", "")),
        "registered_at": registered.isoformat() if hasattr(registered, "isoformat") else None,
        "variable_names": tuple(sorted(names)),
    }
