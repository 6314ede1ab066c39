"""Reconcilers of web servers, workers and their previews.

One pass looks at the newest deployment of a target (a service, or one of its previews) and takes
the next step, storing each handle before waiting on it, so a crash between passes only repeats
an idempotent step:

    pending ──start build──► building ──build done, environment, task definition, service──►
    deploying ──rollout complete──► running          (any step can end in failed)

A deleted target (its `deleted_at` set) is torn down instead: the driver removes its cloud
resources in order, and only then do its rows go; the project's shared network goes with the
project's last target.
"""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.cloud.deploy import BuildSpec, Deployer, ProjectCache, Target, TaskSpec
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.config import Settings
from capstan.db import utcnow
from capstan.git_host.client import GitHostError, GitHubAppClient, TerminalGitHostError
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.worker import Done, RequeueAfter, Result
from capstan.services import network
from capstan.services import service as services
from capstan.services.deploying import deployer_for, target_of
from capstan.services.models import Deployment, Preview, Service

log = logging.getLogger("capstan.services")

POLL_SECONDS = 1.0
ROLLOUT_DEADLINE = timedelta(minutes=15)


@dataclass
class _Subject:
    """What one pass works on: a service, or a preview with its parent service."""

    service: Service
    preview: Preview | None
    project: Project

    @property
    def row(self) -> Service | Preview:
        return self.preview or self.service

    @property
    def branch(self) -> str:
        return self.preview.branch if self.preview else self.service.branch

    def target(self, domain: str) -> Target:
        return target_of(self.service, self.preview, self.project, domain)


class TargetReconciler:
    """The reconciler of one queue kind: services (`service`) or previews (`preview`)."""

    def __init__(
        self,
        kind: str,
        sessionmaker: async_sessionmaker[AsyncSession],
        cloud: Cloud,
        git_host: GitHubAppClient,
        settings: Settings,
        *,
        rollout_deadline: timedelta = ROLLOUT_DEADLINE,
        project_cache: ProjectCache | None = None,
    ) -> None:
        self.kind = kind
        self._project_cache = project_cache
        self._sessionmaker = sessionmaker
        self._cloud = cloud
        self._git_host = git_host
        self._settings = settings
        self._box = services.environment_box(settings.require_secret_key())
        self._rollout_deadline = rollout_deadline

    async def live_ids(self, session: AsyncSession) -> list[str]:
        model = Preview if self.kind == services.PREVIEW_QUEUE_KIND else Service
        return list(await session.scalars(select(model.id)))

    async def reconcile(self, resource_id: str) -> Result:
        async with self._sessionmaker() as session:
            subject = await self._load(session, resource_id)
            if subject is None:
                return Done()
            account = await session.get(CloudAccount, subject.service.organization_id)
            if subject.row.deleted_at is not None:
                result = await self._tear_down(session, subject, account)
            else:
                result = await self._converge(session, subject, account)
            await session.commit()
            return result

    async def _load(self, session: AsyncSession, resource_id: str) -> _Subject | None:
        if self.kind == services.PREVIEW_QUEUE_KIND:
            preview = await session.get(Preview, resource_id)
            if preview is None:
                return None
            service = await session.get(Service, preview.service_id)
        else:
            preview = None
            service = await session.get(Service, resource_id)
        if service is None:
            return None
        project = await session.get(Project, service.project_id)
        assert project is not None
        return _Subject(service=service, preview=preview, project=project)

    def _deployer(
        self, account: CloudAccount | None, project: Project | None = None
    ) -> AbstractAsyncContextManager[Deployer]:
        return deployer_for(
            self._cloud, account, self._settings, cache=self._project_cache, project=project
        )

    # Converging ---------------------------------------------------------------------------------

    async def _converge(
        self, session: AsyncSession, subject: _Subject, account: CloudAccount | None
    ) -> Result:
        deployment = await services.newest_deployment(
            session, subject.service.id, subject.preview.id if subject.preview else None
        )
        if deployment is None:
            return Done()
        if deployment.status in ("failed", "superseded"):
            return Done()
        try:
            async with self._deployer(account, subject.project) as deployer:
                if deployment.status == "running":
                    return await self._check_running(subject, deployment, deployer)
                if deployment.status == "pending":
                    return await self._start_build(session, subject, deployment, deployer)
                if deployment.status == "building":
                    return await self._after_build(subject, deployment, deployer)
                return await self._watch_rollout(subject, deployment, deployer)
        except (TerminalCloudError, TerminalGitHostError) as error:
            self._fail(deployment, _message(error))
            return Done()
        except GitHostError as error:  # transient: the queue retries with backoff
            raise RuntimeError(_message(error)) from error

    async def _start_build(
        self,
        session: AsyncSession,
        subject: _Subject,
        deployment: Deployment,
        deployer: Deployer,
    ) -> Result:
        if subject.project.network_ready_at is None:
            # The project network reconciler creates it and wakes this target when it is ready.
            await enqueue(session, network.QUEUE_KIND, subject.project.id)
            return RequeueAfter(POLL_SECONDS * 5)
        service = subject.service
        if service.installation_id is None:
            raise TerminalGitHostError("The repository is not reachable through an installation.")
        name = service.repo.split("/", 1)[1]
        if deployment.commit_sha is None:
            deployment.commit_sha = await self._git_host.branch_head(
                service.installation_id, service.repo, subject.branch
            )
        # A one-hour token for this one repository, read-only, handed to this build only.
        token = await self._git_host.create_installation_token(
            service.installation_id, repositories=[name], permissions={"contents": "read"}
        )
        spec = BuildSpec(
            target=subject.target(self._settings.domain),
            repo=service.repo,
            commit_sha=deployment.commit_sha,
            git_api_url=self._settings.github_api_base,
            source_token=token.token,
            build_command=service.build_command,
            deployment_id=deployment.id,
        )
        deployment.build_id = await self._cloud.run(lambda: deployer.start_build(spec))
        deployment.status = "building"
        return RequeueAfter(POLL_SECONDS)

    async def _after_build(
        self, subject: _Subject, deployment: Deployment, deployer: Deployer
    ) -> Result:
        assert deployment.build_id is not None
        build_id = deployment.build_id
        build = await self._cloud.run(lambda: deployer.describe_build(build_id))
        if build.state == "in_progress":
            return RequeueAfter(POLL_SECONDS)
        if build.state == "failed":
            self._fail(deployment, f"Build failed: {build.error or 'see the build log'}")
            return Done()
        assert build.image_uri is not None
        deployment.image_uri = build.image_uri
        await self._roll_out(subject, deployment, deployer)
        deployment.status = "deploying"
        deployment.deadline_at = utcnow() + self._rollout_deadline
        return RequeueAfter(POLL_SECONDS)

    async def _roll_out(
        self, subject: _Subject, deployment: Deployment, deployer: Deployer
    ) -> None:
        target = subject.target(self._settings.domain)
        variables = {
            v["name"]: v["value"] for v in services.read_environment(self._box, subject.row)
        }
        parameters = await self._cloud.run(lambda: deployer.put_environment(target, variables))
        service = subject.service
        assert deployment.image_uri is not None
        spec = TaskSpec(
            target=target,
            deployment_id=deployment.id,
            image_uri=deployment.image_uri,
            cpu=service.cpu,
            memory=service.memory,
            environment=parameters,
            start_command=service.start_command,
            health_path=service.health_path if service.kind == services.WEB_SERVER else None,
        )
        old_hostname = subject.row.applied_hostname
        deployment.task_definition_arn = await self._cloud.run(lambda: deployer.deploy(spec))
        if old_hostname and target.hostname and old_hostname != target.hostname:
            await self._cloud.run(lambda: deployer.move_hostname(target, old_hostname))
        subject.row.applied_hostname = target.hostname

    async def _watch_rollout(
        self, subject: _Subject, deployment: Deployment, deployer: Deployer
    ) -> Result:
        target = subject.target(self._settings.domain)
        assert deployment.task_definition_arn is not None
        task_definition = deployment.task_definition_arn
        rollout = await self._cloud.run(lambda: deployer.describe_rollout(target, task_definition))
        if rollout.state == "completed":
            deployment.status = "running"
            deployment.finished_at = utcnow()
            subject.row.observed_generation = deployment.generation
            return Done()
        if rollout.state == "failed":
            self._fail(deployment, f"Rollout failed: {rollout.reason or 'tasks did not start'}")
            return Done()
        if deployment.deadline_at is not None and utcnow() > deployment.deadline_at:
            self._fail(
                deployment,
                f"Tasks were not healthy within {int(self._rollout_deadline.total_seconds())} "
                f"seconds ({rollout.running} of {rollout.desired} running"
                + (f"; {rollout.reason}" if rollout.reason else "")
                + ").",
            )
            return Done()
        return RequeueAfter(POLL_SECONDS)

    async def _check_running(
        self, subject: _Subject, deployment: Deployment, deployer: Deployer
    ) -> Result:
        """A periodic look at a running target: move its hostname, repair drift."""
        target = subject.target(self._settings.domain)
        old_hostname = subject.row.applied_hostname
        if target.hostname and old_hostname and old_hostname != target.hostname:
            await self._cloud.run(lambda: deployer.move_hostname(target, old_hostname))
            subject.row.applied_hostname = target.hostname
        assert deployment.task_definition_arn is not None
        task_definition = deployment.task_definition_arn
        rollout = await self._cloud.run(lambda: deployer.describe_rollout(target, task_definition))
        if rollout.state != "completed":
            log.warning("drift on %s: re-applying its running deployment", target.resource_id)
            await self._roll_out(subject, deployment, deployer)
        return Done()

    def _fail(self, deployment: Deployment, message: str) -> None:
        deployment.status = "failed"
        deployment.error = message[:4000]
        deployment.finished_at = utcnow()

    # Tearing down -------------------------------------------------------------------------------

    async def _tear_down(
        self, session: AsyncSession, subject: _Subject, account: CloudAccount | None
    ) -> Result:
        if self.kind == services.QUEUE_KIND:
            remaining_previews = await session.scalar(
                select(func.count())
                .select_from(Preview)
                .where(Preview.service_id == subject.service.id)
            )
            if remaining_previews:
                return RequeueAfter(POLL_SECONDS)  # previews go first (they reference the service)
        if account is not None and account.account_id is not None:
            target = subject.target(self._settings.domain)
            async with self._deployer(account) as deployer:
                if not await self._cloud.run(lambda: deployer.delete(target)):
                    return RequeueAfter(POLL_SECONDS)
        await self._delete_rows(session, subject)
        if subject.preview is None:
            # The last target of a project takes the project's network with it.
            await enqueue(session, network.QUEUE_KIND, subject.project.id)
        return Done()

    async def _delete_rows(self, session: AsyncSession, subject: _Subject) -> None:
        if subject.preview is not None:
            await session.execute(
                delete(Deployment).where(Deployment.preview_id == subject.preview.id)
            )
            await session.delete(subject.preview)
        else:
            await session.execute(
                delete(Deployment).where(Deployment.service_id == subject.service.id)
            )
            await session.delete(subject.service)
        await session.flush()


def _message(error: Exception) -> str:
    return str(getattr(error, "message", None) or error)
