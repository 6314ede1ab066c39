"""Releases: every deployment is one — the commit, the image (by digest), the settings it ran
with and a version of its environment — and a release that went live can be deployed again.

`rollback` deploys exactly an earlier release: no build; the same image, settings and
environment version (whose SSM parameters were never overwritten); and the service's settings
and environment become the release's. `needed` is what the reconciler keeps of a target's
environment versions (and images, or a site's outputs) in the cloud: those of the deployments under
way, of the live one and of the newest `RELEASES_KEPT` that went live; the others are removed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import service as services
from capstan.apps.deploying import deployer_for, target_of
from capstan.apps.models import (
    FAILED,
    REPLACED,
    RUNNING,
    SUPERSEDED,
    UNDER_WAY,
    Deployment,
    Service,
)
from capstan.apps.steps import Subject
from capstan.apps.target_deployments import ForTarget
from capstan.auth.principal import Principal
from capstan.cloud.deploy import Deployer
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import CloudError
from capstan.cloud_account.session import cloud_answers
from capstan.config import Settings
from capstan.crypto import SecretBox
from capstan.errors import Conflict
from capstan.network import service as network
from capstan.projects.models import Project

log = logging.getLogger("capstan.apps")

# Releases that went live kept per target (with their environment versions), for rollback.
RELEASES_KEPT = services.RELEASES_KEPT


class ReleaseNotDeployable(Conflict):
    code = "release_not_deployable"


_KEPT = ForTarget(
    lambda target: (
        select(Deployment)
        .where(target, Deployment.status.in_((RUNNING, REPLACED)))
        .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        .limit(RELEASES_KEPT)
    )
)
_UNDER_WAY = ForTarget(
    lambda target: select(Deployment).where(target, Deployment.status.in_(UNDER_WAY))
)


async def kept_releases(
    session: AsyncSession, service_id: str, preview_id: str | None
) -> list[Deployment]:
    """The target's releases that may be deployed again: the newest `RELEASES_KEPT` that went
    live (the live one among them), newest first."""
    return list(await session.scalars(*_KEPT.of(service_id, preview_id)))


def images_of(deployments: list[Deployment]) -> dict[str, str]:
    """The image digests (`sha256:…`) of those of `deployments` whose image is pinned, by
    deployment id."""
    return {
        deployment.id: deployment.image_uri.rpartition("@")[2]
        for deployment in deployments
        if deployment.image_uri is not None and "@sha256:" in deployment.image_uri
    }


@dataclass(frozen=True)
class Needed:
    """A target's deployments under way and its kept releases: those whose pieces in the cloud
    (environment, image, site output) must stay. Read once (`needed`) for all three."""

    under_way: list[Deployment]
    kept: list[Deployment]

    @property
    def versions(self) -> set[str | None]:
        """The environment versions a release of the target still needs in the cloud."""
        return {deployment.environment_version for deployment in (*self.under_way, *self.kept)}

    @property
    def images(self) -> dict[str, str]:
        """The images (digests, by deployment id) a release of the target or a deployment under
        way still needs in the registry: what the repository's lifecycle policy must never
        expire."""
        return images_of([*self.under_way, *self.kept])

    @property
    def outputs(self) -> set[str] | None:
        """The prefixes of a static site's bucket a release still needs (None: a kept release
        predates prefixes and is served from the top of the bucket, so nothing may be
        pruned)."""
        if any(release.site_prefix is None for release in self.kept):
            return None
        return {d.site_prefix for d in (*self.under_way, *self.kept) if d.site_prefix is not None}


async def needed(session: AsyncSession, service_id: str, preview_id: str | None) -> Needed:
    """What the target's deployments under way and its kept releases need in the cloud."""
    under_way = list(await session.scalars(*_UNDER_WAY.of(service_id, preview_id)))
    return Needed(under_way, await kept_releases(session, service_id, preview_id))


def settings_of(deployment: Deployment) -> dict[str, Any]:
    value = json.loads(deployment.settings) if deployment.settings else {}
    return dict(value) if isinstance(value, dict) else {}


async def _refuse_unless_deployable(
    session: AsyncSession, service: Service, release: Deployment
) -> None:
    if release.status == FAILED:
        raise ReleaseNotDeployable(
            f"Deployment {release.id} failed ({release.error or 'no reason recorded'}); only a "
            "deployment that went live can be rolled back to."
        )
    if release.status == SUPERSEDED or release.status in UNDER_WAY:
        why = "was replaced before it went live" if release.status == SUPERSEDED else "is not live"
        raise ReleaseNotDeployable(
            f"Deployment {release.id} {why}; only a deployment that went live can be rolled "
            "back to."
        )
    kept = {row.id for row in await kept_releases(session, service.id, None)}
    if release.id not in kept or release.settings is None or release.environment is None:
        raise ReleaseNotDeployable(
            f"Deployment {release.id} is no longer kept: Capstan keeps the newest "
            f"{RELEASES_KEPT} releases that went live (their images and environments)."
        )
    built = release.site_prefix if service.kind == services.STATIC_WEBSITE else release.image_uri
    if built is None:
        raise ReleaseNotDeployable(f"Deployment {release.id} has no built output to deploy.")


async def _output_exists(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    settings: Settings,
    service: Service,
    release: Deployment,
) -> bool:
    """A live look in the organization's account: is the release's image (or a site's output)
    still there?"""
    account = await network.require_cloud_account(session, caller)
    project = await session.get(Project, service.project_id)
    assert project is not None
    target = target_of(service, None, project, settings.domain)
    with cloud_answers():
        async with deployer_for(cloud, account, settings, project) as deployer:
            if service.kind == services.STATIC_WEBSITE:
                prefix = release.site_prefix
                assert prefix is not None
                return await cloud.run(lambda: deployer.site.output_exists(target, prefix))
            image = release.image_uri
            assert image is not None
            return await cloud.run(lambda: deployer.image_exists(target, image))


async def rollback(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    deployment_id: str,
    *,
    box: SecretBox,
    cloud: Cloud,
    settings: Settings,
) -> Deployment:
    """Deploy release `deployment_id` again (409 when it cannot be); the service's settings and
    environment become the release's, and its previews follow the settings."""
    service, release = await services.get_deployment(
        session, caller, project_id, kind, service_id, deployment_id
    )
    await _refuse_unless_deployable(session, service, release)
    if not await _output_exists(session, caller, cloud, settings, service, release):
        what = "output" if service.kind == services.STATIC_WEBSITE else "image"
        raise ReleaseNotDeployable(
            f"The {what} of deployment {release.id} is gone from the account "
            f"({release.image_uri or release.site_prefix}); it cannot be deployed again."
        )
    variables = box.open_json(release.environment, owner=release.id)
    changed = False
    # A release from before architecture was kept ran on x86_64.
    kept = {"architecture": "x86_64", **settings_of(release)}
    for name, value in kept.items():
        if name in services.RELEASE_FIELDS and getattr(service, name) != value:
            setattr(service, name, value)
            changed = True
    service.environment = box.seal_json(variables, owner=service.id)
    service.environment_version = release.environment_version
    deployment = await services.start_deployment(
        session, service, None, trigger="rollback", release=release
    )
    deployment.environment = box.seal_json(variables, owner=deployment.id)
    if changed:  # previews follow their parent's settings, as after a PATCH
        for preview in await services.live_previews(session, service.id):
            await services.start_deployment(session, service, preview, trigger="patch")
    await session.flush()
    return deployment


async def prune(
    session: AsyncSession,
    cloud: Cloud,
    subject: Subject,
    deployment: Deployment,
    deployer: Deployer,
    domain: str,
    *,
    first: bool,
) -> None:
    """Remove the environment versions (and a static site's build outputs) no release of the
    target needs any more, and mark the images releases need so that the repository's
    lifecycle policy keeps them (`first`: the target's first release, no mark to remove). A
    failure is only logged: the next rollout prunes again.

    The target's first deployment (`services.first_of_target`) is its only one: no other
    wrote an environment version, an image or a site output, so nothing is read to find
    what to prune (neither the target's deployments nor the cloud's listings); its own image
    is still marked."""
    keep: set[str | None] | None = None  # None: no version to remove
    outputs: set[str] | None = None
    images: dict[str, str] | None = None
    if services.first_of_target(deployment):
        if subject.service.kind != services.STATIC_WEBSITE:
            images = images_of([deployment])
    else:
        preview_id = subject.preview.id if subject.preview else None
        wanted = await needed(session, subject.service.id, preview_id)
        keep = wanted.versions
        if subject.service.kind == services.STATIC_WEBSITE:
            outputs = wanted.outputs
        else:
            images = wanted.images
    target = subject.target(domain)

    def prune() -> tuple[int, int]:
        removed = 0 if keep is None else len(deployer.prune_environments(target, keep))
        if images is not None:
            deployer.keep_images(target, images, first=first)
        if outputs is None:
            return removed, 0
        return removed, deployer.site.prune_outputs(target, outputs)

    try:
        parameters, objects = await cloud.run(prune)
    except CloudError as error:
        log.warning("%s: old releases not pruned: %s", target.resource_id, error)
        return
    if parameters or objects:
        log.info(
            "%s: removed %d parameters and %d objects no release needs",
            target.resource_id,
            parameters,
            objects,
        )
