"""Web servers, workers and static websites (and their previews) as a kind."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from capstan.apps import project_hooks as hooks
from capstan.apps import service as services
from capstan.apps.git_events import GIT_EVENTS
from capstan.apps.models import Deployment, Preview, Service, SiteResources
from capstan.apps.reconcile import TargetReconciler
from capstan.apps.router import static_websites_router, web_servers_router, workers_router
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    deadline = timedelta(seconds=runtime.settings.rollout_deadline_seconds)
    return [
        TargetReconciler(
            queue_kind,
            runtime.sessionmaker,
            runtime.cloud,
            runtime.git_host,
            runtime.settings,
            rollout_deadline=deadline,
            project_cache=runtime.project_cache,
        )
        for queue_kind in (services.QUEUE_KIND, services.PREVIEW_QUEUE_KIND)
    ]


KIND = ResourceKind(
    name="apps",
    routers=(web_servers_router, workers_router, static_websites_router),
    models=(Service, Preview, Deployment, SiteResources),
    reconcilers=_reconcilers,
    dependents={
        "web servers and workers": hooks.count_in_project,
        "static websites": hooks.count_sites_in_project,
    },
    delete_in_project=services.delete_in_project,
    # Web servers and workers run in the project's VPC (static websites need none).
    network_users=hooks.count_in_project,
    # Only web servers (and their previews) are served by the project's load balancer.
    load_balancer_users=hooks.count_web_servers_in_project,
    on_suffix_change=hooks.enqueue_project,
    on_network_ready=hooks.wake_waiting,
    on_network_failed=hooks.fail_waiting,
    on_load_balancer_failed=hooks.fail_waiting_web_servers,
    git_events=GIT_EVENTS,
    leftovers=(
        "ecr repository",
        "codebuild project",
        "log group",
        "ssm parameter",
        "task definition (active)",
        "ecs service",
        "target group",
        "listener rule",
        "scalable target",
        "scaling policy",
        "s3 bucket",
        "cloudfront distribution",
        "cloudfront function",
        "origin access control",
        "acm certificate",
    ),
)
