"""Listings of services and previews, and a service's own read: what each row shows, read in
one statement whatever the number of rows (row by row it was two statements a service)."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import listing
from capstan.apps.models import Service
from capstan.apps.service import WEB_SERVER
from capstan.auth.principal import Principal
from capstan.caches.models import Cache
from capstan.errors import NotFound
from capstan.projects.scoped import list_in_project
from tests.apps.helpers import Ready, counted, new_shop
from tests.harness import Org


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def test_a_listing_shows_each_service_as_its_own_read_does(shop: Ready) -> None:
    api = shop.org.api
    running = shop.create_web_server(name="web")
    broken = shop.create_web_server(name="broken", branch="broken-build")
    for created, status in ((running, "running"), (broken, "failed")):
        path = f"{shop.base}/web_servers/{created['id']}"
        assert shop.wait_for(path, "running", "failed")["status"] == status
    # A third still deploying: its newest deployment is under way.
    deploying = shop.create_web_server(name="third")
    listed = api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert [row["id"] for row in listed] == [running["id"], broken["id"], deploying["id"]]
    for row in listed:
        alone = api.get(f"{shop.base}/web_servers/{row['id']}").json()
        if row["id"] == deploying["id"] and alone["status"] != row["status"]:
            continue  # it moved on between the two reads
        assert row == alone
    assert [row["status"] for row in listed[:2]] == ["running", "failed"]
    # A redeploy's new deployment is the newest: the listing shows it, not the running one.
    assert api.post(f"{shop.base}/web_servers/{running['id']}/redeploy").status_code == 202
    first = api.get(f"{shop.base}/web_servers").json()["web_servers"][0]
    assert first == api.get(f"{shop.base}/web_servers/{running['id']}").json() or (
        first["status"] == "running"  # it finished between the two reads
    )
    # Other kinds and other projects are not listed; a project without services lists none.
    assert api.get(f"{shop.base}/workers").json() == {"workers": []}
    assert api.get(f"{new_shop(shop.org).base}/web_servers").json() == {"web_servers": []}


def test_a_listing_is_one_statement_whatever_its_length(shop: Ready, org: Org) -> None:
    """Also the previews' listing (each as its own read shows it) and another organization's
    404s, on the same services: each deployment costs the suite's time."""
    other = org  # another organization
    stranger = Principal(organization_id=other.organization_id, user_id=other.user_id, via="token")
    org = shop.org
    caller = Principal(organization_id=org.organization_id, user_id=org.user_id, via="token")
    project_id = shop.project["id"]

    def services_listed() -> tuple[list[tuple[str, str | None]], list[str]]:
        async def work(session: AsyncSession) -> list[tuple[str, str | None]]:
            _, rows = await listing.services(session, caller, project_id, WEB_SERVER)
            return [(row.name, newest.status if newest else None) for row, newest in rows]

        return counted(org, work)

    none, statements = services_listed()
    assert none == [] and len(statements) == 1, statements
    web = shop.create_web_server(name="web")
    one, statements = services_listed()
    assert [name for name, _ in one] == ["web"] and len(statements) == 1
    for name in ("second", "third"):
        shop.create_web_server(name=name)
    three, statements = services_listed()
    assert [name for name, _ in three] == ["web", "second", "third"], three
    assert all(status is not None for _, status in three), three  # each has its deployment
    assert len(statements) == 1, statements

    # A service's own read likewise: it, its project and its newest deployment.
    (project, service, newest), statements = counted(
        org, lambda session: listing.service(session, caller, project_id, WEB_SERVER, web["id"])
    )
    assert (project.id, service.name) == (project_id, "web") and newest is not None
    assert len(statements) == 1, statements

    parent_path = f"{shop.base}/web_servers/{web['id']}"
    created = [
        org.api.post(f"{parent_path}/previews", json={"branch": branch}).json()
        for branch in ("feature-x", "broken-build")
    ]
    previews, statements = counted(org, lambda session: listing.previews(session, web["id"]))
    assert [preview.branch for preview, _ in previews] == ["feature-x", "broken-build"]
    assert all(newest is not None for _, newest in previews) and len(statements) == 1
    for preview, status in zip(created, ("running", "failed"), strict=True):
        path = f"{parent_path}/previews/{preview['id']}"
        assert shop.wait_for(path, "running", "failed")["status"] == status
    listed = org.api.get(f"{parent_path}/previews").json()["previews"]
    assert [row["id"] for row in listed] == [preview["id"] for preview in created]
    for row in listed:
        assert row == org.api.get(f"{parent_path}/previews/{row['id']}").json()

    # The kinds listed through `list_in_project` (caches, buckets, databases; services for a
    # plan) likewise: the project's check and its rows in one statement.
    rows, statements = counted(
        org, lambda session: list_in_project(session, caller, project_id, Service)
    )
    assert len(rows) == 3 and len(statements) == 1
    rows, statements = counted(
        org, lambda session: list_in_project(session, caller, project_id, Cache)
    )
    assert rows == [] and len(statements) == 1

    # Another organization's caller: the kind's 404 for the service, the project's for a list.
    with pytest.raises(NotFound, match="No such web server"):
        counted(
            org,
            lambda session: listing.service(session, stranger, project_id, WEB_SERVER, web["id"]),
        )
    for work in (
        lambda session: listing.services(session, stranger, project_id, WEB_SERVER),
        lambda session: list_in_project(session, stranger, project_id, Service),
    ):
        with pytest.raises(NotFound, match="No such project"):
            counted(org, work)
    assert other.api.get(f"{shop.base}/web_servers/{web['id']}").status_code == 404
    answer = other.api.get(f"{shop.base}/web_servers")
    assert answer.status_code == 404 and answer.json()["message"] == "No such project."
