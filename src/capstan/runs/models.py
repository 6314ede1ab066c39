"""Runs: one command run once as a task of a service's release (docs/decisions/0125).

A run belongs to the web server or worker whose release it runs (`service_id`), whoever started
it: a person (`manual`), a deployment's release command (`release`), or, later, a cron job
(`schedule`, with a column of its own for the job): the start, the reconciler and the logs are
the same for all. `deployment_id` is the release it ran (kept as an id: the run outlives the
deployment's row no longer than its service's, with which it is deleted).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column

PENDING, RUNNING, SUCCEEDED, FAILED = "pending", "running", "succeeded", "failed"
ENDED = (SUCCEEDED, FAILED)
MANUAL, RELEASE, SCHEDULE = "manual", "release", "schedule"
QUEUE_KIND = "run"


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_service", "service_id", "created_at"),
        Index("ix_runs_cron_job", "cron_job_id", "created_at"),
    )

    id: Mapped[str] = id_column("run")
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id", ondelete="CASCADE"))
    # A preview's release (its release command): the run is the preview's, in its log group.
    preview_id: Mapped[str | None] = mapped_column(String(40))
    deployment_id: Mapped[str] = mapped_column(String(40))
    # A cron job's run (started by its schedule or by "run now"): the job's history.
    cron_job_id: Mapped[str | None] = mapped_column(ForeignKey("cron_jobs.id", ondelete="SET NULL"))
    command: Mapped[str] = mapped_column(Text)
    cpu: Mapped[int] = mapped_column(Integer)
    memory: Mapped[int] = mapped_column(Integer)
    trigger: Mapped[str] = mapped_column(String(20))  # manual | release | schedule
    status: Mapped[str] = mapped_column(String(20), default=PENDING)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    # The ECS task, once started (its stream holds the run's output).
    task_arn: Mapped[str | None] = mapped_column(String(512))
    # A stop was asked for: the reconciler stops the task, and the run ends `failed`.
    stop_requested_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
