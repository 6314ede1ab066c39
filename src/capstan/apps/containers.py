"""The steps of web servers and workers (`ContainerSteps`): prepare the network, build the
image, roll the task out, watch it, tear it down; `reconcile.TargetReconciler` drives them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import releases
from capstan.apps import service as services
from capstan.apps.models import Deployment
from capstan.apps.steps import Progress, Subject
from capstan.cloud.builds import RegistryLogin
from capstan.cloud.deploy import Build, BuildSpec, Deployer, TaskSpec
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import TerminalCloudError
from capstan.config import Settings
from capstan.crypto import SecretBox
from capstan.databases import references
from capstan.network import service as network
from capstan.reconcile.queue import enqueue
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result
from capstan.runs.release import release_step

log = logging.getLogger("capstan.apps")

# Waiting for the project network: its reconciler wakes the targets when it is ready.
NETWORK_POLL = Poll(first=timedelta(seconds=5), factor=1.5, cap=timedelta(seconds=60))
# Waiting for a referenced database that is being created (minutes in AWS).
DATABASE_POLL = Poll(first=timedelta(seconds=1), factor=1.5, cap=timedelta(seconds=60))


def registry_login(settings: Settings) -> RegistryLogin | None:
    """The operator's Docker Hub credentials for builds, when both are set."""
    if settings.dockerhub_username and settings.dockerhub_token is not None:
        return RegistryLogin(
            settings.dockerhub_username, settings.dockerhub_token.get_secret_value()
        )
    return None


@dataclass
class _Made:
    """What a roll-out's steps made, in the cloud's thread, for the pass to record."""

    image_uri: str | None = None
    task_definition_arn: str | None = None


class ContainerSteps:
    """Web servers and workers: an image build, then a rolling ECS deployment (and, for a web
    server, its load balancer rule, DNS record and auto-scaling). They run in the project's
    network, which its own reconciler makes."""

    def __init__(
        self, cloud: Cloud, settings: Settings, box: SecretBox, rollout_deadline: timedelta
    ) -> None:
        self._cloud = cloud
        self._settings = settings
        self._box = box
        self.deadline = rollout_deadline
        self.watch_at_once = False  # `built` started the rollout: nothing to see yet

    async def prepare(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Result | None:
        project = subject.project
        web = subject.service.kind == services.WEB_SERVER
        if project.network_ready_at is None or (web and project.load_balancer_ready_at is None):
            # The project network reconciler creates it (and a web server's load balancer) and
            # wakes this target when it is ready.
            await enqueue(session, network.QUEUE_KIND, project.id)
            return PollAgain(NETWORK_POLL)
        listed = self._listed(subject, deployment)
        if await references.being_created(session, subject.project.id, listed):
            return PollAgain(DATABASE_POLL)  # its URL and secret are known once it is available
        return None

    def _listed(self, subject: Subject, deployment: Deployment) -> list[dict[str, Any]]:
        """The deployment's environment as recorded (the service's until the deployment has
        its own)."""
        owner = deployment if deployment.environment is not None else subject.row
        sealed = self._box.open_json(owner.environment, owner=owner.id)
        return sealed if isinstance(sealed, list) else []

    async def start_build(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        source_token: str,
    ) -> str:
        assert deployment.commit_sha is not None
        spec = BuildSpec(
            target=subject.target(self._settings.domain),
            repo=subject.service.repo,
            commit_sha=deployment.commit_sha,
            git_api_url=self._settings.github_api_base,
            source_token=source_token,
            build_command=subject.service.build_command,
            deployment_id=deployment.id,
            registry_login=registry_login(self._settings),
        )
        return await self._cloud.run(lambda: deployer.start_build(spec))

    async def built(
        self, subject: Subject, deployment: Deployment, deployer: Deployer, build: Build
    ) -> None:
        assert build.image_uri is not None
        target = subject.target(self._settings.domain)
        built = build.image_uri
        # The release keeps the image by digest: a tag can be pushed again, a digest cannot.
        await self._roll_out(
            subject, deployment, deployer, pin=lambda: deployer.pin_image(target, built)
        )

    async def reuse(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> None:
        await self._roll_out(subject, deployment, deployer)

    async def _roll_out(
        self,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        *,
        pin: Callable[[], str] | None = None,
        register_only: bool = False,
    ) -> None:
        """The deployment's release, as it was recorded: its environment version (written once,
        never over another's), its settings and its image (`pin`: the built image's digest is
        found first). The cloud's steps run in one trip to the cloud's threads. `register_only`:
        its task definition, not its rollout (what its release command runs first)."""
        target = subject.target(self._settings.domain)
        listed = self._listed(subject, deployment)
        variables = {v["name"]: v["value"] for v in listed if "value" in v}
        databases = references.referenced(listed)
        version = deployment.environment_version
        first = services.first_of_target(deployment)
        service = subject.service
        ran = {**{name: getattr(service, name) for name in services.RELEASE_FIELDS}}
        ran.update(releases.settings_of(deployment))
        assert ran["cpu"] is not None and ran["memory"] is not None
        old_hostname = subject.row.applied_hostname
        # A web server's hostname is applied by its first completed deploy step; a worker has
        # none, and is known deployed once a deployment of it has run.
        first_roll_out = old_hostname is None and services.never_ran(subject.row)
        deployment_id, recorded_image = deployment.id, deployment.image_uri
        made = _Made()

        def roll_out() -> None:
            image_uri = recorded_image if pin is None else pin()
            assert image_uri is not None
            if pin is not None:
                made.image_uri = image_uri
            stored = deployer.put_environment(target, variables, version, databases, first=first)
            step = deployer.register if register_only else deployer.deploy
            made.task_definition_arn = step(
                TaskSpec(
                    target=target,
                    deployment_id=deployment_id,
                    image_uri=image_uri,
                    cpu=ran["cpu"],
                    memory=ran["memory"],
                    environment=stored,
                    start_command=ran["start_command"],
                    health_path=(
                        ran["health_path"] if service.kind == services.WEB_SERVER else None
                    ),
                    first_roll_out=first_roll_out,
                )
            )
            if register_only:
                return
            if old_hostname and target.hostname and old_hostname != target.hostname:
                deployer.move_hostname(target, *subject.letting_go)

        try:
            await self._cloud.run(roll_out)
        finally:
            # As far as the steps got: a deployment that fails after its image was pinned or its
            # task definition registered records them.
            if made.image_uri is not None:
                deployment.image_uri = made.image_uri
            if made.task_definition_arn is not None:
                deployment.task_definition_arn = made.task_definition_arn
        if not register_only:
            subject.row.applied_hostname = target.hostname

    async def release(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        build: Build,
    ) -> Progress | None:
        """The service's release command, run once in the built release before its rollout
        (`runs/release.py`); None: the rollout goes on."""
        assert build.image_uri is not None
        target = subject.target(self._settings.domain)
        built = build.image_uri

        async def register() -> None:
            pin = lambda: deployer.pin_image(target, built)  # noqa: E731
            await self._roll_out(subject, deployment, deployer, pin=pin, register_only=True)

        return await release_step(session, subject.service, subject.preview, deployment, register)

    async def watch(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Progress:
        target = subject.target(self._settings.domain)
        assert deployment.task_definition_arn is not None
        task_definition = deployment.task_definition_arn
        rollout = await self._cloud.run(lambda: deployer.describe_rollout(target, task_definition))
        if rollout.state == "completed":
            return Progress("completed")
        if rollout.state == "failed":
            return Progress("failed", f"Rollout failed: {rollout.reason or 'tasks did not start'}")
        return Progress(
            "in_progress",
            f"{rollout.running} of {rollout.desired} running"
            + (f"; {rollout.reason}" if rollout.reason else ""),
        )

    def overdue(self, progress: Progress) -> str:
        return (
            f"Tasks were not healthy within {int(self.deadline.total_seconds())} seconds "
            f"({progress.reason})."
        )

    async def check_running(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Result:
        """A periodic look at a running target: move its hostname, repair drift, and start its
        tasks again after a rotation of a referenced database's password."""
        target = subject.target(self._settings.domain)
        old_hostname = subject.row.applied_hostname
        if target.hostname and old_hostname and old_hostname != target.hostname:
            letting_go = subject.letting_go
            await self._cloud.run(lambda: deployer.move_hostname(target, *letting_go))
            subject.row.applied_hostname = target.hostname
        assert deployment.task_definition_arn is not None
        task_definition = deployment.task_definition_arn
        rollout = await self._cloud.run(lambda: deployer.describe_rollout(target, task_definition))
        if rollout.state != "completed":
            log.warning("drift on %s: re-applying its running deployment", target.resource_id)
            await self._roll_out(subject, deployment, deployer)
            return Done()
        await self.reconnect_databases(subject, deployment, deployer)
        return Done()

    def databases_of(self, subject: Subject, deployment: Deployment) -> set[str]:
        """The databases the deployment's environment references."""
        return set(references.referenced(self._listed(subject, deployment)).values())

    async def reconnect_databases(
        self, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> None:
        """Start the tasks of the running `deployment` again when RDS has rotated the password
        of a database it references since they started: RDS rotates a managed master password
        every 7 days, and tasks keep the one they started with
        (docs/decisions/0020-database-password-rotation.md)."""
        databases = self.databases_of(subject, deployment)
        if not databases:
            return
        target = subject.target(self._settings.domain)
        try:
            restarted = await self._cloud.run(
                lambda: deployer.reconnect_databases(target, databases)
            )
        except TerminalCloudError as error:
            # The running release is not failed for it (a role whose stack predates the grant,
            # say): the log says why, and the next resync looks again.
            log.warning("%s: database passwords not checked: %s", target.resource_id, error)
            return
        if restarted:
            log.info("%s: a database password was rotated; tasks start again", target.resource_id)

    async def tear_down(self, session: AsyncSession, subject: Subject, deployer: Deployer) -> bool:
        target = subject.target(self._settings.domain)
        held = subject.held
        return await self._cloud.run(lambda: deployer.delete(target, held))

    async def forget(self, session: AsyncSession, subject: Subject) -> None:
        return None
