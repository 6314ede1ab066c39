"""Cron jobs in a customer's AWS account: each an EventBridge Scheduler schedule in the
project's group that starts a task definition's task, with the job's command, in the project's
network, as the project's scheduler role.

`CronJobDriver` is coarse and idempotent like the other drivers: `ensure` makes what is missing
(the scheduler role, the group, the schedule) and updates the schedule to the spec; `delete`
removes the schedule; `delete_project` the group and the role once the project has no job left.
It raises only `RetryableCloudError` or `TerminalCloudError`. A new scheduler role is refused by
Scheduler until IAM has propagated it (`RetryableCloudError`, tried again on the next pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from capstan.cloud.aws import ecs_tasks, iam, scheduler
from capstan.cloud.aws.ecs_tasks import GroupTask
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.network import NetworkDriver


@dataclass(frozen=True)
class CronJobSpec:
    cron_job_id: str  # "crn_…"
    project_id: str
    expression: str  # EventBridge Scheduler's form, `capstan.cron.Schedule.eventbridge()`
    enabled: bool
    task_definition_arn: str  # the service's live release
    # The container's command override (ECS cannot override an entry point: the task
    # definition's, if it has one, runs this as its arguments).
    command: list[str]
    cpu: int | None = None
    memory: int | None = None


def task_group(cron_job_id: str) -> str:
    """The ECS task group of the tasks a job's schedule starts (how its history finds them)."""
    return f"capstan-cron:{cron_job_id}"


__all__ = ["CronJobDriver", "CronJobSpec", "GroupTask", "task_group"]


class CronJobDriver:
    def __init__(self, customer: AwsSession, network: NetworkDriver) -> None:
        self._customer = customer
        self._network = network

    def ensure(self, spec: CronJobSpec) -> str:
        """The job's schedule, made or brought up to `spec`: its ARN."""
        project = self._network.resources(spec.project_id)
        role = iam.ensure_scheduler_role(self._customer, spec.project_id)
        session = self._customer
        cluster = (
            f"arn:{session.partition()}:ecs:{session.endpoint.region}:{session.account_id}:"
            f"cluster/{project.cluster}"
        )
        return scheduler.ensure_schedule(
            session,
            scheduler.ScheduledTask(
                project_id=spec.project_id,
                resource_id=spec.cron_job_id,
                expression=spec.expression,
                enabled=spec.enabled,
                cluster_arn=cluster,
                task_definition_arn=spec.task_definition_arn,
                command=spec.command,
                subnets=list(project.network.subnet_ids),
                security_groups=[project.network.services_group_id],
                role_arn=role,
                cpu=spec.cpu,
                memory=spec.memory,
                group=task_group(spec.cron_job_id),
            ),
        )

    def fired(self, project_id: str, cron_job_id: str, task_definition_arn: str) -> list[GroupTask]:
        """The tasks the job's schedule started that ECS still knows, oldest first."""
        cluster = self._network.resources(project_id).cluster
        family = task_definition_arn.rsplit("/", 1)[-1].split(":", 1)[0]
        return ecs_tasks.tasks_in_group(self._customer, cluster, family, task_group(cron_job_id))

    def stop(self, project_id: str, task_arn: str, reason: str) -> None:
        cluster = self._network.resources(project_id).cluster
        ecs_tasks.stop_task(self._customer, cluster, task_arn, reason)

    def delete(self, project_id: str, cron_job_id: str) -> None:
        scheduler.delete_schedule(self._customer, project_id, cron_job_id)

    def delete_project(self, project_id: str) -> None:
        """The project's schedule group (with any schedule left in it) and scheduler role."""
        scheduler.delete_group(self._customer, project_id)
        iam.delete_scheduler_role(self._customer, project_id)
