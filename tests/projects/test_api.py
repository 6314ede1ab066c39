"""Projects through HTTP: create, list, get, patch, delete, and every way to get them wrong."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.registry import ResourceKind
from tests.harness import Org, RunningServer


def _create(org: Org, **fields: object) -> dict:
    body = {"name": "Shop", "hostname_suffix": org.server.unique("shop"), **fields}
    response = org.api.post("/api/projects", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_get_list_project(org: Org) -> None:
    project = _create(org)
    assert project["name"] == "Shop"
    assert project["region"] == org.server.settings.default_region
    assert "certificate_status" not in project  # only once HTTPS provisioning started
    assert org.api.get(f"/api/projects/{project['id']}").json() == project
    listed = org.api.get("/api/projects")
    assert listed.status_code == 200
    assert isinstance(listed.json(), list)  # a bare array
    assert [p["id"] for p in listed.json()] == [project["id"]]
    assert {"id", "name", "hostname_suffix"} <= set(listed.json()[0])


def test_reads_answer_what_the_response_models_make(org: Org) -> None:
    """GET one project and the list serialise their models themselves (once): the bytes are
    those FastAPI makes from the same model for the create's answer, and a list item is the
    project without its settings."""
    created = org.api.post(
        "/api/projects", json={"name": "Bytes", "hostname_suffix": org.server.unique("bytes")}
    )
    assert created.status_code == 201, created.text
    project = created.json()
    one = org.api.get(f"/api/projects/{project['id']}")
    assert one.status_code == 200
    assert one.headers["content-type"] == created.headers["content-type"] == "application/json"
    assert one.content == created.content
    assert project["preview_ttl_hours"] is None  # shown although null
    listed = org.api.get("/api/projects")
    assert listed.headers["content-type"] == "application/json"
    settings = {"git_settings", "preview_ttl_hours", "max_previews"}
    assert listed.json() == [{k: v for k, v in project.items() if k not in settings}]


def test_region_is_optional_and_validated(org: Org) -> None:
    assert _create(org, region="eu-west-1")["region"] == "eu-west-1"
    bad = org.api.post(
        "/api/projects",
        json={"name": "x", "hostname_suffix": org.server.unique("r"), "region": "mars-1"},
    )
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid_region"


@pytest.mark.parametrize(
    "suffix",
    ["", "Shop", "-shop", "shop-", "sh_op", "sh.op", "shöp", "a" * 64, " shop", "shop/x"],
)
def test_invalid_hostname_suffixes_are_400(org: Org, suffix: str) -> None:
    response = org.api.post("/api/projects", json={"name": "x", "hostname_suffix": suffix})
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_request"
    assert body["details"][0]["field"] == "hostname_suffix"
    assert org.api.get("/api/projects").json() == []


@pytest.mark.parametrize("name", ["\u000b" + "a" * 100, "a" * 100 + " ", "   ", ""])
def test_name_limits_hold_for_what_is_sent(org: Org, name: str) -> None:
    """The published maxLength is the rule for the name as sent (the fuzzer's find: a name of 101
    characters with a leading vertical tab was once stripped to 100 and accepted); spaces alone
    are no name."""
    response = org.api.post("/api/projects", json={"name": name, "hostname_suffix": "x"})
    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["field"] == "name"
    assert org.api.get("/api/projects").json() == []


def test_name_is_trimmed(org: Org) -> None:
    assert _create(org, name="  Shop \t")["name"] == "Shop"


def test_longest_valid_suffix_is_accepted(org: Org) -> None:
    """The longest is what the project's certificate can cover: `*.<suffix>.<domain>` in ACM's
    64 characters (49 under the tests' `capstan.test`)."""
    longest = 64 - len(f"*..{org.server.settings.domain}")
    suffix = (org.server.unique("x").replace("-", "") + "a" * 63)[:longest]
    assert _create(org, hostname_suffix=suffix)["hostname_suffix"] == suffix


def test_duplicate_suffix_is_409_across_organizations(org: Org, other_org: Org) -> None:
    project = _create(org)
    clash = other_org.api.post(
        "/api/projects", json={"name": "Mine", "hostname_suffix": project["hostname_suffix"]}
    )
    assert clash.status_code == 409
    assert clash.json()["error"] == "hostname_suffix_taken"
    assert other_org.api.get("/api/projects").json() == []


def test_patch_renames_and_changes_suffix(org: Org) -> None:
    project = _create(org)
    new_suffix = org.server.unique("renamed")
    patched = org.api.patch(
        f"/api/projects/{project['id']}", json={"name": "Store", "hostname_suffix": new_suffix}
    )
    assert patched.status_code == 200
    assert patched.json()["name"] == "Store"
    assert patched.json()["hostname_suffix"] == new_suffix
    assert patched.json()["updated_at"] >= project["updated_at"]
    # The old suffix is free again.
    assert _create(org, hostname_suffix=project["hostname_suffix"])
    # An empty patch changes nothing.
    assert org.api.patch(f"/api/projects/{project['id']}", json={}).json()["name"] == "Store"


def test_patch_to_a_taken_suffix_is_409_and_changes_nothing(org: Org, other_org: Org) -> None:
    mine = _create(org)
    theirs = _create(other_org)
    clash = org.api.patch(
        f"/api/projects/{mine['id']}",
        json={"name": "Renamed", "hostname_suffix": theirs["hostname_suffix"]},
    )
    assert clash.status_code == 409
    assert clash.json()["error"] == "hostname_suffix_taken"
    assert org.api.get(f"/api/projects/{mine['id']}").json() == mine


def test_patch_refuses_bad_bodies(org: Org) -> None:
    project = _create(org)
    url = f"/api/projects/{project['id']}"
    for body in ({"name": ""}, {"name": 3}, {"hostname_suffix": "UPPER"}, {"region": "eu-west-1"}):
        response = org.api.patch(url, json=body)
        assert response.status_code == 400, body
    assert org.api.get(url).json() == project


def test_delete_is_204_then_404(org: Org) -> None:
    project = _create(org)
    deleted = org.api.delete(f"/api/projects/{project['id']}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert org.api.get(f"/api/projects/{project['id']}").status_code == 404
    assert org.api.delete(f"/api/projects/{project['id']}").status_code == 404


@pytest.fixture
def one_web_server_everywhere(server: RunningServer) -> Iterator[None]:
    """A kind, added to the server's list, that counts one web server in every project: the
    rule must refuse the delete."""

    async def count(_session: AsyncSession, _project_id: str) -> int:
        return 1

    kinds = server.app.state.kinds
    server.app.state.kinds = (*kinds, ResourceKind(name="test", dependents={"web servers": count}))
    yield
    server.app.state.kinds = kinds


def test_delete_with_resources_is_409(org: Org, one_web_server_everywhere: None) -> None:
    project = _create(org)
    refused = org.api.delete(f"/api/projects/{project['id']}")
    assert refused.status_code == 409
    assert refused.json() == {
        "error": "project_not_empty",
        "message": "The project still has resources (web servers: 1); delete them first, or "
        "delete the project with them (?with_resources=true).",
    }
    assert org.api.get(f"/api/projects/{project['id']}").status_code == 200


def test_other_organizations_projects_are_404(org: Org, other_org: Org) -> None:
    project = _create(org)
    url = f"/api/projects/{project['id']}"
    assert other_org.api.get(url).status_code == 404
    assert other_org.api.patch(url, json={"name": "mine now"}).status_code == 404
    assert other_org.api.delete(url).status_code == 404
    assert other_org.api.get("/api/projects").json() == []
    assert org.api.get(url).json() == project


def test_malformed_bodies_are_400_never_422(org: Org) -> None:
    cases = [
        (b'{"name": "x", ', "application/json"),
        (b"not json", "application/json"),
        (b"[]", "application/json"),
        (b'"a string"', "application/json"),
        (b"name=x", "application/x-www-form-urlencoded"),
        (b"", "application/json"),
    ]
    for content, content_type in cases:
        response = org.api.post(
            "/api/projects", content=content, headers={"Content-Type": content_type}
        )
        assert response.status_code == 400, content
        assert set(response.json()) >= {"error", "message"}
    for body in (
        {"name": "x"},
        {"hostname_suffix": org.server.unique("s")},
        {"name": 1, "hostname_suffix": org.server.unique("s")},
        {"name": "x", "hostname_suffix": 12},
        {"name": "x", "hostname_suffix": org.server.unique("s"), "color": "red"},
        {"name": None, "hostname_suffix": org.server.unique("s")},
    ):
        response = org.api.post("/api/projects", json=body)
        assert response.status_code == 400, body
        error = response.json()
        assert error["error"] == "invalid_request"
        assert error["details"] and all("field" in d and "message" in d for d in error["details"])
    assert org.api.get("/api/projects").json() == []
