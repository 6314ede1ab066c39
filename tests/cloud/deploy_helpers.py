"""Helpers for the deploy driver's tests: a customer account, a tiny git host, leftovers by tag."""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from capstan.apps.schemas import START_COMMAND_BYTES
from capstan.cloud.aws import names
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.aws.ssm import StoredEnvironment
from capstan.cloud.builds import RegistryLogin
from capstan.cloud.deploy import BuildSpec, Deployer, Target, TaskSpec
from capstan.cloud.errors import RetryableCloudError
from capstan.cloud.task_definition_size import start_command_bytes
from tests.polling import wait_until

GOOD_TOKEN = "ghs_" + "a" * 36
# Docker Hub, signed in as an operator should configure it (anonymous pulls are limited).
REGISTRY_LOGIN = RegistryLogin("capstan-tests", "dckr_pat_" + "b" * 27)
# The driver tests' service domain, repository and commits (one builds, one fails).
DOMAIN = "apps.sandbox.test"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BROKEN = "fedcba9876543210fedcba9876543210fedcba98"
REPO = "acme/shop"


def new_id(prefix: str) -> str:
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    return f"{prefix}_" + "".join(secrets.choice(alphabet) for _ in range(26))


class GitHost:
    """The contents endpoint of a GitHub-like host on a real socket: `capstan-sandbox.json` of
    `repos[(repo, ref)]`, for requests carrying `token`; requests are recorded."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str | None]] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                host.requests.append((self.path, self.headers.get("Authorization")))
                prefix, _, rest = parts.path.partition("/repos/")
                repo, _, file = rest.partition("/contents/")
                ref = parse_qs(parts.query).get("ref", [""])[0]
                if self.headers.get("Authorization") != f"token {GOOD_TOKEN}":
                    return self._answer(401, {"message": "Bad credentials"})
                content = host.files.get((repo, ref))
                if prefix != "/api" or file != "capstan-sandbox.json" or content is None:
                    return self._answer(404, {"message": "Not Found"})
                encoded = base64.b64encode(json.dumps(content).encode()).decode()
                return self._answer(200, {"encoding": "base64", "content": encoded})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.api_url = f"http://127.0.0.1:{self._server.server_address[1]}/api"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def git_host() -> Iterator[GitHost]:
    host = GitHost()
    try:
        yield host
    finally:
        host.stop()


def leftovers(
    customer: AwsSession, operator: AwsSession, resource_id: str, hostname: str | None
) -> dict[str, list[str]]:
    """Everything of `resource_id` still in the account, listed service by service."""
    found: dict[str, list[str]] = {}
    tag = {names.RESOURCE_TAG: resource_id}

    def tagged(items: list[tuple[str, dict[str, str]]]) -> list[str]:
        return [name for name, tags in items if all(tags.get(k) == v for k, v in tag.items())]

    tagging = customer.client("resourcegroupstaggingapi")
    found["tagging"] = [
        item["ResourceARN"]
        for page in tagging.get_paginator("get_resources").paginate(
            TagFilters=[{"Key": names.RESOURCE_TAG, "Values": [resource_id]}]
        )
        for item in page["ResourceTagMappingList"]
    ]
    ecs = customer.client("ecs")
    services = []
    for cluster in ecs.list_clusters()["clusterArns"]:
        arns = ecs.list_services(cluster=cluster)["serviceArns"]
        for start in range(0, len(arns), 10):
            for service in ecs.describe_services(
                cluster=cluster, services=arns[start : start + 10], include=["TAGS"]
            )["services"]:
                tags = {t["key"]: t["value"] for t in service.get("tags", [])}
                services.append((service["serviceName"], tags))
    found["ecs services"] = tagged(services)
    found["ecs task definitions"] = [
        arn
        for status in ("ACTIVE", "INACTIVE")
        for arn in ecs.list_task_definitions(status=status)["taskDefinitionArns"]
        if resource_id in arn
    ]
    ecr = customer.client("ecr")
    repositories = []
    for repository in ecr.describe_repositories()["repositories"]:
        tags = ecr.list_tags_for_resource(resourceArn=repository["repositoryArn"])["tags"]
        repositories.append((repository["repositoryName"], {t["Key"]: t["Value"] for t in tags}))
    found["ecr"] = tagged(repositories)
    codebuild = customer.client("codebuild")
    projects = codebuild.list_projects()["projects"]
    found["codebuild"] = [
        project["name"]
        for project in (
            codebuild.batch_get_projects(names=projects)["projects"] if projects else []
        )
        if any(
            t["key"] == names.RESOURCE_TAG and t["value"] == resource_id for t in project["tags"]
        )
    ]
    ssm = customer.client("ssm")
    found["ssm"] = [
        parameter["Name"]
        for parameter in ssm.describe_parameters()["Parameters"]
        if resource_id in parameter["Name"]
    ]
    logs = customer.client("logs")
    found["logs"] = [
        group["logGroupName"]
        for group in logs.describe_log_groups()["logGroups"]
        if resource_id in group["logGroupName"]
    ]
    elbv2 = customer.client("elbv2")
    groups = elbv2.describe_target_groups()["TargetGroups"]
    group_tags = []
    if groups:
        for start in range(0, len(groups), 20):
            for description in elbv2.describe_tags(
                ResourceArns=[g["TargetGroupArn"] for g in groups[start : start + 20]]
            )["TagDescriptions"]:
                tags = {t["Key"]: t["Value"] for t in description["Tags"]}
                group_tags.append((description["ResourceArn"], tags))
    found["target groups"] = tagged(group_tags)
    rules = []
    for balancer in elbv2.describe_load_balancers()["LoadBalancers"]:
        for listener in elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])[
            "Listeners"
        ]:
            for rule in elbv2.describe_rules(ListenerArn=listener["ListenerArn"])["Rules"]:
                if not rule["IsDefault"]:
                    rules.append(rule["RuleArn"])
    rule_tags = []
    if rules:
        for description in elbv2.describe_tags(ResourceArns=rules)["TagDescriptions"]:
            rule_tags.append(
                (description["ResourceArn"], {t["Key"]: t["Value"] for t in description["Tags"]})
            )
    found["listener rules"] = tagged(rule_tags)
    scaling = customer.client("application-autoscaling")
    found["autoscaling"] = [
        target["ResourceId"]
        for target in scaling.describe_scalable_targets(ServiceNamespace="ecs")["ScalableTargets"]
        if resource_id in target["ResourceId"]
    ]
    records = []
    if hostname:
        route53 = operator.client("route53")
        for zone in route53.list_hosted_zones()["HostedZones"]:
            for record in route53.list_resource_record_sets(HostedZoneId=zone["Id"])[
                "ResourceRecordSets"
            ]:
                if record["Name"] == hostname + ".":
                    records.append(record["Name"])
    found["route53"] = records
    return {kind: items for kind, items in found.items() if items}


def web_target(project_id: str) -> Target:
    resource_id = new_id("svc")
    return Target(resource_id, project_id, "web_server", f"web-{resource_id[-6:]}.acme.{DOMAIN}")


def worker_target(project_id: str) -> Target:
    return Target(new_id("svc"), project_id, "worker", None)


def start_build(deployer: Deployer, spec: BuildSpec) -> str:
    """Start `spec`'s build as the reconciler does: a refusal AWS takes back a moment later
    (`RetryableCloudError`: CodeBuild cannot assume the project's new build role until IAM has
    propagated it) is tried again."""

    def attempt() -> str | None:
        try:
            return deployer.start_build(spec)
        except RetryableCloudError:
            return None

    return wait_until(attempt, every=0.2, what="the build to start")


def build(deployer: Deployer, target: Target, source: GitHost, commit: str = COMMIT) -> str:
    spec = BuildSpec(
        target,
        REPO,
        commit,
        source.api_url,
        GOOD_TOKEN,
        "npm run build",
        registry_login=REGISTRY_LOGIN,
    )
    build_id = start_build(deployer, spec)
    done = wait_until(lambda: (b := deployer.describe_build(build_id)).state != "in_progress" and b)
    assert done
    return build_id


def task_spec(
    target: Target, image_uri: str, environment: StoredEnvironment | None = None
) -> TaskSpec:
    web = target.kind == "web_server"
    return TaskSpec(
        target=target,
        deployment_id=new_id("dep"),
        image_uri=image_uri,
        cpu=256,
        memory=512,
        environment=environment or StoredEnvironment(parameters={}, plain={}),
        start_command=None if web else "python -m worker",
        health_path="/healthz" if web else None,
    )


def settle(deployer: Deployer, target: Target, arn: str) -> None:
    rollout = wait_until(
        lambda: (r := deployer.describe_rollout(target, arn)).state != "in_progress" and r
    )
    assert rollout.state == "completed", rollout


def variable_names(count: int, total: int) -> list[str]:
    """`count` distinct variable names of `total` characters together, as even as can be."""
    lengths = [total // count + (i < total % count) for i in range(count)]
    return [f"V{i:03}".ljust(length, "_") for i, length in enumerate(lengths)]


def largest_start_command() -> str:
    """A start command of 4096 characters that takes exactly the API's `START_COMMAND_BYTES`:
    quotes (2 bytes each, and a shell's to run) and `é` (6 bytes, as its escape)."""
    accents = (START_COMMAND_BYTES - start_command_bytes('"' * 4096)) // 4
    command = '"' * (4096 - accents) + "é" * accents
    assert start_command_bytes(command) == START_COMMAND_BYTES
    return command
