"""A create writes each row once: the target, its hostname's claim, its first deployment and its
queue row are one INSERT each, and nothing is updated. Before, the new target was written, then
written again with its environment version, its deployment written again with its settings, and
an UPDATE looked for deployments under way to supersede (a new target has none)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import previews, service
from capstan.apps.environment import environment_box
from capstan.apps.models import Preview
from capstan.apps.schemas import WebServerCreate
from capstan.auth.principal import Principal
from tests.apps.helpers import WEB_REPO, OneRepository, Ready, counted, new_shop
from tests.harness import Org


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def writes_of(org: Org, create: Callable[[AsyncSession], Awaitable[Any]]) -> tuple[str, list[str]]:
    """The id of what `create` made and committed, and each write it ran as `VERB table` (a
    schema's prefix dropped), in order; reads and savepoints left out."""

    async def committed(session: AsyncSession) -> str:
        made = await create(session)
        await session.commit()
        return str(made.id)

    made_id, statements = counted(org, committed)
    found = []
    for sql in statements:
        words = sql.split()
        verb = words[0].upper()
        if verb in ("INSERT", "UPDATE", "DELETE"):
            table = words[2] if verb in ("INSERT", "DELETE") else words[1]
            found.append(f"{verb} {table.rpartition('.')[2].strip(chr(34))}")
    return made_id, found


def test_a_create_writes_each_row_once(shop: Ready) -> None:
    org = shop.org
    caller = Principal(organization_id=org.organization_id, user_id=org.user_id, via="token")
    project_id = shop.project["id"]
    fields = WebServerCreate(
        name="web", repo=WEB_REPO, branch="main", cpu=256, memory=512
    ).model_dump()

    service_id, written = writes_of(
        org,
        lambda session: service.create(
            session,
            caller,
            project_id,
            service.WEB_SERVER,
            fields,
            git_host=OneRepository(),
            domain=org.server.settings.domain,
        ),
    )
    # Its hostname is claimed in the same transaction, before any record of it exists.
    assert written == [
        "INSERT services",
        "INSERT hostname_claims",
        "INSERT deployments",
        "INSERT reconcile_queue",
    ]

    # What was written once is whole: the API shows it, and it deploys.
    path = f"{shop.base}/web_servers/{service_id}"
    assert shop.wait_for(path, "running")["status"] == "running"
    deployments = org.api.get(f"{path}/deployments").json()["deployments"]
    assert [(d["trigger"], d["status"]) for d in deployments] == [("create", "running")]

    box = environment_box(org.server.settings.require_secret_key())

    async def create_preview(session: AsyncSession) -> Preview:
        _, made = await previews.create_preview(
            session,
            caller,
            project_id,
            service.WEB_SERVER,
            service_id,
            "feature-x",
            box,
            domain=org.server.settings.domain,
            git_host=OneRepository(),
        )
        return made

    preview_id, written = writes_of(org, create_preview)
    assert written == [
        "INSERT hostname_claims",
        "INSERT previews",
        "INSERT deployments",
        "INSERT reconcile_queue",
    ]
    preview = shop.wait_for(f"{path}/previews/{preview_id}", "running")
    assert preview["branch"] == "feature-x"


def test_a_create_answers_what_its_get_shows_without_reading_it_back(shop: Ready) -> None:
    """The create's answer is rendered from the rows it wrote (no read after the writes), and is
    what the service's GET shows at once (before its first pass has moved anything shown)."""
    created = shop.create_web_server(name="echo")
    shown = shop.org.api.get(f"{shop.base}/web_servers/{created['id']}")
    assert shown.status_code == 200, shown.text
    assert created == shown.json()
    assert created["status"] == "deploying" and created["url"]
