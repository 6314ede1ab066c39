"""Cron jobs: a command run on a schedule in a web server's or worker's live release
(docs/decisions/0130).

The job's runs are rows of `runs` with `cron_job_id` set (its history). `deployment_id` is the
release its schedule starts now (the reconciler recreates the schedule when the service's live
release changes). A deleted job keeps its row (`deleted_at`) until its schedule is gone.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow

QUEUE_KIND = "cron_job"
# `status`: pending (a change not yet applied to the schedule), waiting for a live release,
# scheduled, disabled, failed (the cloud refused it), deleting.
PENDING, WAITING, SCHEDULED, DISABLED, FAILED, DELETING = (
    "pending",
    "waiting",
    "scheduled",
    "disabled",
    "failed",
    "deleting",
)


class CronJob(Base):
    __tablename__ = "cron_jobs"

    id: Mapped[str] = id_column("crn")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(63))
    schedule: Mapped[str] = mapped_column(String(200))
    command: Mapped[str] = mapped_column(Text)
    cpu: Mapped[int | None] = mapped_column(Integer)
    memory: Mapped[int | None] = mapped_column(Integer)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(20), default=PENDING)
    error: Mapped[str | None] = mapped_column(Text)
    # The release the schedule starts (null until it exists).
    deployment_id: Mapped[str | None] = mapped_column(String(40))
    schedule_arn: Mapped[str | None] = mapped_column(String(512))
    # What the schedule was last made from (release, schedule, command, size): a pass that finds
    # the same leaves the schedule alone.
    applied: Mapped[str | None] = mapped_column(Text)
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
