"""Cron jobs' driver against the sandbox: a schedule it makes fires within a minute of the
scheduler's clock and starts the service's task with the job's command, as the project's
scheduler role; a role that may not pass the task's roles fails the invocation visibly; an
expression Scheduler cannot read is refused."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from capstan import cron
from capstan.cloud.aws import names
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.cron_jobs import CronJobDriver, CronJobSpec
from capstan.cloud.deploy import Deployer
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan_sandbox.cloud.simulator import schedules, simulator
from tests.cloud.deploy_helpers import GitHost, build, new_id, task_spec, worker_target
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated

pytestmark = pytest.mark.usefixtures("fast_simulator")


def _ensure(driver: CronJobDriver, spec: CronJobSpec) -> str:
    """As the reconciler does: a new scheduler role Scheduler cannot use yet is tried again."""

    def attempt() -> str | None:
        try:
            return driver.ensure(spec)
        except RetryableCloudError:
            return None

    return wait_until(attempt, every=0.2, what="the schedule to be made")


def _task(customer: AwsSession, project_id: str, arn: str) -> dict[str, Any]:
    ecs = customer.client("ecs")
    found = ecs.describe_tasks(cluster=names.cluster_name(project_id), tasks=[arn])["tasks"]
    return dict(found[0])


def _fired(arn: str, since: datetime) -> schedules.Invocation | None:
    """The schedule's first invocation due after `since` (the scheduler's clock also moves
    with the wall clock, so an earlier minute may have fired too)."""
    invocations = list(simulator().schedules.invocations)
    return next((i for i in invocations if i.schedule_arn == arn and i.at > since), None)


def test_a_cron_job_runs_its_command_on_schedule_and_fails_visibly_without_pass_role(
    deployer: Deployer,
    access: AwsSession,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    target = worker_target(project_id)
    deployer.network.ensure_project_network(project_id)
    image = deployer.describe_build(build(deployer, target, source)).image_uri
    assert image
    definition = deployer.deploy(task_spec(target, image))
    driver = CronJobDriver(access, deployer.network)
    spec = CronJobSpec(
        cron_job_id=new_id("crn"),
        project_id=project_id,
        expression=cron.parse("* * * * *").eventbridge(),
        enabled=True,
        task_definition_arn=definition,
        command=["-m", "jobs.nightly"],
    )
    arn = _ensure(driver, spec)
    assert _ensure(driver, spec) == arn  # a second pass changes nothing
    iam_propagated()

    since = schedules.now()
    schedules.advance(60)
    fired = wait_until(lambda: _fired(arn, since), what="the schedule's first run")
    assert fired.error_code is None, fired.error_message
    task = customer.client("ecs").describe_tasks(
        cluster=names.cluster_name(project_id), tasks=list(fired.task_arns)
    )["tasks"][0]
    assert task["taskDefinitionArn"] == definition
    assert task["startedBy"] == "scheduler"
    assert task["overrides"]["containerOverrides"][0]["command"] == ["-m", "jobs.nightly"]
    # The task runs the job's command (after the release's entry point) and ends with its code.
    stopped = wait_until(
        lambda: (
            (t := _task(customer, project_id, fired.task_arns[0]))["lastStatus"] == "STOPPED" and t
        ),
        what="the job's task to end",
    )
    assert stopped["containers"][0]["exitCode"] == 0

    # Without PassRole of the task's roles, Scheduler cannot start the task: the invocation
    # fails, counted in AWS/Scheduler's TargetErrorCount, and no task starts.
    role = names.scheduler_role_name(project_id)
    iam = customer.client("iam")
    policy = iam.get_role_policy(RoleName=role, PolicyName="capstan")["PolicyDocument"]
    policy["Statement"] = [s for s in policy["Statement"] if s["Action"] != ["iam:PassRole"]]
    iam.put_role_policy(RoleName=role, PolicyName="capstan", PolicyDocument=json.dumps(policy))
    iam_propagated()
    since = schedules.now()
    schedules.advance(60)
    failed = wait_until(lambda: _fired(arn, since), what="the schedule's next run")
    assert failed.error_code == "AccessDeniedException"
    assert failed.error_message and "iam:PassRole" in failed.error_message
    assert not failed.task_arns

    # The next pass puts the role's policy back, and the job runs again.
    _ensure(driver, spec)
    iam_propagated()
    since = schedules.now()
    schedules.advance(60)
    again = wait_until(lambda: _fired(arn, since), what="the run after the repair")
    assert again.error_code is None, again.error_message

    driver.delete(project_id, spec.cron_job_id)
    driver.delete(project_id, spec.cron_job_id)  # already gone is fine
    driver.delete_project(project_id)
    scheduler = customer.client("scheduler")
    assert (
        scheduler.list_schedules(NamePrefix=names.schedule_name(spec.cron_job_id))["Schedules"]
        == []
    )
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_an_expression_scheduler_cannot_read_is_refused(
    deployer: Deployer, access: AwsSession
) -> None:
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id, load_balancer=False)
    driver = CronJobDriver(access, deployer.network)
    spec = CronJobSpec(
        cron_job_id=new_id("crn"),
        project_id=project_id,
        expression="cron(0 3 * * * *)",
        enabled=True,
        task_definition_arn="arn:aws:ecs:us-east-1:123456789012:task-definition/capstan-x:1",
        command=["true"],
    )
    with pytest.raises(TerminalCloudError) as refused:
        wait_until(lambda: _refusal(driver, spec), every=0.2)
        driver.ensure(spec)
    assert refused.value.code == "validation_exception"
    driver.delete_project(project_id)


def _refusal(driver: CronJobDriver, spec: CronJobSpec) -> bool:
    """True once the only refusal left is the terminal one (the role has propagated)."""
    try:
        driver.ensure(spec)
    except RetryableCloudError:
        return False
    except TerminalCloudError:
        return True
    return True
