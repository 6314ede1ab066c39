"""Reconcilers of web servers, workers, static websites and their previews.

One pass looks at the newest deployment of a target (a service, or one of its previews) and takes
the next step, storing each handle before waiting on it, so a crash between passes only repeats
an idempotent step. The state machine (its table: `models.DEPLOYMENT_STATES`) is driven once
here; what differs between kinds is in their `Steps` (`apps/steps.py`): `ContainerSteps`
(`apps/containers.py`) for web servers and workers, `SiteSteps` (`apps/sites.py`) for static
websites.

    pending ──prepare, start build──► building ──build done──► deploying ──watch: completed──►
    running                                       (any step can end in failed)

A deleted target (its `deleted_at` set) is torn down instead: the driver removes its cloud
resources in order, and only then do its rows go; the project's shared network goes with the
project's last target that needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm.exc import StaleDataError

from capstan.apps import environment as environments
from capstan.apps import previews, releases, target_deployments
from capstan.apps import service as services
from capstan.apps.containers import ContainerSteps
from capstan.apps.deploying import deployer_for
from capstan.apps.models import DEPLOYMENT_STATES, Deployment, Preview, Service
from capstan.apps.sites import SiteSteps
from capstan.apps.steps import Steps, Subject
from capstan.cloud.deploy import Deployer, ProjectCache
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.config import Settings
from capstan.db import utcnow
from capstan.domains import lifecycle as domains
from capstan.git_host.client import GitHubAppClient
from capstan.git_host.errors import GitHostError, TerminalGitHostError
from capstan.hostnames import service as hostnames
from capstan.network import service as network
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, RequeueAfter, Result

log = logging.getLogger("capstan.apps")

# Builds, rollouts, CloudFront publications and tear-downs take minutes in AWS and a tick of the
# simulator in the zero-delay sandbox: look very soon, then twice as long each time, at least once
# a minute: doubling reaches the cap soon, so a ten-minute build costs few looks, and work over at
# once is seen at the first look (docs/decisions/0063).
POLL = Poll(first=timedelta(seconds=0.2), factor=2, cap=timedelta(seconds=60))
ROLLOUT_DEADLINE = timedelta(minutes=15)

# A pass's rows (`_load`), built once (docs/decisions/0065): the target's
# newest deployment comes beside them, in the same statement.
_ROWS = (
    select(Service, Project, CloudAccount)
    .join(Project, Project.id == Service.project_id)
    .outerjoin(CloudAccount, CloudAccount.organization_id == Service.organization_id)
)
_LOAD_SERVICE = (
    _ROWS.add_columns(target_deployments.NEWEST)
    .outerjoin(target_deployments.NEWEST, target_deployments.NEWEST_OF_SERVICE)
    .where(Service.id == bindparam("resource_id"))
)
_LOAD_PREVIEW = (
    _ROWS.add_columns(Preview, target_deployments.NEWEST)
    .join(Preview, Preview.service_id == Service.id)
    .outerjoin(target_deployments.NEWEST, target_deployments.NEWEST_OF_PREVIEW)
    .where(Preview.id == bindparam("resource_id"))
)


class DeploymentChanged(Exception):
    """A pass's move of a deployment lost: it was moved (superseded) meanwhile."""


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
        poll: Poll = POLL,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.kind = kind
        self._clock = clock
        self._poll = poll
        # A step just started (a build, a rollout): its first look comes after the poll's first
        # wait, and the looks after it wait longer.
        self._started = RequeueAfter(poll.first.total_seconds())
        self._project_cache = project_cache
        self._sessionmaker = sessionmaker
        self._cloud = cloud
        self._git_host = git_host
        self._settings = settings
        box = environments.environment_box(settings.require_secret_key())
        self._box = box
        containers = ContainerSteps(cloud, settings, box, rollout_deadline)
        self._steps: dict[str, Steps] = {
            services.WEB_SERVER: containers,
            services.WORKER: containers,
            services.STATIC_WEBSITE: SiteSteps(cloud, settings, box, poll=poll),
        }

    async def live_ids(self, session: AsyncSession) -> list[str]:
        model = Preview if self.kind == services.PREVIEW_QUEUE_KIND else Service
        return list(await session.scalars(select(model.id)))

    async def reconcile(self, resource_id: str) -> Result:
        async with self._sessionmaker() as session:
            loaded = await self._load(session, resource_id)
            if loaded is None:
                return Done()
            subject, account, newest = loaded
            if await self._expire(session, subject):
                return RequeueAfter(0)  # its next pass removes it
            try:
                if subject.row.deleted_at is not None:
                    result = await self._tear_down(session, subject, account)
                else:
                    result = await self._converge(session, subject, account, newest)
                await session.commit()
            except (DeploymentChanged, StaleDataError):
                # The deployment changed under this pass (superseded by a newer one); the change
                # enqueued the target again, and the next pass starts from what is now true.
                await session.rollback()
                log.info("%s %s changed during its pass; starting over", self.kind, resource_id)
                return RequeueAfter(0)
            return result

    async def _expire(self, session: AsyncSession, subject: Subject) -> bool:
        """A preview with no push for the project's `preview_ttl_hours` is removed, as by a
        DELETE (every live preview gets a pass at each resync, so at most that late)."""
        preview = subject.preview
        if preview is None or preview.deleted_at is not None:
            return False
        expires_at = previews.preview_expires_at(subject.project, preview)
        if expires_at is None or self._clock() < expires_at:
            return False
        log.info("preview %s expired at %s: removing it", preview.id, expires_at.isoformat())
        await previews.remove_preview(session, subject.service, preview)
        await session.commit()
        return True

    async def _load(
        self, session: AsyncSession, resource_id: str
    ) -> tuple[Subject, CloudAccount | None, Deployment | None] | None:
        """The pass's rows in one statement: the target, its service and project, the
        organization's cloud account (if connected) and the target's newest deployment (if any);
        None when the target is gone."""
        preview: Preview | None = None
        if self.kind == services.PREVIEW_QUEUE_KIND:
            found = (await session.execute(_LOAD_PREVIEW, {"resource_id": resource_id})).first()
            if found is None:
                return None
            service, project, account, preview, newest = found
        else:
            found = (await session.execute(_LOAD_SERVICE, {"resource_id": resource_id})).first()
            if found is None:
                return None
            service, project, account, newest = found
        return Subject(service=service, preview=preview, project=project), account, newest

    def _deployer(
        self, account: CloudAccount | None, subject: Subject, *, with_project: bool = True
    ) -> AbstractAsyncContextManager[Deployer]:
        return deployer_for(
            self._cloud,
            account,
            self._settings,
            subject.project,
            cache=self._project_cache if with_project else None,
        )

    # Converging ---------------------------------------------------------------------------------

    async def _converge(
        self,
        session: AsyncSession,
        subject: Subject,
        account: CloudAccount | None,
        deployment: Deployment | None,
    ) -> Result:
        if deployment is None:
            return Done()
        if deployment.status == "failed":
            return await self._still_running(session, subject, account)
        if deployment.status == "superseded":
            return Done()
        if deployment.generation > subject.row.generation:
            # The rows were read before the change that made this deployment committed (each
            # statement sees the latest commits): read them again, or the new release is built
            # from the old settings (a PATCH's old branch).
            await _read_again(session, subject)
        steps = self._steps[subject.service.kind]
        await self._read_letting_go(session, subject)
        result: Result
        try:
            async with self._deployer(account, subject) as deployer:
                result = await self._step(session, subject, deployment, deployer, steps)
        except (TerminalCloudError, TerminalGitHostError) as error:
            await self._fail(session, deployment, _message(error))
            result = Done()
        except GitHostError as error:  # transient: the queue retries with backoff
            raise RuntimeError(_message(error)) from error
        await self._forget_let_go(session, subject)
        return result

    async def _step(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        steps: Steps,
    ) -> Result:
        if deployment.status == "running":
            return await steps.check_running(session, subject, deployment, deployer)
        if deployment.status == "pending":
            return await self._start_build(session, subject, deployment, deployer, steps)
        if deployment.status == "building":
            return await self._after_build(session, subject, deployment, deployer, steps)
        return await self._watch(session, subject, deployment, deployer, steps)

    async def _read_letting_go(self, session: AsyncSession, subject: Subject) -> None:
        """When the target's hostname moves (its applied one is not its current one), the
        hostnames it let go of and may have records at (`Subject.letting_go`): only a read then."""
        current = subject.target(self._settings.domain).hostname
        applied = subject.row.applied_hostname
        if not current or not applied or hostnames.normal(applied) == hostnames.normal(current):
            return
        claims = await hostnames.held(session, subject.row.id)
        subject.letting_go = [
            held.hostname
            for held in claims
            if held.released_at is not None and held.hostname != hostnames.normal(current)
        ]
        if hostnames.normal(applied) not in {held.hostname for held in claims}:
            # Its records there, if any, are not provably its own (a preview that had taken
            # a service's hostname before claims existed): they stay.
            log.warning(
                "%s does not hold %s, where it was served: its records there are left",
                subject.row.id,
                applied,
            )

    async def _forget_let_go(self, session: AsyncSession, subject: Subject) -> None:
        """The target's records are at its current hostname, and the steps removed its own at
        those it let go of: those claims go."""
        current = subject.target(self._settings.domain).hostname
        applied = subject.row.applied_hostname
        if subject.letting_go and current and applied == current:
            await hostnames.forget(session, subject.row.id, subject.letting_go)

    async def _still_running(
        self, session: AsyncSession, subject: Subject, account: CloudAccount | None
    ) -> Result:
        """A target whose newest deployment failed runs the release before it, if any (ECS
        rolled back to it, or the failure came before a rollout): its tasks are started again
        after a rotation of a referenced database's password, as a running target's are."""
        preview_id = subject.preview.id if subject.preview else None
        running = await target_deployments.running_deployment(
            session, subject.service.id, preview_id
        )
        steps = self._steps[subject.service.kind]
        if running is None or not steps.databases_of(subject, running):
            return Done()
        try:
            async with self._deployer(account, subject) as deployer:
                await steps.reconnect_databases(subject, running, deployer)
        except TerminalCloudError as error:  # the account's role, say: the next resync retries
            log.warning("%s: database passwords not checked: %s", running.id, error)
        return Done()

    async def _start_build(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        steps: Steps,
    ) -> Result:
        if deployment.environment is None:
            if deployment.environment_version != subject.row.environment_version:
                # A newer environment came with a newer deployment, which superseded this one.
                raise DeploymentChanged(deployment.id)
            # The release keeps the values of its environment version (sealed to itself).
            variables = environments.read_environment(self._box, subject.row)
            deployment.environment = self._box.seal_json(variables, owner=deployment.id)
        waiting = await steps.prepare(session, subject, deployment, deployer)
        if waiting is not None:
            return waiting
        if deployment.rollback_of is not None:
            # A release deployed again: its image (or a site's output) exists; no build.
            await steps.reuse(session, subject, deployment, deployer)
            await self._move(session, deployment, "reused", deadline_at=utcnow() + steps.deadline)
            if steps.watch_at_once:
                return await self._watch(session, subject, deployment, deployer, steps)
            return self._started
        service = subject.service
        if service.installation_id is None:
            raise TerminalGitHostError("The repository is not reachable through an installation.")
        name = service.repo.split("/", 1)[1]
        if deployment.commit_sha is None:
            head = await self._git_host.branch_head_commit(
                service.installation_id, service.repo, subject.branch
            )
            deployment.commit_sha = head.sha
            deployment.commit_message = head.commit.message if head.commit else None
        # A token for this one repository, read-only, with at least half an hour left: the one
        # the branch was read with (kept by the client per scope, `git_host/client.py`).
        token = await self._git_host.installation_token(
            service.installation_id, repositories=[name], permissions={"contents": "read"}
        )
        build_id = await steps.start_build(session, subject, deployment, deployer, token.token)
        await self._move(session, deployment, "build_started", build_id=build_id)
        return self._started

    async def _after_build(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        steps: Steps,
    ) -> Result:
        assert deployment.build_id is not None
        build_id = deployment.build_id
        build = await self._cloud.run(lambda: deployer.describe_build(build_id))
        if build.id != build_id:  # started again (its role was not usable yet): follow it
            deployment.build_id = build.id
        if build.state == "in_progress":
            return PollAgain(self._poll)
        if build.state == "failed":
            await self._fail(
                session, deployment, f"Build failed: {build.error or 'see the build log'}"
            )
            return Done()
        released = await steps.release(session, subject, deployment, deployer, build)
        if released is not None and released.state == "failed":
            await self._fail(session, deployment, released.reason or "The release command failed.")
            return Done()
        if released is not None:
            return PollAgain(self._poll)  # its run's end enqueues the target again
        await steps.built(subject, deployment, deployer, build)
        await self._move(session, deployment, "built", deadline_at=utcnow() + steps.deadline)
        if steps.watch_at_once:  # its first step (a site's publication) now, not a poll later
            return await self._watch(session, subject, deployment, deployer, steps)
        return self._started

    async def _watch(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        steps: Steps,
    ) -> Result:
        progress = await steps.watch(session, subject, deployment, deployer)
        if progress.state == "completed":
            first = services.never_ran(subject.row)  # the target's first release
            await self._move(session, deployment, "rolled_out", finished_at=utcnow())
            if not first:
                # At most one live deployment per target: the one this replaced says so.
                await DEPLOYMENT_STATES.move_all(
                    session,
                    "replaced",
                    Deployment.service_id == subject.service.id,
                    target_deployments.of_target(subject.preview.id if subject.preview else None),
                    Deployment.id != deployment.id,
                )
            subject.row.observed_generation = deployment.generation
            await releases.prune(
                session,
                self._cloud,
                subject,
                deployment,
                deployer,
                self._settings.domain,
                first=first,
            )
            return Done()
        if progress.state == "failed":
            await self._fail(session, deployment, progress.reason or "The deployment failed.")
            return Done()
        if deployment.deadline_at is not None and utcnow() > deployment.deadline_at:
            await self._fail(session, deployment, steps.overdue(progress))
            return Done()
        return PollAgain(self._poll)

    async def _fail(self, session: AsyncSession, deployment: Deployment, message: str) -> None:
        await self._move(session, deployment, "failed", error=message[:4000], finished_at=utcnow())

    async def _move(
        self, session: AsyncSession, deployment: Deployment, event: str, **changes: object
    ) -> None:
        """Move the deployment by `DEPLOYMENT_STATES`, or lose the pass: someone moved it first."""
        if not await DEPLOYMENT_STATES.move(session, deployment, event, **changes):
            raise DeploymentChanged(deployment.id)

    # Tearing down -------------------------------------------------------------------------------

    async def _tear_down(
        self, session: AsyncSession, subject: Subject, account: CloudAccount | None
    ) -> Result:
        if self.kind == services.QUEUE_KIND:
            remaining_previews = await session.scalar(
                select(func.count())
                .select_from(Preview)
                .where(Preview.service_id == subject.service.id)
            )
            if remaining_previews:
                return PollAgain(self._poll)  # previews go first (they reference the service)
            if await domains.count_of_service(session, subject.service.id):
                return PollAgain(self._poll)  # so do its custom domains (their rules use it)
        steps = self._steps[subject.service.kind]
        # Where its records may be: the hostnames it holds (its own records there, no others).
        subject.held = [held.hostname for held in await hostnames.held(session, subject.row.id)]
        if account is not None and account.account_id is not None:
            async with self._deployer(account, subject, with_project=False) as deployer:
                if not await steps.tear_down(session, subject, deployer):
                    return PollAgain(self._poll)
        await steps.forget(session, subject)
        await self._delete_rows(session, subject)
        if subject.preview is None:
            # The last target of a project takes the project's network with it.
            await enqueue(session, network.QUEUE_KIND, subject.project.id)
        return Done()

    async def _delete_rows(self, session: AsyncSession, subject: Subject) -> None:
        # Its records are gone: the hostnames it held are nobody's now.
        await hostnames.forget(session, subject.row.id)
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


async def _read_again(session: AsyncSession, subject: Subject) -> None:
    await session.refresh(subject.service)
    if subject.preview is not None:
        await session.refresh(subject.preview)


def _message(error: Exception) -> str:
    return str(getattr(error, "message", None) or error)
