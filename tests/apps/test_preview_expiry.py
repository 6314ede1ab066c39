"""Previews that end: a project's `preview_ttl_hours` removes a preview nobody pushed to for that
long (like a DELETE: its cloud resources go too), and `max_previews` bounds how many exist."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Preview
from capstan.reconcile.queue import enqueue
from tests.apps.helpers import Ready, hostname_of, new_shop
from tests.apps.processes import account_sessions
from tests.cloud.deploy_helpers import leftovers
from tests.harness import Org, run_db
from tests.polling import wait_until


@pytest.fixture
def shop(connected: Org) -> Ready:
    """A new project in the module's one connected organization."""
    return new_shop(connected)


def test_a_project_shows_and_changes_its_preview_settings(shop: Ready) -> None:
    api, path = shop.org.api, shop.base
    shown = api.get(path).json()
    assert (shown["preview_ttl_hours"], shown["max_previews"]) == (None, 20)
    changed = api.patch(path, json={"preview_ttl_hours": 48, "max_previews": 5})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["preview_ttl_hours"], changed.json()["max_previews"]) == (48, 5)
    off = api.patch(path, json={"preview_ttl_hours": None}).json()
    assert (off["preview_ttl_hours"], off["max_previews"]) == (None, 5)
    for bad in ({"preview_ttl_hours": 0}, {"max_previews": -1}, {"max_previews": None}):
        refused = api.patch(path, json=bad)
        assert refused.status_code == 400, (bad, refused.text)


def test_one_preview_more_than_the_limit_is_409(shop: Ready) -> None:
    api = shop.org.api
    assert api.patch(shop.base, json={"max_previews": 1}).status_code == 200
    web = shop.create_web_server()
    previews = f"{shop.base}/web_servers/{web['id']}/previews"
    assert api.post(previews, json={"branch": "feature-x"}).status_code == 201
    refused = api.post(previews, json={"branch": "broken-build"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "preview_limit_reached"


def test_an_expired_preview_and_its_cloud_resources_are_removed(shop: Ready) -> None:
    api, server = shop.org.api, shop.org.server
    assert api.patch(shop.base, json={"preview_ttl_hours": 2}).status_code == 200
    web = shop.create_web_server()
    created = api.post(
        f"{shop.base}/web_servers/{web['id']}/previews", json={"branch": "feature-x"}
    )
    assert created.status_code == 201, created.text
    preview = created.json()
    expires_at = datetime.fromisoformat(preview["expires_at"])
    path = f"{shop.base}/web_servers/{web['id']}/previews/{preview['id']}"
    shop.wait_for(path, "running")
    # The parent too (its deployment runs beside the preview's and may end later): the end of
    # the test checks that it is still running once the preview is gone.
    shop.wait_for(f"{shop.base}/web_servers/{web['id']}", "running")

    # Two hours and a minute pass with no push: the preview's last sign of life moves back by
    # that much (the reconciler reads the time itself), and it gets its pass.
    async def age(session: AsyncSession) -> datetime:
        row = await session.get(Preview, preview["id"])
        assert row is not None
        row.created_at = row.created_at - timedelta(hours=2, minutes=1)
        await enqueue(session, "preview", row.id)
        await session.commit()
        return row.created_at

    created_at = run_db(server.settings, age)
    assert abs((expires_at - timedelta(hours=2, minutes=1)) - (created_at + timedelta(hours=2))) < (
        timedelta(seconds=5)
    )

    async def still_there(session: AsyncSession) -> bool:
        return (
            await session.scalar(select(Preview.id).where(Preview.id == preview["id"]))
        ) is not None

    wait_until(
        lambda: not run_db(server.settings, still_there),
        timeout=60,
        what="the expired preview to be removed",
    )
    assert api.get(path).status_code == 404
    account_id = api.get("/api/cloud_account").json()["account_id"]
    assert server.settings.sandbox_cloud_url
    with account_sessions(server.settings.sandbox_cloud_url, account_id) as (customer, operator):
        hostname = hostname_of(preview["url"])
        assert leftovers(customer, operator, preview["id"], hostname) == {}
    # The parent lives on.
    assert api.get(f"{shop.base}/web_servers/{web['id']}").json()["status"] == "running"
