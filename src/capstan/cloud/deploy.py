"""Deploying web servers and workers into a customer's AWS account: the driver the reconciler uses.

`Deployer` is coarse and idempotent: every method finds what exists (by deterministic names and
the `capstan:project` / `capstan:resource` tags) before it creates anything, starts long work
(builds, rollouts) without waiting for it, and raises only `RetryableCloudError` or
`TerminalCloudError`. Its calls are blocking boto3 calls; the reconciler runs them through
`Cloud.run` in a worker thread. The modules under `capstan.cloud.aws` do one AWS service each;
nothing boto3-shaped leaves this module.

What a target (a service or a preview) owns, all named after its resource id: an ECR repository,
a CodeBuild project, two log groups (`/capstan/<id>/build`, `/capstan/<id>/runtime`), SSM
parameters under `/capstan/<id>/`, task definitions (one revision per deployment) and an ECS
service; a web server also a target group, a host-header rule on the project's load balancer (on
the listener that serves it: HTTPS once the project's certificate is issued, else HTTP), an ALIAS
record in the operator's zone of the service domain with the ownership record that says it is the
target's (`aws/route53.py`), and CPU target tracking.

A `Deployer` has three parts on the same sessions: `network` (the project's shared resources,
`cloud/network.py`), `builds` (CodeBuild, `cloud/builds.py`) and `site` (a static website's own
steps, `cloud/site.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from capstan.cloud import container_metrics
from capstan.cloud.aws import (
    autoscaling,
    codebuild,
    ecr,
    ecs,
    elbv2,
    host_rules,
    iam,
    logs,
    names,
    route53,
    ssm,
)
from capstan.cloud.aws.autoscaling import Scaling
from capstan.cloud.aws.names import CONTAINER_PORT
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.aws.ssm import MAX_VALUE_BYTES
from capstan.cloud.builds import Build, BuildDriver, BuildSpec
from capstan.cloud.credentials import utcnow
from capstan.cloud.cron_jobs import CronJobDriver
from capstan.cloud.databases import PASSWORD_VARIABLE, DatabaseConnection, DatabaseDriver
from capstan.cloud.errors import CloudError, TerminalCloudError
from capstan.cloud.fargate import memory_problem
from capstan.cloud.network import NetworkDriver, ProjectCache
from capstan.cloud.one_off import OneOffDriver
from capstan.cloud.rollouts import Rollout, Rollouts
from capstan.cloud.site import SiteDriver
from capstan.cloud.target import LogLine, Target, TargetKind


@dataclass(frozen=True)
class TaskSpec:
    target: Target
    deployment_id: str  # "dep_…": one task definition revision per deployment
    image_uri: str
    cpu: int
    memory: int
    environment: ssm.StoredEnvironment  # from put_environment
    start_command: str | None  # workers: the container entry point command
    health_path: str | None  # web servers
    scaling: autoscaling.Scaling = field(default_factory=autoscaling.Scaling)
    architecture: str = "x86_64"  # or "arm64"
    # No deploy step of the target is known to have completed: its host rule and its ECS service
    # are created without a look first (`host_rules.ensure_host_rule`'s and
    # `ecs.ensure_service`'s `first`); a create that finds one there falls back to the look.
    first_roll_out: bool = False


class Deployer(Rollouts):
    """Web servers and workers (and, through `site`, static websites); with a `cache` and the
    `network_version` it expects, what it learns of the project's network outlives this pass."""

    def __init__(
        self,
        customer: AwsSession,
        operator: AwsSession,
        *,
        domain: str,
        clock: Callable[[], datetime] = utcnow,
        cache: ProjectCache | None = None,
        network_version: str | None = None,
        network_generation: int = 0,
    ) -> None:
        super().__init__(customer, operator, domain=domain, clock=clock)
        self.network = NetworkDriver(
            customer, cache=cache, network_version=network_version, generation=network_generation
        )
        self.builds = BuildDriver(customer, clock=clock)
        # One-off runs of a target's release (`cloud/one_off.py`).
        self.runs = OneOffDriver(customer, self.network)
        self.cron_jobs = CronJobDriver(customer, self.network)
        # A static website's own steps (storage, certificate, publication), on the same sessions.
        self.site = SiteDriver(customer, operator, domain=self._domain, clock=clock)

    def _on_listeners(self, balancer: elbv2.LoadBalancer, apply: Callable[[str], object]) -> None:
        """`apply` a host rule removal to the HTTP listener, then to the HTTPS one if the project
        has one (one removed meanwhile, the certificate deleted, is no error)."""
        apply(balancer.listener_arn)
        https = elbv2.find_https_listener(self._customer, balancer.arn)
        if https is None:
            return
        try:
            apply(https.arn)
        except TerminalCloudError as error:
            if error.code not in ("listener_not_found", "rule_not_found"):
                raise

    def _put_host_rule(
        self,
        target: Target,
        balancer: elbv2.LoadBalancer,
        group: str,
        hostname: str,
        *,
        first: bool = False,
    ) -> None:
        """The target's one host rule, on the listener that serves it (`Listeners.serving`). A
        rule put on HTTPS while the certificate's removal moves the rules back to HTTP
        (`elbv2.serve_http`) could go with the HTTPS listener: when HTTP no longer redirects
        afterwards, the rule is put on HTTP too, which then serves."""

        def put(listener_arn: str) -> None:
            host_rules.ensure_host_rule(
                self._customer,
                target.project_id,
                target.resource_id,
                listener_arn,
                group,
                hostname,
                first=first,
            )

        serving = elbv2.listeners(self._customer, balancer.arn).serving
        if serving is None or serving == balancer.listener_arn:
            put(balancer.listener_arn)
            return
        try:
            put(serving)
        except TerminalCloudError as error:
            if error.code != "listener_not_found":
                raise
        if not elbv2.listeners(self._customer, balancer.arn).redirects:
            put(balancer.listener_arn)

    def _remove_host_rule(self, balancer: elbv2.LoadBalancer, group: str) -> None:
        self._on_listeners(
            balancer,
            lambda listener_arn: host_rules.delete_host_rule(self._customer, listener_arn, group),
        )

    # -- builds -------------------------------------------------------------------------

    def start_build(self, spec: BuildSpec) -> str:
        """Start a build of `spec.commit_sha` into the target's repository; the build's id."""
        roles = self.network.roles(spec.target.project_id)
        return self.builds.start(spec, build_role_arn=roles["build"])

    def describe_build(self, build_id: str) -> Build:
        return self.builds.describe(build_id)

    def build_log(self, build_id: str) -> list[LogLine]:
        return self.builds.log(build_id)

    # -- environment ----------------------------------------------------------------------

    def put_environment(
        self,
        target: Target,
        variables: dict[str, str],
        version: str | None = None,
        databases: Mapping[str, str] | None = None,
        *,
        first: bool = False,
    ) -> ssm.StoredEnvironment:
        """SecureString parameters of `version` of the target's environment, exactly the
        non-empty `variables`; where each one is. Each of `databases` (variable name -> database
        id) is the database's connection URL, with `PGPASSWORD` from its RDS-managed secret,
        which the project's execution role may then read (`iam.grant_database_secret`).
        `first`: the target's first deployment, so no earlier one can have left a grant of its
        own (`iam.remove_target_secrets`)."""
        stored = ssm.put_environment(
            self._customer, target.project_id, target.resource_id, variables, version
        )
        parameters, plain = dict(stored.parameters), dict(stored.plain)
        found: dict[str, DatabaseConnection] = {}
        for name, database_id in sorted((databases or {}).items()):
            if database_id not in found:  # several variables may name one database
                found[database_id] = DatabaseDriver(self._customer).connection(
                    database_id, target.project_id
                )
                iam.grant_database_secret(
                    self._customer, target.project_id, database_id, found[database_id].secret_arn
                )
            plain[name] = found[database_id].url
            parameters[PASSWORD_VARIABLE] = found[database_id].password_from
        if not first:
            iam.remove_target_secrets(self._customer, target.project_id, target.resource_id)
        return ssm.StoredEnvironment(parameters, plain)

    def keep_images(self, target: Target, images: dict[str, str], *, first: bool = False) -> None:
        """Protect exactly these images (digests by deployment id) from the repository's
        lifecycle policy; older images expire (`ecr.lifecycle_policy`). `first`: the target's
        first release kept (`ecr.keep_images`)."""
        ecr.keep_images(self._customer, target.resource_id, images, first=first)

    def prune_environments(self, target: Target, keep: set[str | None]) -> list[str]:
        """Remove every version of the target's environment not in `keep` (no release needs
        it); the parameter names removed."""
        return ssm.prune_versions(self._customer, target.resource_id, keep)

    # -- images ---------------------------------------------------------------------------

    def pin_image(self, target: Target, image_uri: str) -> str:
        """`<repository>@sha256:…` for a built `<repository>:<tag>`: what a release keeps, since
        a tag can be moved and a digest cannot."""
        repository, _, tag = image_uri.rpartition(":")
        if "@" in image_uri or not repository:
            return image_uri
        digest = ecr.image_digest(self._customer, target.resource_id, tag)
        if digest is None:
            raise TerminalCloudError("image_not_found", f"The built image {image_uri} is gone.")
        return f"{repository}@{digest}"

    def image_exists(self, target: Target, image_uri: str) -> bool:
        """Whether the image a release names (by digest) is still in its repository."""
        _repository, _, digest = image_uri.partition("@")
        if not digest:
            _repository, _, tag = image_uri.rpartition(":")
            return ecr.image_digest(self._customer, target.resource_id, tag) is not None
        return ecr.image_exists(self._customer, target.resource_id, digest)

    # -- deployments ----------------------------------------------------------------------

    def register(self, spec: TaskSpec) -> str:
        """The task definition of `spec`, registered once (idempotent; its ARN): what a
        release command runs before the rollout, which `deploy` then finds."""
        problem = memory_problem(spec.cpu, spec.memory)
        if problem is not None:
            raise TerminalCloudError("invalid_task_size", problem)
        target = spec.target
        web = target.kind == "web_server"
        roles = self.network.roles(target.project_id)
        log_group = names.runtime_log_group(target.resource_id)
        logs.ensure_group(self._customer, target.project_id, target.resource_id, log_group)
        container = ecs.ContainerSpec(
            image=spec.image_uri,
            cpu=spec.cpu,
            memory=spec.memory,
            secrets=dict(spec.environment.parameters),
            plain=dict(spec.environment.plain),
            log_group=log_group,
            region=self._region,
            port=names.CONTAINER_PORT if web else None,
            health_path=(spec.health_path or "/") if web else None,
            command=None if web else spec.start_command,
            architecture="ARM64" if spec.architecture == "arm64" else "X86_64",
        )
        return ecs.ensure_task_definition(
            self._customer,
            target.project_id,
            target.resource_id,
            spec.deployment_id,
            container,
            task_role_arn=roles["task"],
            execution_role_arn=roles["execution"],
        )

    def deploy(self, spec: TaskSpec) -> str:
        """Roll the target to a task definition of `spec` (idempotent); its ARN."""
        target = spec.target
        web = target.kind == "web_server"
        if web and not target.hostname:
            raise TerminalCloudError("invalid_target", "A web server needs a hostname.")
        task_definition = self.register(spec)
        project = self.network.resources(target.project_id)
        balancer = self.network.balancer(target.project_id) if web else None
        target_group: str | None = None
        if balancer is not None:
            assert target.hostname is not None
            target_group = elbv2.ensure_target_group(
                self._customer,
                target.project_id,
                target.resource_id,
                project.network.vpc_id,
                spec.health_path or "/",
                self.network.generation,
            )
            self._put_host_rule(
                target, balancer, target_group, target.hostname, first=spec.first_roll_out
            )
        ecs.ensure_service(
            self._customer,
            target.project_id,
            target.resource_id,
            cluster=project.cluster,
            task_definition_arn=task_definition,
            subnet_ids=project.network.subnet_ids,
            security_group_id=project.network.services_group_id,
            target_group_arn=target_group,
            desired_count=spec.scaling.first_count(),
            first=spec.first_roll_out,
        )
        if balancer is not None:
            self._point_dns(target, balancer)
        label = None
        if balancer is not None and target_group is not None:
            label = autoscaling.resource_label(balancer.arn, target_group)
        autoscaling.ensure_scaling(
            self._customer,
            project.cluster,
            names.service_name(target.resource_id),
            spec.scaling,
            requests_label=label,
        )
        return task_definition

    def _point_dns(self, target: Target, balancer: elbv2.LoadBalancer) -> None:
        """The target's alias, owned by it (`route53.point_alias`)."""
        assert target.hostname is not None
        zone = route53.service_zone(self._operator, self._domain)
        route53.point_alias(
            self._operator,
            zone,
            target.hostname,
            target.resource_id,
            dns_name=balancer.dns_name,
            target_zone_id=balancer.hosted_zone_id,
        )

    def move_hostname(self, target: Target, *old_hostnames: str) -> None:
        """After a hostname_suffix rename: rule and DNS record to `target.hostname`; the target's
        own records at `old_hostnames` removed (another's are left)."""
        if target.kind != "web_server" or not target.hostname:
            return
        balancer = self.network.balancer(target.project_id)
        group = self._target_group(target)
        if group is not None:
            self._put_host_rule(target, balancer, group, target.hostname)
        self._point_dns(target, balancer)
        for old_hostname in old_hostnames:
            if old_hostname.rstrip(".").lower() != target.hostname.rstrip(".").lower():
                route53.remove_owned(
                    self._operator,
                    self._domain,
                    old_hostname,
                    target.resource_id,
                    points_at=balancer.dns_name,
                )

    # -- deletion -------------------------------------------------------------------------

    def delete(self, target: Target, hostnames: Sequence[str] | None = None) -> bool:
        """Remove everything of the target, in order; True when nothing of it is left. Its DNS
        records go at `hostnames` (default: its own), where they are its own."""
        cluster = self._cluster(target)
        service = names.service_name(target.resource_id)
        generation = self.network.generation
        autoscaling.delete_scaling(self._customer, cluster, service)
        ecs.delete_service(self._customer, cluster, target.resource_id)
        group = self._target_group(target)
        named = self._hostnames(target, hostnames)
        balancer = (
            elbv2.find_load_balancer(self._customer, target.project_id, generation)
            if group is not None or named
            else None
        )
        if group is not None:
            if balancer is not None:
                self._remove_host_rule(balancer, group)
            try:
                elbv2.delete_target_group(self._customer, target.resource_id, generation)
            except TerminalCloudError as error:
                if error.code != "resource_in_use":
                    raise
                return False  # the service's tasks are still draining
        for hostname in named:
            route53.remove_owned(
                self._operator,
                self._domain,
                hostname,
                target.resource_id,
                points_at=balancer.dns_name if balancer is not None else None,
            )
        ssm.delete_environment(self._customer, target.resource_id)
        iam.remove_target_secrets(self._customer, target.project_id, target.resource_id)
        ssm.delete_build_tokens(self._customer, target.project_id, target.resource_id)
        codebuild.delete_project(self._customer, target.resource_id)
        ecr.delete_repository(self._customer, target.resource_id)
        for group_name in (
            names.build_log_group(target.resource_id),
            names.runtime_log_group(target.resource_id),
        ):
            logs.delete_group(self._customer, group_name)
        ecs.delete_task_definitions(self._customer, target.resource_id)
        return not self.remaining(target, named, balancer)

    @staticmethod
    def _hostnames(target: Target, hostnames: Sequence[str] | None) -> list[str]:
        wanted = hostnames if hostnames is not None else (target.hostname,)
        return list(dict.fromkeys(h for h in wanted if h))

    def remaining(
        self,
        target: Target,
        hostnames: Sequence[str] | None = None,
        balancer: elbv2.LoadBalancer | None = None,
    ) -> list[str]:
        """What of the target still exists, by kind of resource ([] when it is all gone); its
        own DNS records are looked for at `hostnames` (default: its own)."""
        left: list[str] = []
        state = ecs.describe_service(
            self._customer, self._cluster(target), names.service_name(target.resource_id)
        )
        if state is not None and state.status == "ACTIVE":
            left.append("ecs service")
        if self._target_group(target):
            left.append("target group")
        points_at = balancer.dns_name if balancer is not None else None
        for hostname in self._hostnames(target, hostnames):
            if route53.owned_by(
                self._operator, self._domain, hostname, target.resource_id, points_at=points_at
            ):
                left.append(f"dns record {hostname}")
        if ssm.parameter_names(self._customer, target.resource_id):
            left.append("ssm parameters")
        if codebuild.project_exists(self._customer, target.resource_id):
            left.append("codebuild project")
        if ecr.repository_exists(self._customer, target.resource_id):
            left.append("ecr repository")
        for group_name in (
            names.build_log_group(target.resource_id),
            names.runtime_log_group(target.resource_id),
        ):
            if logs.group_exists(self._customer, group_name):
                left.append(f"log group {group_name}")
        if ecs.task_definitions_left(self._customer, target.resource_id):
            left.append("task definitions")
        return left

    # -- observation ----------------------------------------------------------------------

    def logs(
        self, target: Target, *, since: datetime | None = None, limit: int = 100
    ) -> list[LogLine]:
        """Runtime lines from CloudWatch Logs, oldest first (the newest `limit` of them)."""
        events = logs.recent_events(
            self._customer,
            names.runtime_log_group(target.resource_id),
            since=since,
            limit=limit,
            now=self._clock(),
        )
        return [LogLine(event.timestamp, event.message) for event in events]

    def metrics(self, target: Target) -> dict[str, Any]:
        """CloudWatch over the last hour (`cloud/container_metrics.py`)."""
        return container_metrics.read(
            self._customer, target, now=self._clock(), generation=self.network.generation
        )


__all__ = [
    "CONTAINER_PORT",
    "MAX_VALUE_BYTES",
    "Build",
    "BuildSpec",
    "CloudError",
    "Deployer",
    "LogLine",
    "ProjectCache",
    "Rollout",
    "Scaling",
    "Target",
    "TargetKind",
    "TaskSpec",
]
