"""EventBridge Scheduler's checks on CreateSchedule and UpdateSchedule, which moto skips.

moto stores any schedule: an expression Scheduler refuses, a group that does not exist (a 500
there), past the account's quota. Scheduler answers `ValidationException` for an expression or
time zone it cannot read (`schedule_expressions`), `ResourceNotFoundException` for a missing
group, and `ServiceQuotaExceededException` (402) past "Number of schedules"
(`quotas.schedules_per_region`,
https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html). What fires the
schedules is the simulator's (`simulator.schedules`).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.scheduler.exceptions import ScheduleGroupNotFound, ValidationException
from moto.scheduler.models import EventBridgeSchedulerBackend

from capstan_sandbox.cloud import schedule_expressions
from capstan_sandbox.cloud.quotas import quotas

_MARK = "_capstan_scheduler"
_install_lock = threading.Lock()
_clock_lock = threading.Lock()
_offset = timedelta()
# Where a schedule keeps the scheduler clock's time of its last create or update: its times
# count from there (`simulator.schedules`).
SINCE = "_capstan_since"


def now() -> datetime:
    """The scheduler's clock: UTC now, plus however far tests moved it (`advance`)."""
    return datetime.now(UTC) + _offset


def advance(seconds: float) -> None:
    """Move the scheduler's clock forward: what waiting `seconds` would do, without the wait."""
    global _offset
    with _clock_lock:
        _offset += timedelta(seconds=max(0.0, seconds))


class ServiceQuotaExceeded(JsonRESTError):
    code = 402

    def __init__(self, message: str) -> None:
        super().__init__("ServiceQuotaExceededException", message)


def check_expression(expression: str, timezone: str | None) -> None:
    try:
        schedule_expressions.parse(expression, timezone)
    except schedule_expressions.InvalidExpression as invalid:
        raise ValidationException(str(invalid)) from None


def _count(backend: EventBridgeSchedulerBackend) -> int:
    return sum(len(group.schedules) for group in backend.schedule_groups.values())


def install() -> None:
    with _install_lock:
        if getattr(EventBridgeSchedulerBackend.create_schedule, _MARK, False):
            return
        create = EventBridgeSchedulerBackend.create_schedule
        update = EventBridgeSchedulerBackend.update_schedule

        def checked_create(self: EventBridgeSchedulerBackend, **kwargs: Any) -> Any:
            group = kwargs.get("group_name") or "default"
            if group not in self.schedule_groups:
                raise ScheduleGroupNotFound(group)
            check_expression(
                kwargs["schedule_expression"], kwargs.get("schedule_expression_timezone")
            )
            limit = quotas().schedules_per_region
            if _count(self) >= limit:
                raise ServiceQuotaExceeded(
                    f"You have reached the maximum number of schedules ({limit}) in this Region."
                )
            schedule = create(self, **kwargs)
            setattr(schedule, SINCE, now())
            return schedule

        def checked_update(self: EventBridgeSchedulerBackend, **kwargs: Any) -> Any:
            check_expression(
                kwargs["schedule_expression"], kwargs.get("schedule_expression_timezone")
            )
            schedule = update(self, **kwargs)
            setattr(schedule, SINCE, now())
            return schedule

        delete_group = EventBridgeSchedulerBackend.delete_schedule_group

        def checked_delete_group(self: EventBridgeSchedulerBackend, name: str | None) -> None:
            # moto answers a 500 (KeyError) for a group that is not there; AWS answers
            # ResourceNotFoundException (API_DeleteScheduleGroup's errors).
            if (name or "default") not in self.schedule_groups:
                raise ScheduleGroupNotFound(name or "default")
            delete_group(self, name)

        setattr(checked_create, _MARK, True)
        backend: Any = EventBridgeSchedulerBackend  # moto's signatures name every parameter
        backend.create_schedule = checked_create
        backend.update_schedule = checked_update
        backend.delete_schedule_group = checked_delete_group
