"""ECS `RunTask` and `StopTask` of one-off Fargate tasks, as ECS runs them: the task is
PROVISIONING, then RUNNING while its container's command runs, then STOPPED with the container's
exit code.

moto answers RunTask with a task that is RUNNING at once and moves one state on at each
DescribeTasks, whatever its container does. `install()` makes moto's tasks of RunTask this
module's: their state is the simulator's (`OneOffs.tick`), which, `task_start_seconds` after the
call, starts the container as ECS would (or stops the task as ECS does when its roles cannot be
assumed, its subnet has no way out, or its execution role may not read a secret, write its log
stream or pull its image: `task_start`, `task_network`), then plays its command
(`task_shell`: nothing runs on the host), writing its output as the `awslogs` driver does, line
by line as the simulator's time passes, to the task definition's log group under the task's own
stream `<prefix>/<container>/<task-id>`
(https://docs.aws.amazon.com/AmazonECS/latest/developerguide/using_awslogs.html). When the
command ends, the task is STOPPED with `stopCode` `EssentialContainerExited`, `stoppedReason`
"Essential container in task exited" and the container's `exitCode`.

`StopTask` sends the container SIGTERM, then SIGKILL once its stop timeout has passed
(https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_StopTask.html); a shell that is
the container's PID 1 ignores SIGTERM, so the container is killed: exit code 137 (128 + 9), stop
code `UserInitiated`, the reason the caller gave. The sandbox does not wait the timeout.

RunTask is checked as ECS checks it: its network's subnets and security groups in one VPC
(`vpc_checks`), and Fargate's vCPU quota with the account's service tasks (`cpu_in_use`): a task
past it is not placed, and RunTask answers the refusal among its `failures`. Its authorization
(the task definition's roles passed, `iam:PassRole`) is in `resources`/`resolvers_compute`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.ecs.models import EC2ContainerServiceBackend
from moto.ecs.responses import EC2ContainerServiceResponse

from capstan_sandbox.cloud import vpc_checks
from capstan_sandbox.cloud.moto_threads import ECS_LOCK
from capstan_sandbox.cloud.quotas import quotas
from capstan_sandbox.cloud.simulator import logs as sim_logs
from capstan_sandbox.cloud.simulator import task_network, task_shell, task_start, task_stops
from capstan_sandbox.cloud.simulator.parts import Simulator

_MARK = "_capstan_one_off"
_install_lock = threading.Lock()
_lock = threading.Lock()
# Exit code of a container killed by SIGKILL (128 + 9).
KILLED = 137
# ECS's reason for a Fargate task past the account's vCPU quota.
VCPU_LIMIT = (
    "You've reached the limit on the number of vCPUs you can run concurrently. For more "
    "information, see the Troubleshooting section of the Amazon ECS Developer Guide."
)


@dataclass
class OneOff:
    account_id: str
    region: str
    task: Any  # moto's Task
    definition: Any
    argv: list[str]
    cpu: int
    created: float
    started: float | None = None
    # Where the command's time is: its steps up to here have been played.
    cursor: float = 0.0
    steps: Iterator[task_shell.Step] | None = None
    stop_reason: str | None = None
    done: bool = False
    lines: list[str] = field(default_factory=list)


# task ARN -> its one-off
_runs: dict[str, OneOff] = {}
# CPU units the account's service tasks use (set by the ECS scheduler's simulator at install).
_service_cpu: list[Any] = []


def cpu_in_use(account_id: str, region: str) -> int:
    """CPU units (1,024 a vCPU) of the account's one-off tasks that are not stopped."""
    with _lock:
        return sum(
            run.cpu
            for run in _runs.values()
            if run.account_id == account_id and run.region == region and not run.done
        )


def _argv(definition: Any, overrides: dict[str, Any] | None) -> list[str]:
    """The first container's entry point and command, its override's command in place of the
    definition's (an override sets no entry point)."""
    container = (getattr(definition, "container_definitions", None) or [{}])[0]
    command = list(container.get("command") or [])
    for override in (overrides or {}).get("containerOverrides") or []:
        if override.get("name") in (None, container.get("name")) and "command" in override:
            command = list(override.get("command") or [])
    return list(container.get("entryPoint") or []) + command


def _cpu(definition: Any, overrides: dict[str, Any] | None) -> int:
    return int((overrides or {}).get("cpu") or getattr(definition, "cpu", None) or 256)


def install(simulator: Simulator, services_cpu: Any) -> None:
    """Make moto's RunTask and StopTask of Fargate tasks the simulator's; `services_cpu(account,
    region)` answers the CPU units the account's service tasks use."""
    with _install_lock:
        _service_cpu[:] = [services_cpu]
        if getattr(EC2ContainerServiceBackend.run_task, _MARK, False):
            return
        original_run = EC2ContainerServiceBackend.run_task
        original_stop = EC2ContainerServiceBackend.stop_task

        def run_task(self: EC2ContainerServiceBackend, *args: Any, **kwargs: Any) -> Any:
            names = (
                "cluster_str",
                "task_definition_str",
                "count",
                "overrides",
                "started_by",
                "tags",
                "launch_type",
                "networking_configuration",
            )
            given = {**dict(zip(names, args, strict=False)), **kwargs}
            network = given.get("networking_configuration")
            vpc_checks.check_service(self, network, None)
            definition = self.describe_task_definition(given["task_definition_str"])
            overrides = given.get("overrides")
            cpu = _cpu(definition, overrides) * int(given.get("count") or 1)
            used = cpu_in_use(self.account_id, self.region_name)
            used += _service_cpu[0](self.account_id, self.region_name) if _service_cpu else 0
            if used + cpu > quotas().fargate_vcpus_per_region * 1024:
                raise _Refused(VCPU_LIMIT)
            tasks = original_run(self, *args, **kwargs)
            now = time.monotonic()
            with _lock:
                for task in tasks:
                    # Its state is the simulator's, not moto's describe counter.
                    task._transitions = [("PROVISIONING", "PROVISIONING")]
                    task.status = "PROVISIONING"
                    for container in task.containers:
                        container.last_status = "PENDING"
                        setattr(container, "exitCode", None)  # noqa: B010 (not run yet)
                    _runs[task.task_arn] = OneOff(
                        self.account_id,
                        self.region_name,
                        task,
                        definition,
                        _argv(definition, overrides),
                        _cpu(definition, overrides),
                        created=now,
                    )
            return tasks

        def stop_task(
            self: EC2ContainerServiceBackend, cluster_str: str, task_str: str, reason: str
        ) -> Any:
            with _lock:
                run = next(
                    (
                        found
                        for arn, found in _runs.items()
                        if arn == task_str or arn.rsplit("/", 1)[-1] == task_str
                    ),
                    None,
                )
                if run is None or run.account_id != self.account_id:
                    run = None
                elif not run.done:
                    # The task stops as its container is killed (the simulator's next look).
                    run.task.desired_status = "STOPPED"
                    run.stop_reason = reason or "Task stopped by user"
            if run is None:
                return original_stop(self, cluster_str, task_str, reason)
            return run.task

        original_requirements = EC2ContainerServiceBackend._calculate_task_resource_requirements

        def requirements(definition: Any) -> Any:
            # moto sums each container's memory, which a Fargate task definition may give only
            # at the task level (as Capstan's do): its sum then fails, where ECS places the task.
            containers = [dict(c) for c in definition.container_definitions]
            memory = int(getattr(definition, "memory", None) or 0)
            fallback = {"memory": memory // max(len(containers), 1)}
            sized = SimpleNamespace(
                container_definitions=[
                    c if c.get("memory") or c.get("memoryReservation") else {**c, **fallback}
                    for c in containers
                ]
            )
            return original_requirements(sized)  # type: ignore[arg-type]

        original_response = EC2ContainerServiceResponse.run_task

        def run_task_response(self: EC2ContainerServiceResponse) -> Any:
            try:
                return original_response(self)
            except _Refused as refused:
                return ActionResult({"tasks": [], "failures": [{"reason": str(refused)}]})

        setattr(run_task, _MARK, True)
        EC2ContainerServiceBackend.run_task = run_task  # type: ignore[method-assign]
        EC2ContainerServiceResponse.run_task = run_task_response  # type: ignore[method-assign]
        EC2ContainerServiceBackend._calculate_task_resource_requirements = staticmethod(  # type: ignore[method-assign,assignment]
            requirements
        )
        EC2ContainerServiceBackend.stop_task = stop_task  # type: ignore[method-assign]


class _Refused(Exception):
    """A task RunTask does not place (answered among its `failures` by `responses`)."""


class OneOffs:
    """The simulator's part that moves one-off tasks along (`tick`)."""

    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator

    def tick(self, now: float) -> None:
        with _lock:
            runs = [run for run in _runs.values() if not run.done]
        for run in runs:
            self._move(run, now)
        with _lock:  # stopped tasks stay describable through moto's store; forget the oldest
            finished = [arn for arn, run in _runs.items() if run.done]
            for arn in finished[:-200]:
                del _runs[arn]

    def _move(self, run: OneOff, now: float) -> None:
        if run.started is None:
            if run.stop_reason is not None:
                self._stop(run, task_stops.Stop("UserInitiated", run.stop_reason), [])
                return
            if now - run.created < self._simulator.knobs.task_start_seconds:
                return
            refusal = self._refusal(run)
            if refusal is not None:
                self._stop(run, task_stops.failed_to_start(refusal), [])
                return
            run.started, run.cursor = now, now
            run.steps = task_shell.steps(run.argv)
            with ECS_LOCK:
                run.task.status = "RUNNING"
                setattr(run.task, "started_at", utcnow())  # noqa: B010
                for container in run.task.containers:
                    container.last_status = "RUNNING"
        if run.stop_reason is not None:
            self._stop(run, task_stops.Stop("UserInitiated", run.stop_reason, KILLED), [])
            return
        assert run.steps is not None
        if run.cursor > now:  # still in a `sleep`
            return
        lines: list[str] = []
        for step in run.steps:
            if isinstance(step, task_shell.Output):
                lines.append(step.line)
            elif isinstance(step, task_shell.Sleep):
                run.cursor += step.seconds
                if run.cursor > now:
                    break
            else:
                self._stop(run, task_stops.app_exited(step.code), lines)
                return
        self._write(run, lines)

    def _refusal(self, run: OneOff) -> str | None:
        network = SimpleNamespace(network_configuration=run.task.network_configuration)
        return (
            task_start.unassumable(run.account_id, run.definition)
            or task_network.unreachable(run.account_id, run.region, network)
            or task_start.refusal(run.account_id, run.region, run.definition)
        )

    def _stop(self, run: OneOff, stop: task_stops.Stop, lines: list[str]) -> None:
        self._write(run, lines)
        with ECS_LOCK:
            task_stops.stopped(run.task, stop)
            task_stops.release_interfaces(run.account_id, run.region, run.task)
        with _lock:
            run.done = True

    @staticmethod
    def _write(run: OneOff, lines: list[str]) -> None:
        if not lines:
            return
        container = (getattr(run.definition, "container_definitions", None) or [{}])[0]
        configuration = container.get("logConfiguration") or {}
        if configuration.get("logDriver") != "awslogs":
            return
        options = configuration.get("options") or {}
        group = str(options.get("awslogs-group") or "")
        prefix = str(options.get("awslogs-stream-prefix") or "ecs")
        stream = f"{prefix}/{container.get('name') or 'app'}/{run.task.id}"
        sim_logs.write(run.account_id, run.region, group, stream, lines)
