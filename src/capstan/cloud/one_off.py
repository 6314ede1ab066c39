"""One-off runs of a target's release (`OneOffDriver`, a `Deployer`'s `runs`): a task of the
release's task definition with a command of its own, in the project's network and cluster; where
it stands; stopping it; its output, from the task's own log stream in the target's runtime log
group (`aws/ecs_tasks.py`). Coarse and idempotent like the rest of the driver: a start retried
with the same run id starts no second task."""

from __future__ import annotations

from dataclasses import dataclass

from capstan.cloud.aws import ecs, ecs_tasks, logs, names
from capstan.cloud.aws.ecs_tasks import TaskState
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud.fargate import memory_problem
from capstan.cloud.network import NetworkDriver
from capstan.cloud.target import LogLine, Target


@dataclass(frozen=True)
class RunSpec:
    target: Target
    run_id: str  # "run_…": the task's clientToken and startedBy
    task_definition_arn: str  # the release's
    command: str  # run under `sh -c`
    cpu: int
    memory: int
    start_command: str | None  # the release's (a worker's), which set its entry point


def command_override(start_command: str | None, command: str) -> list[str] | None:
    """The container command that runs `command` under `sh -c` in a release whose start command
    is `start_command` (its entry point: `ecs.start_command`); None when that entry point is a
    program of its own (a start command that needs no shell), which a run cannot replace: ECS's
    container overrides set a command, never an entry point
    (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_ContainerOverride.html)."""
    if start_command is None:
        return ["sh", "-c", command]
    entry_point, _ = ecs.start_command(start_command)
    if entry_point == ["sh", "-c"]:
        return [command]
    return None


__all__ = ["OneOffDriver", "RunSpec", "TaskState", "command_override"]


class OneOffDriver:
    def __init__(self, customer: AwsSession, network: NetworkDriver) -> None:
        self._customer = customer
        self._network = network

    def start(self, spec: RunSpec) -> str:
        """Start the run's task; its ARN."""
        problem = memory_problem(spec.cpu, spec.memory)
        if problem is not None:
            raise TerminalCloudError("invalid_task_size", problem)
        override = command_override(spec.start_command, spec.command)
        if override is None:
            raise TerminalCloudError(
                "entry_point_not_a_shell", "The release's entry point is not a shell."
            )
        project = self._network.resources(spec.target.project_id)
        return ecs_tasks.run_task(
            self._customer,
            cluster=project.cluster,
            task_definition_arn=spec.task_definition_arn,
            command=override,
            cpu=spec.cpu,
            memory=spec.memory,
            subnet_ids=project.network.subnet_ids,
            security_group_id=project.network.services_group_id,
            token=spec.run_id,
        )

    def describe(self, target: Target, task_arn: str) -> TaskState | None:
        return ecs_tasks.describe_task(self._customer, self._cluster(target, task_arn), task_arn)

    def stop(self, target: Target, task_arn: str, reason: str) -> None:
        ecs_tasks.stop_task(self._customer, self._cluster(target, task_arn), task_arn, reason)

    def log(self, target: Target, task_arn: str) -> list[LogLine]:
        """Every line the run's task wrote, oldest first."""
        events = logs.stream_events(
            self._customer,
            names.runtime_log_group(target.resource_id),
            ecs_tasks.run_stream(task_arn),
        )
        return [LogLine(event.timestamp, event.message) for event in events]

    def _cluster(self, target: Target, task_arn: str) -> str:
        # A task's ARN names its cluster (`task/<cluster>/<id>`): a run started before the
        # project moved to a new network is in the old one.
        parts = task_arn.rsplit(":", 1)[-1].split("/")
        if len(parts) == 3:
            return parts[1]
        return names.cluster_name(target.project_id, self._network.generation)
