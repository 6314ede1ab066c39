"""What every reconciler and reader of a target needs from the driver: the target a service or
preview row stands for, and a `Deployer` in the organization's account (its session closed
afterwards)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from capstan.apps import service as services
from capstan.apps.models import Preview, Service
from capstan.cloud import AwsSession
from capstan.cloud.deploy import Deployer, ProjectCache, Target
from capstan.cloud.driver import Cloud
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import customer_driver
from capstan.config import Settings
from capstan.network.service import network_version
from capstan.projects.models import Project


def target_of(service: Service, preview: Preview | None, project: Project, domain: str) -> Target:
    """A service, or one of its previews, as the driver sees it."""
    hostname = None
    if service.kind in services.HOSTNAME_KINDS:
        label = preview.slug if preview is not None else service.name
        hostname = services.hostname(label, project, domain)
    return Target(
        resource_id=(preview or service).id,
        project_id=project.id,
        kind=service.kind,  # type: ignore[arg-type]
        hostname=hostname,
    )


def deployer_for(
    cloud: Cloud,
    account: CloudAccount | None,
    settings: Settings,
    project: Project,
    *,
    cache: ProjectCache | None = None,
) -> AbstractAsyncContextManager[Deployer]:
    """A Deployer in the account's role, in the project's region; with `cache`, one that reuses
    what this process knows of the project's network (keyed by when that network and its load
    balancer were made). A static website's own steps are its `site` part."""
    version = network_version(project)
    generation = project.network_generation

    def make(customer: AwsSession) -> Deployer:
        return Deployer(
            customer,
            cloud.operator,
            domain=settings.domain,
            cache=cache,
            network_version=version,
            network_generation=generation,
        )

    return customer_driver(cloud, account, project.region, make)
