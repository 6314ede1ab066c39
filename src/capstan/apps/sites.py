"""The reconcile steps of static websites and their previews (see `services/steps.py`).

    pending ──► bucket + origin access control, certificate requested, build started
    building ──► the build syncs the publish directory into the bucket
    deploying ──► certificate issued ─► distribution (alias + certificate), bucket policy for it
                  alone, ALIAS record, invalidation of `/*` ─► running once the distribution is
                  `Deployed` and the invalidation `Completed`

A site needs no project network: it is served by CloudFront from S3. The handles of what is made
(distribution, certificate, OAC) are kept in `site_resources`, one row per site or site preview,
written in the same pass as the step that made them; each step first looks for what a crashed
pass may have made (deterministic names, caller references, idempotency tokens).

A running site is looked at again on every resync: when the project's hostname suffix changed, a
certificate for the new hostname is requested and, once issued, the distribution's alias and
certificate are swapped, the DNS record moves and the old certificate and record are removed;
otherwise the distribution, the bucket policy and the DNS record are re-asserted (drift).
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment, SiteResources
from capstan.apps.steps import Progress, Subject
from capstan.cloud.builds import SiteBuildSpec
from capstan.cloud.deploy import Build, Deployer, Target
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import RetryableCloudError
from capstan.cloud.site import (
    SiteCertificate,
    SiteDriver,
    SiteHandles,
    SiteStorage,
    bucket_name,
)
from capstan.config import Settings
from capstan.crypto import SecretBox
from capstan.db import utcnow
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result

log = logging.getLogger("capstan.apps.sites")

# A first publication waits for a certificate's DNS validation (minutes) and a distribution's
# deployment to the edges (minutes): more than a container rollout.
SITE_DEADLINE = timedelta(minutes=30)
# A CodeBuild build runs at most 30 minutes (the project's timeout): older superseded builds are
# done.
_BUILD_LIFETIME = timedelta(hours=1)


def _retired(row: SiteResources) -> list[str]:
    return list(json.loads(row.retired_certificate_arns or "[]"))


def _retire_later(row: SiteResources, arn: str) -> None:
    retired = _retired(row)
    if arn not in retired:
        row.retired_certificate_arns = json.dumps([*retired, arn])


class SiteSteps:
    def __init__(self, cloud: Cloud, settings: Settings, box: SecretBox, *, poll: Poll) -> None:
        self._cloud = cloud
        self._settings = settings
        self._box = box
        self._poll = poll
        # CloudFront lets an old certificate go only once the distribution is deployed (minutes).
        self._slow_poll = replace(poll, first=min(poll.first * 5, poll.cap))
        self.deadline = SITE_DEADLINE
        self.watch_at_once = True  # publishing starts as soon as the files are in the bucket

    # -- the rows of a site's handles -----------------------------------------------------

    async def _resources(self, session: AsyncSession, subject: Subject) -> SiteResources:
        row = await session.get(SiteResources, subject.row.id)
        if row is None:
            row = SiteResources(target_id=subject.row.id, service_id=subject.service.id)
            session.add(row)
        return row

    def _storage(self, target: Target, row: SiteResources, site: SiteDriver) -> SiteStorage:
        assert row.origin_access_control_id is not None
        return SiteStorage(
            bucket=bucket_name(target.resource_id),
            origin_domain=site.origin_domain(bucket_name(target.resource_id)),
            origin_access_control_id=row.origin_access_control_id,
        )

    async def _certificate(
        self, site: SiteDriver, target: Target, row: SiteResources, *, renew: bool = False
    ) -> SiteCertificate:
        """The certificate of the target's current hostname (the project's for its sites: the
        driver checks the known one still is; with `renew`, a failed or expired one is
        replaced); a replaced one is retired once nothing serves it."""
        known = row.certificate_arn
        certificate = await self._cloud.run(
            lambda: site.ensure_certificate(target, known, replace_failed=renew)
        )
        if row.certificate_arn and row.certificate_arn != certificate.arn:
            _retire_later(row, row.certificate_arn)
        row.certificate_arn = certificate.arn
        row.certificate_hostname = certificate.hostname
        return certificate

    async def _retire_certificates(self, site: SiteDriver, row: SiteResources) -> None:
        retired = _retired(row)
        if not retired:
            return
        left = []
        for arn in retired:
            if arn == row.certificate_arn or not await self._retire(site, arn):
                left.append(arn)
        row.retired_certificate_arns = json.dumps(left) if left else None

    async def _ensure_storage(self, site: SiteDriver, target: Target, row: SiteResources) -> None:
        storage = await self._cloud.run(lambda: site.ensure_site_storage(target))
        row.bucket_name = storage.bucket
        row.origin_access_control_id = storage.origin_access_control_id

    async def _retire(self, site: SiteDriver, arn: str) -> bool:
        return await self._cloud.run(lambda: site.retire_certificate(arn))

    async def _publish(
        self,
        site: SiteDriver,
        subject: Subject,
        target: Target,
        row: SiteResources,
        certificate: SiteCertificate,
        deployment: Deployment,
    ) -> None:
        """Distribution (serving the deployment's output), bucket policy and DNS as they should
        be; the old hostname let go."""
        storage = self._storage(target, row, site)
        known = row.distribution_id
        prefix = deployment.site_prefix
        distribution = await self._cloud.run(
            lambda: site.publish(target, storage, certificate.arn, known, prefix)
        )
        row.distribution_id = distribution.id
        row.distribution_domain = distribution.domain_name
        old_hostname = subject.row.applied_hostname
        if old_hostname and old_hostname != target.hostname:
            letting_go = subject.letting_go

            def let_go() -> None:
                for hostname in letting_go:
                    site.remove_hostname(target, hostname, distribution.domain_name)

            await self._cloud.run(let_go)
        subject.row.applied_hostname = target.hostname

    # -- steps ------------------------------------------------------------------------------

    async def prepare(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Result | None:
        site = deployer.site
        running = await self._recent_builds(session, subject, superseded_besides=deployment)
        if running and not await self._cloud.run(lambda: deployer.builds.stop(running)):
            # A superseded build still running would sync older files over this build's.
            return PollAgain(self._poll)
        target = subject.target(self._settings.domain)
        row = await self._resources(session, subject)
        if row.origin_access_control_id is None:  # made once; resyncs re-assert it
            await self._ensure_storage(site, target, row)
        # Requested now, so that DNS validation runs while the site builds; each deployment
        # replaces a certificate that failed or expired.
        await self._certificate(site, target, row, renew=True)
        return None

    async def _recent_builds(
        self,
        session: AsyncSession,
        subject: Subject,
        *,
        superseded_besides: Deployment | None = None,
    ) -> list[str]:
        """Builds of the target that may still run: all of them, or (`superseded_besides`)
        those of the deployments superseded by that one."""
        target = (
            Deployment.preview_id == subject.preview.id
            if subject.preview
            else Deployment.preview_id.is_(None)
        )
        query = select(Deployment.build_id).where(
            Deployment.service_id == subject.service.id,
            target,
            Deployment.build_id.is_not(None),
            Deployment.created_at > utcnow() - _BUILD_LIFETIME,
        )
        if superseded_besides is not None:
            query = query.where(
                Deployment.id != superseded_besides.id, Deployment.status == "superseded"
            )
        return [build_id for build_id in await session.scalars(query) if build_id]

    async def start_build(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        source_token: str,
    ) -> str:
        service = subject.service
        assert deployment.commit_sha is not None
        assert service.build_command is not None and service.publish_dir is not None
        sealed = self._box.open_json(deployment.environment, owner=deployment.id)
        variables = list(sealed) if isinstance(sealed, list) else []
        # What this build is given, kept for `GET …/previews/{id}/environment`.
        deployment.build_environment = self._box.seal_json(variables, owner=deployment.id)
        # Each build's output has a prefix of its own in the bucket: a rollback points the
        # distribution back at an older one.
        deployment.site_prefix = deployment.id
        target = subject.target(self._settings.domain)
        spec = SiteBuildSpec(
            target=target,
            repo=service.repo,
            commit_sha=deployment.commit_sha,
            git_api_url=self._settings.github_api_base,
            source_token=source_token,
            build_command=service.build_command,
            publish_dir=service.publish_dir,
            bucket=bucket_name(target.resource_id),
            deployment_id=deployment.id,
            prefix=deployment.site_prefix,
            environment={v["name"]: v["value"] for v in variables},
            environment_version=deployment.environment_version,
        )
        return await self._cloud.run(lambda: deployer.builds.start_site(spec))

    async def release(
        self,
        session: AsyncSession,
        subject: Subject,
        deployment: Deployment,
        deployer: Deployer,
        build: Build,
    ) -> Progress | None:
        return None  # a static website has no release command (nothing runs)

    async def built(
        self, subject: Subject, deployment: Deployment, deployer: Deployer, build: Build
    ) -> None:
        return None  # the build synced the files itself; publishing is `watch`'s

    async def reuse(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> None:
        # The release's output is still in the bucket under its prefix (the rollback checked):
        # `watch` points the distribution at it and invalidates the cache. No build.
        assert deployment.site_prefix is not None

    async def watch(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Progress:
        site = deployer.site
        target = subject.target(self._settings.domain)
        row = await self._resources(session, subject)
        if deployment.invalidation_id is None:
            certificate = await self._certificate(site, target, row)
            if certificate.state != "issued":
                return Progress(
                    "failed" if certificate.state == "failed" else "in_progress",
                    certificate.reason,
                )
            if row.origin_access_control_id is None:  # a row lost since `prepare`
                await self._ensure_storage(site, target, row)
            try:
                await self._publish(site, subject, target, row, certificate, deployment)
            except RetryableCloudError as error:
                if error.code != "cname_already_exists":
                    raise
                # Another distribution still holds the hostname (a deleted site's, being
                # removed): wait, within the deadline.
                return Progress("in_progress", error.message)
            published = row.distribution_id
            assert published is not None
            deployment.invalidation_id = await self._cloud.run(
                lambda: site.invalidate(published, deployment.id)
            )
            await self._retire_certificates(site, row)
            return Progress("in_progress", "CloudFront is deploying the site.")
        distribution_id = row.distribution_id
        invalidation_id = deployment.invalidation_id
        if distribution_id is None:
            deployment.invalidation_id = None  # publish again: the distribution is unknown
            return Progress("in_progress", "The distribution is being made again.")
        publication = await self._cloud.run(
            lambda: site.describe_publication(distribution_id, invalidation_id)
        )
        if publication.distribution_deployed and publication.invalidation_completed:
            await self._retire_certificates(site, row)
            return Progress("completed")
        if not publication.distribution_deployed:
            return Progress("in_progress", "CloudFront is deploying the distribution.")
        return Progress("in_progress", "CloudFront is invalidating the cached files.")

    def overdue(self, progress: Progress) -> str:
        return (
            f"The site was not published within {int(self.deadline.total_seconds())} seconds "
            f"({progress.reason or 'CloudFront did not finish'})."
        )

    def databases_of(self, subject: Subject, deployment: Deployment) -> set[str]:
        return set()  # a site's variables exist only at build time: they reference none

    async def reconnect_databases(
        self, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> None:
        return None

    async def check_running(
        self, session: AsyncSession, subject: Subject, deployment: Deployment, deployer: Deployer
    ) -> Result:
        """Move the site to a new hostname, or re-assert its distribution, policy and record."""
        site = deployer.site
        target = subject.target(self._settings.domain)
        row = await self._resources(session, subject)
        # The bucket's settings (private, encrypted, tagged) and the OAC, as they should be.
        await self._ensure_storage(site, target, row)
        certificate = await self._certificate(site, target, row)
        if certificate.state == "pending":
            return PollAgain(self._poll)  # the new hostname's certificate validates
        if certificate.state == "failed":
            log.warning("%s: %s", target.resource_id, certificate.reason)
            return Done()
        await self._publish(site, subject, target, row, certificate, deployment)
        await self._retire_certificates(site, row)
        if _retired(row):
            return PollAgain(self._slow_poll)  # the old certificate, once CloudFront lets go
        return Done()

    async def tear_down(self, session: AsyncSession, subject: Subject, deployer: Deployer) -> bool:
        site = deployer.site
        running = await self._recent_builds(session, subject)
        if running and not await self._cloud.run(lambda: deployer.builds.stop(running)):
            return False  # a running build would write into the bucket being removed
        target = subject.target(self._settings.domain)
        row = await session.get(SiteResources, subject.row.id)
        if row is not None:
            handles = SiteHandles(
                distribution_id=row.distribution_id,
                distribution_domain=row.distribution_domain,
                origin_access_control_id=row.origin_access_control_id,
                certificate_arns=tuple(
                    dict.fromkeys(
                        arn for arn in (row.certificate_arn, *_retired(row)) if arn is not None
                    )
                ),
                hostnames=tuple(subject.held),
            )
        else:
            handles = SiteHandles(hostnames=tuple(subject.held))
        return await self._cloud.run(lambda: site.delete_site(target, handles))

    async def forget(self, session: AsyncSession, subject: Subject) -> None:
        await session.execute(
            delete(SiteResources).where(SiteResources.target_id == subject.row.id)
        )
