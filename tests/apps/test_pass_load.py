"""A reconcile pass reads what it works on in one statement: the target (a service, or a preview
with its service), its project, the organization's cloud account and the target's newest
deployment. Before, the newest deployment was a second statement in every pass."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import previews, service, target_deployments
from capstan.apps.environment import environment_box
from capstan.apps.reconcile import TargetReconciler
from capstan.auth.principal import Principal
from tests.apps.helpers import OneRepository, counted, new_shop
from tests.harness import Org


def loaded(org: Org, kind: str, resource_id: str) -> tuple[Any, list[str]]:
    """What a pass of `kind` loads for `resource_id`, and the statements it ran."""
    nothing = cast(Any, None)  # a load reads the database only
    reconciler = TargetReconciler(kind, nothing, nothing, nothing, org.server.settings)
    return counted(org, lambda session: reconciler._load(session, resource_id))


def test_a_pass_loads_its_target_and_newest_deployment_in_one_statement(connected: Org) -> None:
    shop = new_shop(connected)
    web = shop.create_web_server()
    path = f"{shop.base}/web_servers/{web['id']}"
    shop.wait_for(path, "running")
    (running,) = connected.api.get(f"{path}/deployments").json()["deployments"]

    caller = Principal(
        organization_id=connected.organization_id, user_id=connected.user_id, via="token"
    )
    box = environment_box(connected.server.settings.require_secret_key())

    async def create_preview(session: AsyncSession) -> tuple[str, str]:
        _, made = await previews.create_preview(
            session,
            caller,
            shop.project["id"],
            service.WEB_SERVER,
            web["id"],
            "feature-y",
            box,
            domain=connected.server.settings.domain,
            git_host=OneRepository(),
        )
        await session.commit()
        newest = await target_deployments.newest_deployment(session, web["id"], made.id)
        assert newest is not None
        return made.id, newest.id

    (preview_id, preview_deployment), _ = counted(connected, create_preview)

    # The service's newest is its own (a preview's deployments are the preview's).
    (subject, account, newest), statements = loaded(connected, "service", web["id"])
    assert len(statements) == 1 and statements[0].lstrip().upper().startswith("SELECT")
    assert (subject.service.id, subject.preview, newest.id) == (web["id"], None, running["id"])
    assert subject.project.id == shop.project["id"] and account is not None

    (subject, account, newest), statements = loaded(
        connected, service.PREVIEW_QUEUE_KIND, preview_id
    )
    assert len(statements) == 1
    assert (subject.service.id, subject.preview.id, newest.id) == (
        web["id"],
        preview_id,
        preview_deployment,
    )

    # A target that is gone loads nothing.
    assert loaded(connected, "service", "svc_gone")[0] is None
