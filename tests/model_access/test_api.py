"""Model access through the HTTP API, against the sandbox's Bedrock catalog, on both databases:
both shapes served at once, either body accepted, the whole set replaced, unknown models and
regions refused, other organizations and missing cloud accounts. (The task role's policy that
follows is proven in tests/buckets/test_api.py, which has a web server and so a task role.)"""

from __future__ import annotations

from typing import Any

from capstan.sandbox.cloud.bedrock import catalog
from tests.cloud_account.test_api import connect
from tests.harness import Org

HAIKU = "anthropic.claude-3-haiku-20240307-v1:0"
TITAN_EMBED = "amazon.titan-embed-text-v2:0"
LLAMA = "meta.llama3-1-70b-instruct-v1:0"  # us-west-2 only


def names(region: str) -> dict[str, str]:
    return {model.model_id: model.name for model in catalog(region)}


def enabled(body: dict[str, Any]) -> set[str]:
    return {model["model_id"] for model in body["models"] if model["enabled"]}


def test_both_shapes_and_the_bad_paths(org: Org, other_org: Org) -> None:
    connect(org)
    project = org.api.post(
        "/api/projects", json={"name": "AI", "hostname_suffix": org.server.unique("ai")}
    ).json()
    path = f"/api/projects/{project['id']}/model_access"

    # Never configured: off, in the project's region, the region's whole catalog listed.
    first = org.api.get(path)
    assert first.status_code == 200, first.text
    body = first.json()
    assert {k: body[k] for k in ("enabled", "region", "allowed_model_ids")} == {
        "enabled": False,
        "region": "us-east-1",
        "allowed_model_ids": [],
    }
    assert {m["model_id"]: m["name"] for m in body["models"]} == names("us-east-1")
    assert enabled(body) == set()

    # Shape B: the models to allow.
    put = org.api.put(path, json={"model_ids": [HAIKU, TITAN_EMBED, HAIKU]})
    assert put.status_code == 200, put.text
    body = put.json()
    assert body["enabled"] is True and body["region"] == "us-east-1"
    assert body["allowed_model_ids"] == [HAIKU, TITAN_EMBED]
    assert enabled(body) == {HAIKU, TITAN_EMBED}
    assert org.api.get(path).json() == body

    # Shape A: another region (its own catalog), replacing the whole set.
    put = org.api.put(
        path, json={"enabled": True, "region": "eu-west-1", "allowed_model_ids": [HAIKU]}
    )
    assert put.status_code == 200, put.text
    body = put.json()
    assert {m["model_id"] for m in body["models"]} == set(names("eu-west-1"))
    assert (body["region"], body["allowed_model_ids"], enabled(body)) == (
        "eu-west-1",
        [HAIKU],
        {HAIKU},
    )
    # Disabled keeps the list but enables nothing; shape B keeps the configured region.
    put = org.api.put(
        path, json={"enabled": False, "region": "eu-west-1", "allowed_model_ids": [HAIKU]}
    )
    assert (put.json()["allowed_model_ids"], enabled(put.json())) == ([HAIKU], set())
    put = org.api.put(path, json={"model_ids": []})
    assert (put.json()["enabled"], put.json()["region"], enabled(put.json())) == (
        False,
        "eu-west-1",
        set(),
    )

    # Unknown models (also a model the region does not serve) and regions: 400, nothing kept.
    for bad, unknown in (
        ({"model_ids": ["acme.no-such-model-v1", HAIKU]}, "acme.no-such-model-v1"),
        ({"enabled": True, "region": "us-east-1", "allowed_model_ids": [LLAMA]}, LLAMA),
    ):
        refused = org.api.put(path, json=bad)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "unknown_model"
        assert unknown in refused.json()["message"] and HAIKU not in refused.json()["message"]
    refused = org.api.put(
        path, json={"enabled": True, "region": "xx-nowhere-1", "allowed_model_ids": []}
    )
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_region")
    for bad_body in (
        {},
        {"model_ids": [HAIKU], "enabled": True},
        {"model_ids": [HAIKU], "region": "us-east-1", "allowed_model_ids": [], "enabled": True},
        {"enabled": True, "region": "us-east-1"},
        {"model_ids": "anthropic"},
        {"allowed_model_ids": [HAIKU]},
    ):
        refused = org.api.put(path, json=bad_body)
        assert refused.status_code == 400, (bad_body, refused.text)
        assert refused.json()["error"] == "invalid_request"
    assert org.api.get(path).json()["allowed_model_ids"] == []

    # Another organization: not found; without a cloud account: a conflict.
    assert other_org.api.get(path).status_code == 404
    assert other_org.api.put(path, json={"model_ids": []}).status_code == 404
    theirs = other_org.api.post(
        "/api/projects", json={"name": "AI", "hostname_suffix": org.server.unique("ai")}
    ).json()
    for response in (
        other_org.api.get(f"/api/projects/{theirs['id']}/model_access"),
        other_org.api.put(f"/api/projects/{theirs['id']}/model_access", json={"model_ids": []}),
    ):
        assert response.status_code == 409, response.text
        assert response.json()["error"] == "cloud_account_not_connected"

    # The configuration goes with its project (it does not keep the project from going).
    assert org.api.delete(f"/api/projects/{project['id']}").status_code == 204
    assert org.api.get(path).status_code == 404
