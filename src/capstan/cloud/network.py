"""A project's shared resources in a customer's AWS account: the driver the network reconciler
uses, and what every target's deployment stands on.

What a project owns, all named after its id: two security groups in the VPC and subnets every
project of the account and region shares (`aws.shared_network`), an ECS cluster, the build,
execution and task roles (the task role's extra policy is the project's task grants), and while
it has a web server an application load balancer with an HTTP listener (and an HTTPS one serving
the project's certificate once it is issued, to which HTTP then redirects).

`NetworkDriver` is coarse and idempotent like every driver: it finds what exists before it
creates anything and raises only `RetryableCloudError` or `TerminalCloudError`. Its calls block;
callers run them through `Cloud.run`. `ProjectCache` keeps what a process learnt of projects'
shared resources across passes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from capstan.cloud.aws import ecs, elbv2, iam, names, scheduler, shared_network
from capstan.cloud.aws import network as aws_network
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.network import SHARED_NOT_READY
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError
from capstan.cloud.policy_size import ROLE_INLINE_CHARS

# The most the task role's grants can take, as IAM counts it (`task_grants_chars`).
TASK_GRANTS_CHARS = ROLE_INLINE_CHARS
task_grants_chars = iam.task_grants_chars


@dataclass(frozen=True)
class ProjectResources:
    """The project's network, load balancer (None while it has none: it has no web server) and
    cluster, as the targets' deployments use them."""

    network: aws_network.ProjectNetwork
    balancer: elbv2.LoadBalancer | None
    cluster: str


class ProjectCache:
    """What a process knows of projects' shared resources (network, load balancer, cluster,
    roles), kept across passes so each step does not look them up again.

    Entries are keyed by project and a `version` the caller gives — the time the project's network
    was (re)created — so a network removed and created again is never answered from an old entry.
    `ensure_project_network` always refreshes; `delete_project_network` forgets the project.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[ProjectResources, dict[str, str]]] = {}

    def get(self, project_id: str, version: str) -> tuple[ProjectResources, dict[str, str]] | None:
        with self._lock:
            return self._entries.get((project_id, version))

    def put(
        self, project_id: str, version: str, project: ProjectResources, roles: dict[str, str]
    ) -> None:
        with self._lock:
            self._forget(project_id)
            self._entries[(project_id, version)] = (project, roles)

    def forget(self, project_id: str) -> None:
        with self._lock:
            self._forget(project_id)

    def _forget(self, project_id: str) -> None:
        for key in [k for k in self._entries if k[0] == project_id]:
            del self._entries[key]


class NetworkDriver:
    """Synchronous boto3 work in the organization's account (`customer`: the assumed role).

    With a `cache` and the `network_version` the caller expects, what it learns of a project is
    shared across passes of this process; without, it is kept for this driver's life only.
    `generation` is the generation of the project's network its targets run in (0 unless the
    project has moved to a new network: `cloud/network_move.py`).
    """

    def __init__(
        self,
        customer: AwsSession,
        *,
        cache: ProjectCache | None = None,
        network_version: str | None = None,
        generation: int = 0,
    ) -> None:
        self._customer = customer
        self.generation = generation
        self._projects: dict[str, ProjectResources] = {}
        self._roles: dict[str, dict[str, str]] = {}
        # Shared across passes when the caller says which version of the network it expects.
        self._cache = cache if network_version is not None else None
        # A moved project's next generation is another network: never answered from the old.
        self._network_version = (network_version or "") + (f"#{generation}" if generation else "")

    def ensure_project_network(
        self, project_id: str, certificate_arn: str | None = None, *, load_balancer: bool = True
    ) -> None:
        """Security groups (in the shared VPC, made first if missing), cluster, roles; with
        `load_balancer`, the load balancer too (`ensure_load_balancer`)."""
        generation = self.generation
        net = aws_network.ensure_network(self._customer, project_id, generation)
        cluster = ecs.ensure_cluster(self._customer, project_id, generation)
        self._roles[project_id] = iam.ensure_project_roles(self._customer, project_id)
        balancer = elbv2.find_load_balancer(self._customer, project_id, generation)
        self._projects[project_id] = ProjectResources(net, balancer, cluster)
        self._remember(project_id)
        if load_balancer:
            self.ensure_load_balancer(project_id, certificate_arn)

    def ensure_load_balancer(
        self, project_id: str, certificate_arn: str | None = None
    ) -> elbv2.LoadBalancer:
        """The project's load balancer and HTTP listener (its network made first if missing);
        with the project's issued `certificate_arn`, served over HTTPS (`elbv2.serve_https`)."""
        project = self.resources(project_id)
        balancer = elbv2.ensure_load_balancer(
            self._customer, project_id, project.network, self.generation
        )
        if certificate_arn is not None:
            elbv2.serve_https(self._customer, project_id, balancer, certificate_arn)
        self._projects[project_id] = ProjectResources(project.network, balancer, project.cluster)
        self._remember(project_id)
        return balancer

    def remove_load_balancer(self, project_id: str, *, also: tuple[int, ...] = ()) -> bool:
        """Remove the project's load balancer (the project serves no HTTP any more) once its
        listeners route nothing (every web server's rule and target group went with it); True
        when there is none. `also`: other generations of its network that may have one."""
        for generation in sorted({self.generation, *also}):
            balancer = elbv2.find_load_balancer(self._customer, project_id, generation)
            if balancer is not None and elbv2.balancer_has_rules(self._customer, balancer.arn):
                return False
            elbv2.delete_load_balancer(self._customer, project_id, generation)
        known = self._projects.get(project_id)
        if known is not None:
            self._projects[project_id] = ProjectResources(known.network, None, known.cluster)
            self._remember(project_id)
        return True

    def in_own_vpc(self, project_id: str) -> bool:
        """Whether the project's network, as this driver made or found it, is in a VPC of the
        project's own (one made before the shared network: the project is to move)."""
        project = self._projects.get(project_id)
        return project is not None and project.network.own_vpc

    def ensure_shared_network(self) -> None:
        """The VPC, subnets, gateway and route every project of the account and region shares."""
        with aws_errors():
            shared_network.ensure_shared(self._customer.client("ec2"))

    def release_shared_network(self) -> bool:
        """Remove the shared network if no project has a security group in it; True when gone."""
        try:
            with aws_errors():
                return shared_network.release_shared(self._customer.client("ec2"))
        except RetryableCloudError as error:
            if error.code != "dependency_violation":
                raise
            return False

    def apply_task_grants(self, project_id: str, statements: list[dict[str, Any]]) -> None:
        """The project's task role may do exactly `statements` beyond running its tasks."""
        iam.put_task_grants(self._customer, project_id, statements)

    def delete_project_network(self, project_id: str, *, also: tuple[int, ...] = ()) -> bool:
        """Remove the project's shared resources once no target uses them; True when gone.
        `also`: other generations of its network that may exist (a move under way)."""
        generations = sorted({self.generation, *also})
        for generation in generations:
            if ecs.active_services(self._customer, project_id, generation):
                return False
            balancer = elbv2.find_load_balancer(self._customer, project_id, generation)
            if balancer is not None and elbv2.balancer_has_rules(self._customer, balancer.arn):
                return False
        self._projects.pop(project_id, None)
        self._roles.pop(project_id, None)
        if self._cache is not None:
            self._cache.forget(project_id)
        for generation in generations:
            elbv2.delete_load_balancer(self._customer, project_id, generation)
            ecs.delete_cluster(self._customer, project_id, generation)
        try:
            gone = aws_network.delete_network(self._customer, project_id)
        except RetryableCloudError as error:
            if error.code != "dependency_violation":
                raise
            return False
        # Cron jobs' schedule group and scheduler role are the project's (whether or not it
        # ever had a cron job); both deletes answer for what is already gone.
        scheduler.delete_group(self._customer, project_id)
        iam.delete_scheduler_role(self._customer, project_id)
        iam.delete_project_roles(self._customer, project_id)
        return gone and all(
            elbv2.find_load_balancer(self._customer, project_id, generation) is None
            and not ecs.cluster_exists(self._customer, project_id, generation)
            for generation in generations
        )

    def resources(self, project_id: str) -> ProjectResources:
        """The project's network, load balancer (if it has one) and cluster (the network and
        cluster made first if either is missing)."""
        self._recall(project_id)
        project = self._projects.get(project_id)
        if project is not None:
            return project
        generation = self.generation
        net = aws_network.find_network(self._customer, project_id, generation)
        if net is None or not ecs.cluster_exists(self._customer, project_id, generation):
            self.ensure_project_network(project_id, load_balancer=False)
            return self._projects[project_id]
        balancer = elbv2.find_load_balancer(self._customer, project_id, generation)
        project = ProjectResources(net, balancer, names.cluster_name(project_id, generation))
        self._projects[project_id] = project
        return project

    def balancer(self, project_id: str) -> elbv2.LoadBalancer:
        """The project's load balancer, for its web servers. The network's reconciler makes it
        for the first of them, and they wait for it; made here only if it went since (by hand)."""
        found = self.resources(project_id).balancer
        return found if found is not None else self.ensure_load_balancer(project_id)

    def roles(self, project_id: str) -> dict[str, str]:
        """The project's role ARNs by use (`build`, `execution`, `task`), made if missing."""
        self._recall(project_id)
        roles = self._roles.get(project_id)
        if roles is None:
            roles = self._roles[project_id] = iam.ensure_project_roles(self._customer, project_id)
            self._remember(project_id)
        return roles

    def _remember(self, project_id: str) -> None:
        if self._cache is not None and project_id in self._projects and project_id in self._roles:
            self._cache.put(
                project_id,
                self._network_version,
                self._projects[project_id],
                self._roles[project_id],
            )

    def _recall(self, project_id: str) -> None:
        if self._cache is None or project_id in self._projects:
            return
        known = self._cache.get(project_id, self._network_version)
        if known is not None:
            self._projects[project_id], self._roles[project_id] = known


__all__ = [
    "SHARED_NOT_READY",
    "TASK_GRANTS_CHARS",
    "NetworkDriver",
    "ProjectCache",
    "ProjectResources",
    "task_grants_chars",
]
