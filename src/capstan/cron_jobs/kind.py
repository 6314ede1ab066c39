"""Cron jobs as a kind: their table, routes and reconciler; they keep their project (and the
service they run in) from being deleted, and go with a project deleted with its resources."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.cron_jobs import service
from capstan.cron_jobs.models import CronJob
from capstan.cron_jobs.reconcile import CloudCronJobs, CronJobReconciler
from capstan.cron_jobs.router import router
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    drivers = CloudCronJobs(runtime.cloud, runtime.settings)
    look = runtime.settings.cron_look_seconds
    return [CronJobReconciler(runtime.sessionmaker, drivers, look_seconds=look)]


KIND = ResourceKind(
    name="cron_jobs",
    routers=(router,),
    models=(CronJob,),
    reconcilers=_reconcilers,
    dependents={"cron jobs": service.count_in_project},
    delete_in_project=service.delete_in_project,
    service_users=service.users_of_service,
)
