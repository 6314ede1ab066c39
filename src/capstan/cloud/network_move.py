"""Moving a project made with a VPC of its own into the network its account shares in the region,
without its web servers missing a request: the driver the project network reconciler uses.

A load balancer, its target groups and a service's tasks cannot change VPC, so the move builds the
project's next network generation (`names`: its own load balancer, target groups and cluster) in
the shared VPC beside the current one, and hands over in three steps, each idempotent:

1. `build`: the next generation's network (security groups, cluster, and for a project with a
   web server its load balancer and listeners) is made, and every ECS service of the old cluster
   is mirrored into the new one — the same task definition (or a newer one: a deployment that
   ran meanwhile), as many tasks, and for a web server a target group of the new generation
   behind the same host rule. What a deletion removed
   from the old cluster is removed from the new one. It answers whether every mirror has settled
   (its tasks running, a web server's targets healthy).
2. `switch_dns`: every record of the operator's zone that aliases the old load balancer is pointed
   at the new one. From then on, targets deploy into the new generation (the reconciler records
   it); the old one still answers whoever resolved the old record.
3. `remove_old`: once resolvers have let the old records go, the old services, load balancer,
   target groups and cluster are removed, then the project's own VPC.

Workers run twice for the moment between their mirror settling and the old one stopping, as in a
rolling deployment. Caches and databases cannot change VPC without losing their data or their
address: a project whose VPC holds one is not moved (`blockers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from capstan.cloud.aws import autoscaling, ecs, elbv2, host_rules, names, route53
from capstan.cloud.aws import network as aws_network
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.network import NetworkDriver, ProjectResources


@dataclass(frozen=True)
class Mirrored:
    """Where `build` stands: `settled` once every mirrored service runs its task definition with
    all its tasks (and healthy targets); `waiting`: the services not there yet, and why."""

    settled: bool
    waiting: tuple[str, ...]


class NetworkMove:
    """The move of `project_id` from network `generation` to the next, in the customer's
    account (`customer`), its DNS records in the operator's zone of `domain` (`operator`)."""

    def __init__(
        self,
        customer: AwsSession,
        operator: AwsSession,
        *,
        domain: str,
        project_id: str,
        generation: int,
    ) -> None:
        self._customer = customer
        self._operator = operator
        self._domain = domain
        self._project_id = project_id
        self._old = generation
        self._new = generation + 1
        self._next = NetworkDriver(customer, generation=self._new)

    def blockers(self) -> list[str]:
        """Why the project cannot move now: what else lives in its own VPC ([] when it can,
        and when it has no VPC of its own left)."""
        vpc_id = aws_network.own_vpc(self._customer, self._project_id)
        if vpc_id is None:
            return []
        return aws_network.others_in_own_vpc(self._customer, self._project_id, vpc_id)

    def build(self, certificate_arn: str | None, *, load_balancer: bool = True) -> Mirrored:
        """Step 1: the next generation made (its load balancer only if the project serves HTTP:
        `load_balancer`), and the old cluster's services mirrored into it."""
        self._next.ensure_project_network(
            self._project_id, certificate_arn, load_balancer=load_balancer
        )
        return self.mirror(remove_extra=True)

    def mirror(self, *, remove_extra: bool) -> Mirrored:
        """Every service of the old cluster in the new one, at least as new; with `remove_extra`,
        the new cluster's services the old one no longer has are removed."""
        project = self._next.resources(self._project_id)
        old_cluster = names.cluster_name(self._project_id, self._old)
        old = set(ecs.active_services(self._customer, self._project_id, self._old))
        if remove_extra:
            for name in ecs.active_services(self._customer, self._project_id, self._new):
                if name not in old:
                    self._remove_mirror(project.cluster, name, project.balancer)
        old_balancer = elbv2.find_load_balancer(self._customer, self._project_id, self._old)
        waiting: list[str] = []
        for name in sorted(old):
            source = ecs.describe_service(self._customer, old_cluster, name)
            if source is None or source.status != "ACTIVE" or not source.task_definition:
                continue
            problem = self._mirror_one(name, source, project, old_balancer)
            if problem is not None:
                waiting.append(f"{name}: {problem}")
        return Mirrored(not waiting, tuple(waiting))

    def _mirror_one(
        self,
        name: str,
        source: ecs.ServiceState,
        project: ProjectResources,
        old_balancer: elbv2.LoadBalancer | None,
    ) -> str | None:
        """Mirror one service; None once the mirror has settled, else what it waits for."""
        resource_id = name.removeprefix("capstan-")
        task_definition = source.task_definition
        assert task_definition is not None
        group: str | None = None
        if source.target_groups:
            if project.balancer is None:
                return "waiting for the new generation's load balancer"
            old_group = source.target_groups[0]
            group = elbv2.ensure_target_group(
                self._customer,
                self._project_id,
                resource_id,
                project.network.vpc_id,
                elbv2.health_path(self._customer, old_group),
                self._new,
            )
            host = (
                host_rules.host_of(self._customer, old_balancer.listener_arn, old_group)
                if old_balancer is not None
                else None
            )
            if host is not None:
                self._put_host_rule(project.balancer, resource_id, group, host)
        mirror = ecs.describe_service(self._customer, project.cluster, name)
        made = mirror is not None and mirror.status == "ACTIVE"
        if (
            mirror is not None
            and made
            and ecs.revision(mirror.task_definition) >= ecs.revision(task_definition)
        ):
            return _unsettled(self._customer, mirror)
        # Made, or rolled to a newer task definition (a deployment of the old generation ran).
        ecs.ensure_service(
            self._customer,
            self._project_id,
            resource_id,
            cluster=project.cluster,
            task_definition_arn=task_definition,
            subnet_ids=project.network.subnet_ids,
            security_group_id=project.network.services_group_id,
            target_group_arn=group,
            desired_count=max(source.desired, 1),
        )
        if made:
            return "rolling to the old service's newer task definition"
        if group is not None:
            autoscaling.ensure_cpu_scaling(self._customer, project.cluster, name)
        return "starting"

    def _put_host_rule(
        self, balancer: elbv2.LoadBalancer, resource_id: str, group: str, host: str
    ) -> None:
        """The mirror's one host rule, on the new load balancer's listener that serves it."""
        listener = elbv2.listeners(self._customer, balancer.arn).serving or balancer.listener_arn
        host_rules.ensure_host_rule(
            self._customer, self._project_id, resource_id, listener, group, host
        )

    def _listeners(self, balancer: elbv2.LoadBalancer) -> list[str]:
        """The load balancer's HTTP listener, and its HTTPS one if it has one."""
        https = elbv2.find_https_listener(self._customer, balancer.arn)
        return [balancer.listener_arn] + ([https.arn] if https is not None else [])

    def _remove_mirror(self, cluster: str, name: str, balancer: elbv2.LoadBalancer | None) -> None:
        resource_id = name.removeprefix("capstan-")
        autoscaling.delete_scaling(self._customer, cluster, name)
        ecs.delete_service(self._customer, cluster, resource_id)
        group = elbv2.find_target_group(self._customer, resource_id, self._new)
        if group is None:
            return
        for listener in self._listeners(balancer) if balancer is not None else []:
            host_rules.delete_host_rule(self._customer, listener, group)
        elbv2.delete_target_group_arn(self._customer, group)

    def wind_down(self) -> None:
        """The project's network is being removed mid-move (its last target is gone): the
        mirrors in the new generation go, so the removal finds no service holding it."""
        cluster = names.cluster_name(self._project_id, self._new)
        balancer = elbv2.find_load_balancer(self._customer, self._project_id, self._new)
        for name in ecs.active_services(self._customer, self._project_id, self._new):
            self._remove_mirror(cluster, name, balancer)

    def switch_dns(self) -> int:
        """Step 2: the records aliasing the old load balancer alias the new one; how many moved
        (a deployment of the old generation may have pointed one back: asked again until 0)."""
        old = elbv2.find_load_balancer(self._customer, self._project_id, self._old)
        new = elbv2.find_load_balancer(self._customer, self._project_id, self._new)
        if old is None or new is None:
            return 0
        zone = route53.service_zone(self._operator, self._domain)
        hostnames = route53.aliases_of(self._operator, zone, old.dns_name)
        for hostname in hostnames:
            route53.upsert_alias(
                self._operator,
                zone,
                hostname,
                dns_name=new.dns_name,
                target_zone_id=new.hosted_zone_id,
            )
        return len(hostnames)

    def remove_old(self) -> bool:
        """Step 3: the old generation and the project's own VPC removed; True when all is gone
        (False while AWS still drains targets or holds network interfaces: ask again)."""
        project_id, old = self._project_id, self._old
        cluster = names.cluster_name(project_id, old)
        for name in ecs.active_services(self._customer, project_id, old):
            autoscaling.delete_scaling(self._customer, cluster, name)
            ecs.delete_service(self._customer, cluster, name.removeprefix("capstan-"))
        elbv2.delete_load_balancer(self._customer, project_id, old)
        vpc_id = aws_network.own_vpc(self._customer, project_id)
        groups = elbv2.groups_in_vpc(self._customer, vpc_id) if vpc_id is not None else []
        if not all([elbv2.delete_target_group_arn(self._customer, arn) for arn in groups]):
            return False
        if ecs.active_services(self._customer, project_id, old):
            return False
        ecs.delete_cluster(self._customer, project_id, old)
        return aws_network.delete_own_vpc(self._customer, project_id) and not ecs.cluster_exists(
            self._customer, project_id, old
        )


def _unsettled(customer: AwsSession, service: ecs.ServiceState) -> str | None:
    """None when the service's primary deployment runs all its tasks (a web server's targets
    healthy), else what it waits for."""
    primary = next((item for item in service.deployments if item.status == "PRIMARY"), None)
    if primary is None or primary.task_definition != service.task_definition:
        return "no primary deployment yet"
    if primary.rollout_state == "FAILED":
        return primary.reason or "ECS stopped the rollout"
    if primary.rollout_state != "COMPLETED" or primary.running < primary.desired:
        return f"{primary.running} of {primary.desired} tasks running"
    if service.target_groups:
        health = elbv2.target_health(customer, service.target_groups[0])
        healthy = sum(1 for item in health if item.state == "healthy")
        if healthy < primary.desired:
            return f"{healthy} of {primary.desired} targets healthy"
    return None


__all__ = ["Mirrored", "NetworkMove"]
