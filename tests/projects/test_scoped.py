"""Reading a kind's rows inside a project (`projects.scoped`) against the real database: only the
caller's organization's rows, the kind's own 404 otherwise, listings oldest first."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.caches.models import Cache
from capstan.errors import NotFound
from capstan.projects.scoped import get_in_project, list_in_project, one_in_project, row_in_project
from tests.state_rows import Database, Sessions, add_row, database_fixture

database = database_fixture("scoped")


def _caller(organization_id: str) -> Principal:
    return Principal(organization_id=organization_id, user_id=None, via="token")


async def _owner(session: AsyncSession, cache_id: str) -> tuple[str, str]:
    cache = await session.get(Cache, cache_id)
    assert cache is not None
    return cache.organization_id, cache.project_id


def test_a_row_is_found_in_its_project_for_its_organization(database: Database) -> None:
    async def work(sessions: Sessions) -> str:
        cache_id = await add_row(sessions, "cache", "available")
        async with sessions() as session:
            organization_id, project_id = await _owner(session, cache_id)
            found = await get_in_project(
                session, _caller(organization_id), project_id, Cache, cache_id, "No such cache."
            )
            return found.id

    cache_id = database.run(work)
    assert cache_id.startswith("cch_")


def test_another_organizations_row_is_the_kinds_404(database: Database) -> None:
    async def work(sessions: Sessions) -> str:
        mine = await add_row(sessions, "cache", "available")
        theirs = await add_row(sessions, "cache", "available")  # another organization's project
        async with sessions() as session:
            organization_id, _ = await _owner(session, mine)
            _, their_project = await _owner(session, theirs)
            with pytest.raises(NotFound) as refused:
                await get_in_project(
                    session,
                    _caller(organization_id),
                    their_project,
                    Cache,
                    theirs,
                    "No such cache.",
                )
            return refused.value.message

    assert database.run(work) == "No such cache."


def test_a_row_of_another_project_is_not_found_through_this_one(database: Database) -> None:
    async def work(sessions: Sessions) -> bool:
        first = await add_row(sessions, "cache", "available")
        second = await add_row(sessions, "cache", "available")
        async with sessions() as session:
            organization_id, _ = await _owner(session, first)
            _, other_project = await _owner(session, second)
            try:
                await get_in_project(
                    session, _caller(organization_id), other_project, Cache, first, "No such cache."
                )
            except NotFound:
                return True
            return False

    assert database.run(work) is True


def test_extra_conditions_narrow_the_row(database: Database) -> None:
    async def work(sessions: Sessions) -> bool:
        cache_id = await add_row(sessions, "cache", "available")
        async with sessions() as session:
            organization_id, project_id = await _owner(session, cache_id)
            caller = _caller(organization_id)
            narrowed = row_in_project(Cache, Cache.status == "deleting")
            try:
                await one_in_project(session, caller, project_id, narrowed, cache_id, "gone")
            except NotFound:
                return True
            return False

    assert database.run(work) is True


def test_a_listing_is_the_projects_rows_oldest_first(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[list[str], list[str]]:
        first = await add_row(sessions, "cache", "available")
        async with sessions() as session:
            organization_id, project_id = await _owner(session, first)
            second = Cache(
                organization_id=organization_id,
                project_id=project_id,
                storage_limit_mb=1024,
                cloud_name="second",
                status="available",  # setup: a row as its moves left it
            )
            session.add(second)
            await session.commit()
            listed = await list_in_project(session, _caller(organization_id), project_id, Cache)
            return [first, second.id], [cache.id for cache in listed]

    expected, listed = database.run(work)
    assert listed == expected


def test_a_listing_of_another_organizations_project_is_the_projects_404(
    database: Database,
) -> None:
    async def work(sessions: Sessions) -> str:
        mine = await add_row(sessions, "cache", "available")
        theirs = await add_row(sessions, "cache", "available")
        async with sessions() as session:
            organization_id, _ = await _owner(session, mine)
            _, their_project = await _owner(session, theirs)
            with pytest.raises(NotFound) as refused:
                await list_in_project(session, _caller(organization_id), their_project, Cache)
            return refused.value.message

    assert database.run(work) == "No such project."
