"""EventBridge Scheduler, simulated: ENABLED schedules invoke their targets when their expression
is due, by the sandbox's scheduler clock (`scheduler.now`; tests move it with `advance`, nothing
sleeps).

A schedule is first due at its expression's next time after it was made or last changed (on
that clock; one restored from a saved state, after the simulator first sees it, when that time
passed more than a minute ago); it fires once per time, never catching up on times a stopped
sandbox missed (as Scheduler does not replay them). An `at(...)` schedule fires once, and is
deleted after it when its `ActionAfterCompletion` is DELETE. `StartDate` and `EndDate` bound
the times.

The one target the sandbox invokes is ECS's templated `RunTask` (`Target.Arn` a cluster,
`EcsParameters`), and it does so *as the schedule's role* (`Target.RoleArn`), as Scheduler does
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role):
the role must trust `scheduler.amazonaws.com`, allow `ecs:RunTask` on the task definition and
`iam:PassRole` of the task's roles to `ecs-tasks.amazonaws.com`. The task then starts as any
RunTask does in the sandbox; `Input` is the task's `overrides` (its container overrides).

What a caller sees of an invocation is what AWS publishes
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/monitoring-cloudwatch.html): CloudWatch
`AWS/Scheduler` metrics `InvocationAttemptCount` and, on a failure, `TargetErrorCount`, without
a dimension and by `ScheduleGroup`; and a failure's message in the schedule's dead-letter queue
(`Target.DeadLetterConfig.Arn`, an SQS queue) with the attributes `ERROR_CODE`,
`ERROR_MESSAGE`, `EXECUTION_ID`, `RETRY_ATTEMPTS`
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html). A
failure is not retried here (AWS retries only errors it deems retryable; a refused permission is
not one until someone changes the role).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.core.utils import utcnow
from moto.ecs.models import ecs_backends
from moto.scheduler.models import scheduler_backends

from capstan_sandbox.cloud import role_checks, schedule_expressions, scheduler
from capstan_sandbox.cloud.simulator.backends import each

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

log = logging.getLogger(__name__)
SERVICE = "scheduler.amazonaws.com"
# Scheduler invokes a target within the minute it is due; a time missed by more is not replayed.
_LATE = timedelta(minutes=1)
now = scheduler.now
advance = scheduler.advance


@dataclass
class _Watch:
    version: tuple[Any, ...]  # what the schedule's times depend on, as last seen
    due: datetime | None
    origin: datetime  # a rate's first period counts from here


@dataclass(frozen=True)
class Invocation:
    """One attempt to invoke a schedule's target, as the sandbox recorded it."""

    schedule_arn: str
    at: datetime
    error_code: str | None = None
    error_message: str | None = None
    task_arns: tuple[str, ...] = ()


class ScheduleSim:
    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self._watched: dict[str, _Watch] = {}
        # The latest invocations, for a test or the dev server to look at.
        self.invocations: deque[Invocation] = deque(maxlen=1000)

    def tick(self, _now: float) -> None:
        moment = now()
        alive: set[str] = set()
        for account_id, region, backend in each(scheduler_backends):
            for group in list(backend.schedule_groups.values()):
                for schedule in list(group.schedules.values()):
                    alive.add(schedule.arn)
                    self._look(account_id, region, backend, group, schedule, moment)
        for arn in set(self._watched) - alive:
            del self._watched[arn]

    def _look(
        self,
        account_id: str,
        region: str,
        backend: Any,
        group: Any,
        schedule: Any,
        moment: datetime,
    ) -> None:
        version = (
            schedule.schedule_expression,
            schedule.schedule_expression_timezone,
            schedule.state,
            schedule.start_date,
            schedule.last_modified_date,
        )
        watch = self._watched.get(schedule.arn)
        if watch is None or watch.version != version:
            since = getattr(schedule, scheduler.SINCE, None) or moment
            watch = _Watch(version, None, since)
            watch.due = _next(schedule, since, since)
            if watch.due is not None and watch.due < moment - _LATE:
                # Made long before this process saw it (a restored state): no replay.
                watch.due = _next(schedule, moment, since)
            self._watched[schedule.arn] = watch
        if schedule.state != "ENABLED" or watch.due is None or watch.due > moment:
            return
        fired_at = watch.due
        self.invocations.append(self._invoke(account_id, region, schedule, fired_at))
        watch.due = _next(schedule, max(moment, fired_at), watch.origin, after_fire=True)
        if watch.due is None and schedule.action_after_completion == "DELETE":
            group.schedules.pop(schedule.name, None)

    def _invoke(self, account_id: str, region: str, schedule: Any, at: datetime) -> Invocation:
        target = schedule.target or {}
        execution = str(uuid.uuid4())
        try:
            tasks = _run_task(account_id, region, schedule.arn, target)
            invocation = Invocation(schedule.arn, at, task_arns=tasks)
        except _TargetError as error:
            invocation = Invocation(schedule.arn, at, error.code, error.message)
            _dead_letter(account_id, region, schedule, error, execution)
        _metrics(account_id, region, schedule.group_name, invocation)
        return invocation


def _next(
    schedule: Any, moment: datetime, origin: datetime, *, after_fire: bool = False
) -> datetime | None:
    try:
        expression = schedule_expressions.parse(
            schedule.schedule_expression, schedule.schedule_expression_timezone
        )
    except schedule_expressions.InvalidExpression:
        return None  # stored before the sandbox checked expressions: never due
    start = _stamp(schedule.start_date)
    end = _stamp(schedule.end_date)
    after = max(moment, start - timedelta(microseconds=1)) if start else moment
    due: datetime | None
    if isinstance(expression, schedule_expressions.At):
        due = None if after_fire or expression.when < origin else expression.when
    elif isinstance(expression, schedule_expressions.Rate):
        due = expression.next_after(after, start or origin)
    else:
        due = expression.next_after(after)
    if due is not None and end is not None and due > end:
        return None
    return due


def _stamp(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class _TargetError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _run_task(
    account_id: str, region: str, schedule_arn: str, target: dict[str, Any]
) -> tuple[str, ...]:
    arn = str(target.get("Arn") or "")
    parameters = target.get("EcsParameters")
    if ":ecs:" not in arn or ":cluster/" not in arn or not parameters:
        raise _TargetError("ValidationException", "The sandbox invokes only ECS RunTask targets.")
    role = str(target.get("RoleArn") or "")
    # Scheduler names the account and the schedule it assumes the role for
    # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/cross-service-confused-deputy-prevention.html).
    source = {"aws:SourceAccount": account_id, "aws:SourceArn": schedule_arn}
    if role_checks.unassumable(account_id, role, SERVICE, source) or not _role_exists(
        account_id, role
    ):
        raise _TargetError(
            "AccessDeniedException",
            f"EventBridge Scheduler could not assume the role {role}: it does not exist or does "
            f"not trust {SERVICE}.",
        )
    backend = ecs_backends[account_id][region]
    definition_arn = str(parameters.get("TaskDefinitionArn") or "")
    checks = role_checks.RoleRequests(account_id, role)
    session = "scheduler"
    # RunTask sends the cluster it starts the task in (`ecs:cluster`).
    refused = checks.refusal(
        "ecs:RunTask", definition_arn, "task-definition", session, {"ecs:cluster": [arn]}
    )
    definition = _definition(backend, definition_arn)
    if refused is None and definition is not None:
        roles = (
            getattr(definition, name, None) for name in ("task_role_arn", "execution_role_arn")
        )
        for passed in filter(None, roles):
            denied = checks.denial(
                "iam:PassRole", passed, "role", {"iam:passedtoservice": ["ecs-tasks.amazonaws.com"]}
            )
            if denied is not None:
                context = {"iam:passedtoservice": ["ecs-tasks.amazonaws.com"]}
                refused = checks.refusal("iam:PassRole", passed, "role", session, context)
                break
    if refused is not None:
        raise _TargetError("AccessDeniedException", refused)
    if definition is None:
        raise _TargetError(
            "InvalidParameterException", f"TaskDefinition not found: {definition_arn}."
        )
    overrides = json.loads(target["Input"]) if target.get("Input") else None
    network = parameters.get("NetworkConfiguration") or {}
    vpc = network.get("awsvpcConfiguration") or {}
    try:
        tasks = backend.run_task(
            arn,
            definition_arn,
            int(parameters.get("TaskCount") or 1),
            overrides,
            "scheduler",
            _lower_tags(parameters.get("Tags")),
            parameters.get("LaunchType"),
            {
                "awsvpcConfiguration": {
                    "subnets": vpc.get("Subnets") or [],
                    "securityGroups": vpc.get("SecurityGroups") or [],
                    "assignPublicIp": vpc.get("AssignPublicIp") or "DISABLED",
                }
            }
            if vpc
            else None,
            parameters.get("Group"),
            parameters.get("PlatformVersion"),
        )
    except Exception as error:  # ECS refused it: a target error, as AWS records it
        code = getattr(error, "error_type", None) or type(error).__name__
        raise _TargetError(str(code), str(getattr(error, "message", "") or error)) from None
    return tuple(str(task.task_arn) for task in tasks)


def _lower_tags(tags: Any) -> list[dict[str, str]] | None:
    if not tags:
        return None
    found: list[dict[str, str]] = []
    for item in tags:  # Scheduler's EcsParameters.Tags: a list of {key: value} maps
        for key, value in dict(item).items():
            found.append({"key": str(key), "value": str(value)})
    return found


def _definition(backend: Any, arn: str) -> Any:
    family, _, revision = arn.rsplit("/", 1)[-1].partition(":")
    if not revision.isdigit():
        return None
    return backend.task_definitions.get(family, {}).get(int(revision))


def _role_exists(account_id: str, role_arn: str) -> bool:
    return role_checks.RoleRequests(account_id, role_arn).exists


def _metrics(account_id: str, region: str, group: str, invocation: Invocation) -> None:
    stamp = utcnow()  # moto compares naive UTC datetimes
    data: list[dict[str, Any]] = []
    names = ["InvocationAttemptCount"] + (["TargetErrorCount"] if invocation.error_code else [])
    for name in names:
        for dimensions in ([], [{"Name": "ScheduleGroup", "Value": group}]):
            data.append(
                {
                    "MetricName": name,
                    "Dimensions": dimensions,
                    "Value": 1.0,
                    "Unit": "Count",
                    "Timestamp": stamp,
                }
            )
    cloudwatch_backends[account_id][region].put_metric_data("AWS/Scheduler", data)


def _dead_letter(
    account_id: str, region: str, schedule: Any, error: _TargetError, execution: str
) -> None:
    queue_arn = str(((schedule.target or {}).get("DeadLetterConfig") or {}).get("Arn") or "")
    if ":sqs:" not in queue_arn:
        return
    from moto.sqs.models import sqs_backends

    _, _, _, queue_region, queue_account, name = queue_arn.split(":", 5)
    attributes = {
        "ERROR_CODE": error.code,
        "ERROR_MESSAGE": error.message,
        "EXECUTION_ID": execution,
        "RETRY_ATTEMPTS": "0",
        "SCHEDULE_ARN": schedule.arn,
        "TARGET_ARN": str((schedule.target or {}).get("Arn") or ""),
    }
    try:
        sqs_backends[queue_account][queue_region].send_message(
            name,
            json.dumps({"scheduleArn": schedule.arn}),
            message_attributes={
                key: {"DataType": "String", "StringValue": value}
                for key, value in attributes.items()
            },
        )
    except Exception:  # a queue that is gone: InvocationsFailedToBeSentToDeadLetterCount in AWS
        log.info("schedule %s: its dead-letter queue %s is gone", schedule.arn, queue_arn)
