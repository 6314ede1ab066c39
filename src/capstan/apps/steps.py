"""What the target reconciler asks of each kind: the steps that differ between containers (web
servers and workers) and static websites, around one state machine written once in
`reconcile.py`:

    pending ──prepare, start build──► building ──build done──► deploying ──watch: completed──►
    running                                       (any step can end in failed)

- `prepare`: what must exist before the build (containers: the project network; sites: the
  bucket, the origin access control, the certificate request). Answers a `Result` to wait.
- `start_build` / `built`: start the kind's build; act on its success (containers: roll out the
  image; sites: nothing yet — the files are in the bucket).
- `reuse`: a rollback's step instead of a build (containers: roll out the release's image;
  sites: point the distribution at the release's output).
- `watch`: the next step of the rollout or publication and where it stands (`Progress`).
- `check_running`: the periodic look at a running target (hostname moves, drift, and
  `reconnect_databases`).
- `databases_of` / `reconnect_databases`: the databases a deployment references, and starting
  its tasks again after a rotation of one's password — also for the release a target still runs
  when its newest deployment failed (containers; a site references none).
- `tear_down` / `forget`: remove the target's cloud resources; drop the kind's own rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.deploying import target_of
from capstan.apps.models import Deployment, Preview, Service
from capstan.cloud.deploy import Build, Deployer, Target
from capstan.projects.models import Project
from capstan.reconcile.worker import Result


@dataclass
class Subject:
    """What one pass works on: a service, or a preview with its parent service."""

    service: Service
    preview: Preview | None
    project: Project
    # Hostnames the target let go of (its project's suffix moved) and may still have records at;
    # read by the pass only when its hostname moves. A step that moves the hostname removes
    # the target's own records there.
    letting_go: list[str] = field(default_factory=list)
    # Every hostname the target holds, read by a tear-down: its records there are removed.
    held: list[str] = field(default_factory=list)

    @property
    def row(self) -> Service | Preview:
        return self.preview or self.service

    @property
    def branch(self) -> str:
        return self.preview.branch if self.preview else self.service.branch

    def target(self, domain: str) -> Target:
        return target_of(self.service, self.preview, self.project, domain)


@dataclass(frozen=True)
class Progress:
    state: Literal["in_progress", "completed", "failed"]
    reason: str | None = None


class Steps(Protocol):
    # How long `deploying` may last before the deployment fails.
    deadline: timedelta
    # Whether `watch` runs in the pass that saw the build succeed (else a poll later).
    watch_at_once: bool

    async def prepare(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Result | None: ...

    async def start_build(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        source_token: str,
    ) -> str: ...

    async def release(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        build: Build,
    ) -> Progress | None:
        """After a build, before `built`: the release command's run (containers), started
        once and waited for; None: go on."""
        ...

    async def built(
        self, subject: Subject, deployment: Deployment, deployer: Deployer, build: Build
    ) -> None: ...

    async def reuse(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> None:
        """Deploy a release that was built before (a rollback) instead of building."""
        ...

    async def watch(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Progress: ...

    def overdue(self, progress: Progress) -> str: ...

    async def check_running(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Result: ...

    def databases_of(self, subject: Subject, deployment: Deployment) -> set[str]: ...

    async def reconnect_databases(
        self, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> None: ...

    async def tear_down(self, session: AsyncSession, subject: Subject, deployer: Deployer) -> bool:
        """True when nothing of the target is left in the cloud."""
        ...

    async def forget(self, session: AsyncSession, subject: Subject) -> None: ...
