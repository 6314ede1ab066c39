"""A deployment's release command: after its image is built and its task definition registered,
before its rollout, one run of the command in the new release (`trigger` `release`). Exit 0: the
rollout goes on; otherwise the deployment fails naming the exit code, and the release before it
keeps serving (its service was never touched). The run's end wakes the deployment's target
(`wake_deployment`), whose next pass reads the outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import service as services
from capstan.apps.models import Deployment, Preview, Service
from capstan.apps.steps import Progress
from capstan.errors import ApiError
from capstan.reconcile.queue import enqueue
from capstan.runs import service as runs
from capstan.runs.models import FAILED, RELEASE, SUCCEEDED, Run


async def release_step(
    session: AsyncSession,
    service: Service,
    preview: Preview | None,
    deployment: Deployment,
    register: Callable[[], Awaitable[None]],
) -> Progress | None:
    """Where the deployment's release command stands: None when there is none or it
    succeeded; `in_progress` while its run goes (started here, once, after `register` made the
    release's task definition); `failed` with the reason the deployment fails with."""
    if deployment.release_run_id is None:
        if not service.release_command:
            return None
        await register()
        try:
            run = await runs.start(
                session,
                service,
                service.release_command,
                trigger=RELEASE,
                release=deployment,
                preview=preview,
            )
        except ApiError as refused:  # a worker whose entry point is its program, say
            return Progress("failed", f"The release command cannot run: {refused.message}")
        deployment.release_run_id = run.id
        return Progress("in_progress", "The release command is running.")
    found = await session.get(Run, deployment.release_run_id)
    if found is None:
        return Progress("failed", "The release command's run is gone.")
    return _outcome(found)


def _outcome(run: Run) -> Progress | None:
    if run.status == SUCCEEDED:
        return None
    if run.status != FAILED:
        return Progress("in_progress", "The release command is running.")
    if run.exit_code is not None and run.stop_requested_at is None:
        return Progress(
            "failed",
            f"The release command exited with code {run.exit_code} (run {run.id}); the "
            "previous release keeps serving.",
        )
    return Progress("failed", f"The release command did not complete: {run.error}")


async def wake_deployment(session: AsyncSession, run: Run) -> None:
    """A release command's run ended: its deployment's target takes its next step."""
    if run.trigger != RELEASE:
        return
    if run.preview_id is not None:
        await enqueue(session, services.PREVIEW_QUEUE_KIND, run.preview_id)
    else:
        await enqueue(session, services.QUEUE_KIND, run.service_id)
