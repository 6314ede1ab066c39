"""Reading a web server's or worker's ECS rollout (`Rollouts`, a part of `Deployer`): whether
the deployment completed, failed (and why, in Capstan's words) or is still under way, its tasks
started again after RDS rotates a database password they hold, and its scaling changed in
place."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from capstan.cloud.aws import autoscaling, ecs, elbv2, iam, names, task_stops
from capstan.cloud.builds import ROLE_PROPAGATION
from capstan.cloud.databases import DatabaseDriver
from capstan.cloud.network import NetworkDriver
from capstan.cloud.target import Target, TargetDriver


@dataclass(frozen=True)
class Rollout:
    state: Literal["in_progress", "completed", "failed"]
    running: int
    desired: int
    reason: str | None


class Rollouts(TargetDriver):
    """What ECS says of a target's rollout; `Deployer` is one, with its `network`."""

    network: NetworkDriver

    def describe_rollout(self, target: Target, task_definition_arn: str) -> Rollout:
        """completed: the PRIMARY deployment runs `task_definition_arn` with every task running
        (and, for a web server, as many healthy targets); failed: ECS gave the rollout up."""
        service = ecs.describe_service(
            self._customer, self._cluster(target), names.service_name(target.resource_id)
        )
        if service is None or service.status != "ACTIVE":
            return Rollout("failed", 0, 0, "The service does not exist.")
        deployment = next(
            (item for item in service.deployments if item.task_definition == task_definition_arn),
            None,
        )
        if deployment is None:
            if service.task_definition == task_definition_arn:
                return Rollout("in_progress", 0, service.desired, "Waiting for ECS to start.")
            return Rollout(
                "failed",
                0,
                service.desired,
                "The service no longer runs this task definition (rolled back or replaced).",
            )
        if deployment.rollout_state == "FAILED":
            said = deployment.reason or "ECS stopped the rollout."
            cause = self._stop_cause(target, deployment)
            reason = f"{said} {cause}" if cause else said
            return Rollout("failed", deployment.running, deployment.desired, reason)
        refused = ecs.placement_refusal(service, deployment)
        if refused is not None and deployment.running < deployment.desired:
            return Rollout("failed", deployment.running, deployment.desired, refused)
        role = ecs.unassumable_role(service, deployment)
        if role is not None and deployment.running < deployment.desired:
            return self._unassumable(role, deployment)
        unhealthy: str | None = None
        healthy = deployment.running
        if target.kind == "web_server":
            # The service names its target group: no look-up by name.
            group = next(iter(service.target_groups), None) or self._target_group(target)
            health = elbv2.target_health(self._customer, group) if group else []
            healthy = sum(1 for item in health if item.state == "healthy")
            problems = [
                f"{item.target_id}: {item.state}"
                + (f" ({item.description})" if item.description else "")
                for item in health
                if item.state not in ("healthy", "draining")
            ]
            unhealthy = "; ".join(problems) or None
        settled = (
            deployment.status == "PRIMARY"
            and deployment.rollout_state == "COMPLETED"
            and deployment.running == deployment.desired
            and healthy >= deployment.desired
        )
        if settled:
            return Rollout("completed", deployment.running, deployment.desired, None)
        reason = unhealthy or (
            f"{deployment.running} of {deployment.desired} tasks running"
            + (f"; {deployment.reason}" if deployment.reason else "")
        )
        cause = self._stop_cause(target, deployment)
        if cause:
            reason = f"{reason}; {cause}"
        return Rollout("in_progress", deployment.running, deployment.desired, reason)

    def reconnect_databases(self, target: Target, database_ids: Collection[str]) -> bool:
        """Start the target's tasks again when RDS has rotated the master password of a
        database they reference since the running deployment's tasks started (they hold the
        old one, which the instance no longer accepts); True when it did. Compares the cloud's
        two dates on every call, so a resync repairs what a rotation left behind."""
        databases = DatabaseDriver(self._customer)
        rotated = [databases.password_rotated_at(item) for item in sorted(database_ids)]
        latest = max((moment for moment in rotated if moment is not None), default=None)
        if latest is None:
            return False
        service = ecs.describe_service(
            self._customer, self._cluster(target), names.service_name(target.resource_id)
        )
        if service is None or service.status != "ACTIVE":
            return False
        primary = next((item for item in service.deployments if item.status == "PRIMARY"), None)
        if primary is None or primary.created_at is None or primary.created_at >= latest:
            return False
        ecs.restart_tasks(self._customer, self._cluster(target), target.resource_id)
        return True

    def _unassumable(self, role_arn: str, deployment: ecs.Deployment) -> Rollout:
        """ECS cannot assume a task's role to launch it. A role made moments ago is one IAM has
        not propagated yet: ECS keeps trying and the rollout waits. A role older than
        `ROLE_PROPAGATION` by the driver's clock (or gone) ECS will not assume: a failure
        naming it."""
        created = iam.role_created_at(self._customer, role_arn)
        name = role_arn.rsplit("/", 1)[-1]  # the account's id stays out of what users see
        if created is not None and self._clock() - created < ROLE_PROPAGATION:
            return Rollout(
                "in_progress",
                deployment.running,
                deployment.desired,
                f"ECS cannot assume the new role {name} yet (IAM is still propagating it); it "
                "keeps trying.",
            )
        minutes = int(ROLE_PROPAGATION.total_seconds() // 60)
        return Rollout(
            "failed",
            deployment.running,
            deployment.desired,
            f"ECS could not assume the role {name} to start the service's tasks "
            f"{minutes} minutes after it was made. Check that the role exists and trusts "
            "ecs-tasks.amazonaws.com, then redeploy.",
        )

    def _stop_cause(self, target: Target, deployment: ecs.Deployment) -> str | None:
        """Why ECS stopped the newest of the deployment's tasks, in Capstan's words; read only
        for a rollout that ECS counts failed tasks of (one that goes well costs no call)."""
        if not deployment.failed_tasks:
            return None
        stopped = task_stops.stopped_tasks(self._customer, self._cluster(target), deployment.id)
        return task_stops.explain(stopped[0]) if stopped else None

    def scale(self, target: Target, scaling: autoscaling.Scaling) -> tuple[bool, int, int]:
        """The running target's range and targets as `scaling` says, in place (no new task
        definition): whether they had to change, and its tasks as ECS counts them (desired,
        running). A service that is not there is left to the drift check (nothing to scale)."""
        cluster = self._cluster(target)
        service = names.service_name(target.resource_id)
        state = ecs.describe_service(self._customer, cluster, service)
        if state is None or state.status != "ACTIVE":
            return False, 0, 0
        if autoscaling.current(self._customer, cluster, service) == scaling:
            return False, state.desired, state.running
        label: str | None = None
        if target.kind == "web_server" and scaling.requests_per_task is not None:
            balancer = self.network.balancer(target.project_id)
            group = self._target_group(target)
            label = autoscaling.resource_label(balancer.arn, group) if group else None
        autoscaling.ensure_scaling(self._customer, cluster, service, scaling, requests_label=label)
        return True, state.desired, state.running

    def _cluster(self, target: Target) -> str:
        return names.cluster_name(target.project_id, self.network.generation)

    def _target_group(self, target: Target) -> str | None:
        return elbv2.find_target_group(self._customer, target.resource_id, self.network.generation)
