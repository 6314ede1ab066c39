"""ECS, simulated: deployments roll out, tasks run, targets register and turn healthy.

moto's UpdateService swaps the task definition in place; `install()` makes it start a new PRIMARY
deployment (IN_PROGRESS) as ECS does, and makes target health answer from the simulator for
targets it knows to be unhealthy. `Scheduler.tick` then does what ECS's scheduler does.

Fargate runs at most `quotas.fargate_vcpus_per_region` vCPUs of an account's tasks at once in a
region (6 in a new account). Tasks that would go past it are not placed: the deployment stays in
progress and the service's events say why, in ECS's words, as ECS keeps trying ("(service …) was
unable to place a task. Reason: You've reached the limit on the number of vCPUs you can run
concurrently…"); a rollout's new tasks are placed all at once or not at once.

A task whose roles ECS cannot assume yet (IAM has not propagated them: `task_start.unassumable`)
is not launched: the service's events say so and ECS tries again on its next look. Tasks that
failed to start for a cause that has since gone (a policy IAM had not propagated when they
started) are replaced by new ones, which start, as ECS's scheduler replaces failed tasks until
the circuit breaker trips.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moto.core.utils import utcnow
from moto.ecs.models import EC2ContainerServiceBackend, ecs_backends
from moto.elbv2.models import FakeHealthStatus, FakeTargetGroup, elbv2_backends
from moto.moto_api._internal import mock_random

from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.quotas import quotas
from capstan_sandbox.cloud.simulator import (
    images,
    target_reach,
    task_network,
    task_runs,
    task_start,
    task_stops,
)
from capstan_sandbox.cloud.simulator.backends import each

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

_MARK = "_capstan_simulated"
_install_lock = threading.Lock()
# (target group ARN, target id) -> why its health check fails (ELB's reason code, description).
_unhealthy: dict[tuple[str, str], tuple[str, str]] = {}
_BAD_STATUS = ("Target.ResponseCodeMismatch", "Health checks failed with these codes: [503]")
_addresses = itertools.count(1)
CIRCUIT_BREAKER_REASON = (
    "ECS deployment circuit breaker: tasks failed to start or failed their health checks."
)
VCPU_LIMIT_REASON = (
    "You've reached the limit on the number of vCPUs you can run concurrently. For more "
    "information, see the Troubleshooting section of the Amazon ECS Developer Guide."
)
# How often ECS repeats an event that has not changed (the sandbox's pace, not AWS's).
_EVENT_REPEAT_SECONDS = 30.0


def install() -> None:
    with _install_lock:
        if getattr(EC2ContainerServiceBackend.update_service, _MARK, False):
            return
        original_update = EC2ContainerServiceBackend.update_service
        original_health = FakeTargetGroup.health_for

        def update_service(
            self: EC2ContainerServiceBackend, service_properties: dict[str, Any]
        ) -> Any:
            force = bool(service_properties.get("force_new_deployment"))
            service = original_update(self, service_properties)
            primary = service.deployments[0] if service.deployments else None
            if primary is not None and (
                force or service.task_definition != primary.get("taskDefinition")
            ):
                _start_deployment(service)
            return service

        def health_for(self: FakeTargetGroup, target: dict[str, Any], ec2_backend: Any) -> Any:
            reason = _unhealthy.get((self.arn, target["Id"]))
            if reason is not None and target["Id"] in self.targets:
                return FakeHealthStatus(
                    target["Id"],
                    self.targets[target["Id"]]["Port"],
                    self.health_check_port,
                    "unhealthy",
                    *reason,
                )
            return original_health(self, target, ec2_backend)

        setattr(update_service, _MARK, True)
        EC2ContainerServiceBackend.update_service = update_service  # type: ignore[method-assign]
        FakeTargetGroup.health_for = health_for  # type: ignore[method-assign]


def _start_deployment(service: Any) -> None:
    now = utcnow()
    for deployment in service.deployments:
        if deployment.get("status") == "PRIMARY":
            deployment["status"] = "ACTIVE"
    deployment_id = f"ecs-svc/{mock_random.randint(0, 32**12)}"
    service.deployments.insert(
        0,
        {
            **service.deployments[0],
            "id": deployment_id,
            "status": "PRIMARY",
            "taskDefinition": service.task_definition,
            "desiredCount": service.desired_count,
            "pendingCount": service.desired_count,
            "runningCount": 0,
            "failedTasks": 0,
            "rolloutState": "IN_PROGRESS",
            "rolloutStateReason": f"ECS deployment {deployment_id} in progress.",
            "createdAt": now,
            "updatedAt": now,
        },
    )


def tasks_ended(reason: str) -> None:
    """The tasks of every service ended without ECS (the sandbox's process did): take them out
    of their target groups and say so in each service's events; the scheduler then starts the
    desired count again, as ECS replaces stopped tasks."""
    for account_id, region, backend in each(ecs_backends):
        for service in list(backend.services.values()):
            if service.status != "ACTIVE":
                continue
            stopped = 0
            for group, _port in Scheduler._target_groups(account_id, region, service):
                for address in list(group.targets):
                    group.targets.pop(address, None)
                    _unhealthy.pop((group.arn, address), None)
                    stopped += 1
            stopped = max(stopped, int(service.running_count or 0))
            service.running_count = 0
            service.pending_count = service.desired_count
            for deployment in service.deployments:
                deployment.update(runningCount=0, pendingCount=deployment.get("desiredCount", 0))
            if stopped:
                message = f"(service {service.name}) has stopped {stopped} running tasks: {reason}."
                service.events.insert(
                    0, {"id": str(uuid.uuid4()), "createdAt": utcnow(), "message": message}
                )
                del service.events[100:]


@dataclass
class Task:
    id: str
    address: str
    task_definition: str
    deployment_id: str
    started: float
    healthy: bool
    logged_start: bool = False
    last_log: float = 0.0
    # Its container's variables as it started with them, secrets read then (`task_start`).
    environment: dict[str, str] = field(default_factory=dict)


@dataclass
class ServiceSim:
    tasks: list[Task] = field(default_factory=list)
    seen: dict[str, float] = field(default_factory=dict)
    last_metrics: float = 0.0
    last_cost: float | None = None
    last_refusal: float = float("-inf")  # when the quota last kept tasks from being placed
    last_launch_failure: float = float("-inf")  # when ECS last said it could not launch one


def _definition(backend: Any, arn: str) -> Any:
    """moto's task definition of `arn` (`…:task-definition/<family>:<revision>`), or None."""
    family, _, revision = arn.rsplit("/", 1)[-1].partition(":")
    return backend.task_definitions.get(family, {}).get(int(revision or 0))


def _cannot_run(
    account_id: str, region: str, service: Any, definition: Any
) -> list[task_stops.Stop]:
    """Why the deployment's tasks cannot start (no way out of their subnet to AWS:
    `task_network`; a secret the execution role may not read, an image it may not pull:
    `task_start`) or its containers run or stay healthy on their images
    (a shell or curl the image lacks: `images.missing_tool`); images the sandbox did not build
    are not judged."""
    stops = []
    unreachable = task_network.unreachable(account_id, region, service)
    if unreachable is not None:  # the agent's first call, for a secret or the registry
        stops.append(task_stops.failed_to_start(unreachable))
    refused = task_start.refusal(account_id, region, definition)
    if refused is not None:  # the agent stops the task before any container runs
        stops.append(task_stops.failed_to_start(refused))
    for container in getattr(definition, "container_definitions", None) or []:
        found = images.image(account_id, region, str(container.get("image") or ""))
        reason = images.missing_tool(found, container) if found is not None else None
        if reason is not None and reason.startswith("health check"):
            stops.append(task_stops.container_unhealthy())
        elif reason is not None:
            stops.append(task_stops.cannot_start(reason))
    return stops


def _tags(service: Any) -> dict[str, str]:
    return {str(tag.get("key")): str(tag.get("value")) for tag in service.tags or []}


class Scheduler:
    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self.services: dict[tuple[str, str, str], ServiceSim] = {}

    def tick(self, now: float) -> None:
        live = set()
        for account_id, region, backend in each(ecs_backends):
            for key, service in list(backend.services.items()):
                sim_key = (account_id, region, service.arn)
                live.add(sim_key)
                sim = self.services.setdefault(sim_key, ServiceSim())
                self._accrue(account_id, region, backend, service, sim, now)
                if service.status != "ACTIVE":
                    self._retire(account_id, region, backend, key, service, sim, now)
                else:
                    self._schedule(account_id, region, backend, service, sim, now)
        for gone in set(self.services) - live:
            del self.services[gone]

    # -- rollouts -------------------------------------------------------------------------

    def _schedule(
        self, account_id: str, region: str, backend: Any, service: Any, sim: ServiceSim, now: float
    ) -> None:
        if not service.deployments:
            return
        primary = service.deployments[0]
        knobs = self._simulator.knobs
        if primary.get("rolloutState") == "IN_PROGRESS":
            seen = sim.seen.setdefault(primary["id"], now)
            if now - seen < knobs.task_start_seconds:
                return
            definition = _definition(backend, str(primary.get("taskDefinition") or ""))
            new = [task for task in sim.tasks if task.deployment_id == primary["id"]]
            unassumable = task_start.unassumable(account_id, definition)
            if unassumable is not None and not new:
                self._failed_launch(service, sim, now, unassumable)
                return
            stops = _cannot_run(account_id, region, service, definition)
            groups = self._target_groups(account_id, region, service)
            unreached = [
                group
                for group, port in groups
                if target_reach.blocked(account_id, region, service, group, port)
            ]
            if not stops and unreached:  # the balancer's health checks time out
                stops = [task_stops.load_balancer_unhealthy(unreached[0].arn)]
            resource_tag = product().resource_tag
            resource = _tags(service).get(resource_tag) if resource_tag else None
            if not stops and self._simulator.is_failing(service.name, resource):
                stops = [
                    task_stops.load_balancer_unhealthy(groups[0][0].arn)
                    if groups
                    else task_stops.app_exited()
                ]
            failing = bool(stops)
            failed = [task for task in new if not task.healthy]
            if failed and not failing:  # their cause has gone: ECS's next tasks start
                self._deregister(account_id, region, service, failed)
                sim.tasks = [task for task in sim.tasks if task not in failed]
                new = []
            if not new:
                cpu = self._size(backend, str(primary.get("taskDefinition")))[0]
                if self._free(account_id, region, backend) < cpu * service.desired_count:
                    self._cannot_place(service, sim, now)
                    return
                variables = task_start.started_with(account_id, region, definition)
                new = [
                    self._task(primary, now, healthy=not failing, environment=variables)
                    for _ in range(service.desired_count)
                ]
                sim.tasks += new
                self._register(
                    account_id, region, service, new, target_reach.TIMEOUT if unreached else None
                )
                if failing:
                    task_stops.record(
                        account_id,
                        region,
                        backend,
                        service,
                        definition,
                        primary,
                        stops[0],
                        len(new),
                    )
            if failing:
                primary["failedTasks"] = len(new)
                primary["runningCount"] = 0
                primary["updatedAt"] = utcnow()
                if now - seen >= knobs.task_start_seconds + knobs.circuit_breaker_seconds:
                    self._trip(account_id, region, service, sim, primary)
                return
            old = [task for task in sim.tasks if task.deployment_id != primary["id"]]
            self._deregister(account_id, region, service, old)
            sim.tasks = new
            primary.update(
                runningCount=len(new),
                pendingCount=0,
                desiredCount=service.desired_count,
                rolloutState="COMPLETED",
                rolloutStateReason=f"ECS deployment {primary['id']} completed.",
                updatedAt=utcnow(),
            )
            service.deployments[:] = [primary]
            service.running_count = len(new)
            service.pending_count = 0
        elif primary.get("rolloutState") == "COMPLETED":
            self._scale(account_id, region, service, sim, primary, now)

    def _trip(
        self, account_id: str, region: str, service: Any, sim: ServiceSim, failed: dict[str, Any]
    ) -> None:
        """The circuit breaker: the rollout FAILED; roll back to the previous deployment."""
        doomed = [task for task in sim.tasks if task.deployment_id == failed["id"]]
        self._deregister(account_id, region, service, doomed)
        sim.tasks = [task for task in sim.tasks if task.deployment_id != failed["id"]]
        failed.update(
            rolloutState="FAILED",
            rolloutStateReason=CIRCUIT_BREAKER_REASON,
            runningCount=0,
            pendingCount=0,
            updatedAt=utcnow(),
        )
        previous = next(
            (item for item in service.deployments[1:] if item.get("taskDefinition")), None
        )
        if previous is None:
            return
        failed["status"] = "ACTIVE"
        previous["status"] = "PRIMARY"
        service.deployments[:] = [previous, failed]
        service.task_definition = previous["taskDefinition"]
        service.running_count = previous.get("runningCount", 0)

    def _scale(
        self,
        account_id: str,
        region: str,
        service: Any,
        sim: ServiceSim,
        primary: dict[str, Any],
        now: float,
    ) -> None:
        desired = service.desired_count
        running = [task for task in sim.tasks if task.deployment_id == primary["id"]]
        if len(running) < desired:
            backend = ecs_backends[account_id][region]
            cpu = self._size(backend, str(primary.get("taskDefinition")))[0]
            placed = min(desired - len(running), self._free(account_id, region, backend) // cpu)
            if placed < desired - len(running):
                self._cannot_place(service, sim, now)
            definition = _definition(backend, str(primary.get("taskDefinition") or ""))
            variables = task_start.started_with(account_id, region, definition) if placed else {}
            extra = [
                self._task(primary, now, healthy=True, environment=variables) for _ in range(placed)
            ]
            sim.tasks += extra
            self._register(account_id, region, service, extra)
            running += extra
        elif len(running) > desired:
            stopping = running[desired:]
            self._deregister(account_id, region, service, stopping)
            sim.tasks = [task for task in sim.tasks if task not in stopping]
            running = running[:desired]
        count = len(running)
        if primary.get("runningCount") != count or primary.get("desiredCount") != desired:
            primary.update(runningCount=count, desiredCount=desired, pendingCount=desired - count)
        service.running_count = count
        service.pending_count = desired - count

    def _retire(
        self,
        account_id: str,
        region: str,
        backend: Any,
        key: str,
        service: Any,
        sim: ServiceSim,
        now: float,
    ) -> None:
        """A deleted service's tasks stop and it disappears from DescribeServices (ECS keeps
        INACTIVE services describable for a while; the sandbox drops them on its next look)."""
        if sim.tasks:
            self._deregister(account_id, region, service, sim.tasks)
            sim.tasks = []
        if backend.services.get(key) is service:
            del backend.services[key]

    # -- Fargate's vCPU quota ----------------------------------------------------------------

    def _free(self, account_id: str, region: str, backend: Any) -> int:
        """CPU units (1,024 a vCPU) the account's running tasks (its services' and its one-off
        tasks, `task_runs`) leave of its Fargate quota."""
        used = self.services_cpu(account_id, region) + task_runs.cpu_in_use(account_id, region)
        return quotas().fargate_vcpus_per_region * 1024 - used

    def services_cpu(self, account_id: str, region: str) -> int:
        """CPU units the account's service tasks use in the region."""
        backend = ecs_backends[account_id][region]
        return sum(
            self._size(backend, task.task_definition)[0]
            for (account, where, _arn), sim in list(self.services.items())
            if account == account_id and where == region
            for task in sim.tasks
        )

    @staticmethod
    def _cannot_place(service: Any, sim: ServiceSim, now: float) -> None:
        """ECS's event for tasks the quota kept from being placed (repeated at its pace)."""
        if now - sim.last_refusal < _EVENT_REPEAT_SECONDS:
            return
        sim.last_refusal = now
        message = f"(service {service.name}) was unable to place a task. Reason: "
        message += VCPU_LIMIT_REASON
        service.events.insert(
            0, {"id": str(uuid.uuid4()), "createdAt": utcnow(), "message": message}
        )
        del service.events[100:]

    @staticmethod
    def _failed_launch(service: Any, sim: ServiceSim, now: float, error: str) -> None:
        """ECS's event for a task it could not launch (repeated at its pace)."""
        if now - sim.last_launch_failure < _EVENT_REPEAT_SECONDS:
            return
        sim.last_launch_failure = now
        message = f"(service {service.name}) failed to launch a task with (error {error})."
        service.events.insert(
            0, {"id": str(uuid.uuid4()), "createdAt": utcnow(), "message": message}
        )
        del service.events[100:]

    # -- tasks and targets -----------------------------------------------------------------

    @staticmethod
    def _task(
        deployment: dict[str, Any],
        now: float,
        *,
        healthy: bool,
        environment: dict[str, str] | None = None,
    ) -> Task:
        number = next(_addresses)
        return Task(
            id=uuid.uuid4().hex,
            address=f"10.0.{(number // 250) % 32}.{number % 250 + 4}",
            task_definition=str(deployment.get("taskDefinition")),
            deployment_id=str(deployment["id"]),
            started=now,
            healthy=healthy,
            environment=dict(environment or {}),
        )

    @staticmethod
    def _target_groups(account_id: str, region: str, service: Any) -> list[tuple[Any, int]]:
        backend = elbv2_backends[account_id][region]
        groups = []
        for balancer in service.load_balancers or []:
            arn = balancer.get("targetGroupArn")
            group = backend.target_groups.get(arn) if arn else None
            if group is not None:
                groups.append((group, int(balancer.get("containerPort") or group.port or 80)))
        return groups

    def _register(
        self,
        account_id: str,
        region: str,
        service: Any,
        tasks: list[Task],
        why: tuple[str, str] | None = None,
    ) -> None:
        """Register the tasks in the service's target groups; an unhealthy one fails its health
        checks for `why` (ELB's reason code and description; a 503 by default)."""
        for group, port in self._target_groups(account_id, region, service):
            for task in tasks:
                if not task.healthy:
                    _unhealthy[(group.arn, task.address)] = why or _BAD_STATUS
            group.register([{"Id": task.address, "Port": port} for task in tasks])

    def _deregister(self, account_id: str, region: str, service: Any, tasks: list[Task]) -> None:
        for group, _port in self._target_groups(account_id, region, service):
            for task in tasks:
                group.targets.pop(task.address, None)
                _unhealthy.pop((group.arn, task.address), None)

    # -- cost -----------------------------------------------------------------------------

    def _accrue(
        self, account_id: str, region: str, backend: Any, service: Any, sim: ServiceSim, now: float
    ) -> None:
        running = [task for task in sim.tasks if task.healthy]
        last, sim.last_cost = sim.last_cost, now
        if last is None or not running:
            return
        self._simulator.cost.accrue(
            account_id,
            region,
            _tags(service),
            [(self._size(backend, task.task_definition)) for task in running],
            seconds=now - last,
        )

    @staticmethod
    def _size(backend: Any, task_definition: str) -> tuple[int, int]:
        definition = _definition(backend, task_definition)
        if definition is None:
            return 256, 512
        return int(definition.cpu or 256), int(definition.memory or 512)
