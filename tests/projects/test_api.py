from __future__ import annotations

from tests.harness import Org


def test_create_get_list_project(org: Org) -> None:
    created = org.api.post("/api/projects", json={"name": "Shop", "hostname_suffix": org.server.unique("shop")})
    assert created.status_code == 201, created.text
    project = created.json()
    assert project["region"] == "us-east-1"
    assert "certificate_status" not in project
    got = org.api.get(f"/api/projects/{project['id']}")
    assert got.json() == project
    listed = org.api.get("/api/projects").json()
    assert [p["id"] for p in listed] == [project["id"]]
