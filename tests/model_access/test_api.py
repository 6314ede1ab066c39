"""Model access through the HTTP API, against the sandbox's Bedrock catalog, on both databases:
both shapes served at once, either body accepted, the whole set replaced, unknown models and
regions refused, other organizations and missing cloud accounts. (The task role's policy that
follows is proven in tests/buckets/test_api.py, which has a web server and so a task role.)"""

from __future__ import annotations

from typing import Any

from capstan_sandbox.cloud.bedrock import catalog
from capstan_sandbox.cloud.bedrock_profiles import profiles
from tests.apps.helpers import new_shop
from tests.harness import Org

HAIKU = "anthropic.claude-3-haiku-20240307-v1:0"
TITAN_EMBED = "amazon.titan-embed-text-v2:0"
LLAMA = "meta.llama3-1-70b-instruct-v1:0"  # us-west-2 only
SONNET_37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"  # only through inference profiles
US_SONNET_37 = f"us.{SONNET_37}"


def names(region: str) -> dict[str, str]:
    """What a task role may invoke in `region`: models on demand, and inference profiles."""
    served = {m.model_id: m.name for m in catalog(region) if "ON_DEMAND" in m.inference_types}
    return served | {profile.profile_id: profile.name for profile in profiles(region)}


def enabled(body: dict[str, Any]) -> set[str]:
    return {model["model_id"] for model in body["models"] if model["enabled"]}


def new_project_path(org: Org) -> str:
    """A new project's model access path."""
    return f"{new_shop(org, name='AI', stem='ai').base}/model_access"


def put_ok(org: Org, path: str, body: dict[str, Any]) -> dict[str, Any]:
    put = org.api.put(path, json=body)
    assert put.status_code == 200, put.text
    return dict(put.json())


def test_never_configured_is_off_with_the_region_s_whole_catalog(connected: Org) -> None:
    first = connected.api.get(new_project_path(connected))
    assert first.status_code == 200, first.text
    body = first.json()
    assert {k: body[k] for k in ("enabled", "region", "allowed_model_ids")} == {
        "enabled": False,
        "region": "us-east-1",
        "allowed_model_ids": [],
    }
    assert {m["model_id"]: m["name"] for m in body["models"]} == names("us-east-1")
    assert enabled(body) == set()


def test_shape_b_enables_the_listed_models_once_each(connected: Org) -> None:
    path = new_project_path(connected)
    body = put_ok(connected, path, {"model_ids": [HAIKU, TITAN_EMBED, HAIKU]})
    assert body["enabled"] is True and body["region"] == "us-east-1"
    assert body["allowed_model_ids"] == [HAIKU, TITAN_EMBED]
    assert enabled(body) == {HAIKU, TITAN_EMBED}
    assert connected.api.get(path).json() == body


def test_shape_a_moves_region_and_replaces_the_whole_set(connected: Org) -> None:
    path = new_project_path(connected)
    put_ok(connected, path, {"model_ids": [HAIKU, TITAN_EMBED]})
    body = put_ok(
        connected, path, {"enabled": True, "region": "eu-west-1", "allowed_model_ids": [HAIKU]}
    )
    assert {m["model_id"] for m in body["models"]} == set(names("eu-west-1"))
    assert (body["region"], body["allowed_model_ids"], enabled(body)) == (
        "eu-west-1",
        [HAIKU],
        {HAIKU},
    )


def test_inference_profiles_are_listed_and_enabled_by_their_id(connected: Org) -> None:
    path = new_project_path(connected)
    listed = {m["model_id"]: m for m in connected.api.get(path).json()["models"]}
    assert listed[US_SONNET_37]["name"] == "US Anthropic Claude 3.7 Sonnet"
    assert SONNET_37 not in listed  # a profile-only model cannot be invoked by its own id
    body = put_ok(connected, path, {"model_ids": [US_SONNET_37, HAIKU]})
    assert enabled(body) == {US_SONNET_37, HAIKU}
    refused = connected.api.put(path, json={"model_ids": [SONNET_37]})
    assert refused.status_code == 400 and refused.json()["error"] == "unknown_model"
    # Another geography's profile is not offered here.
    refused = connected.api.put(path, json={"model_ids": [f"eu.{SONNET_37}"]})
    assert refused.status_code == 400 and refused.json()["error"] == "unknown_model"


def test_disabled_keeps_the_list_but_enables_nothing(connected: Org) -> None:
    path = new_project_path(connected)
    body = put_ok(
        connected, path, {"enabled": False, "region": "eu-west-1", "allowed_model_ids": [HAIKU]}
    )
    assert (body["allowed_model_ids"], enabled(body)) == ([HAIKU], set())


def test_shape_b_keeps_the_configured_region(connected: Org) -> None:
    path = new_project_path(connected)
    put_ok(connected, path, {"enabled": True, "region": "eu-west-1", "allowed_model_ids": [HAIKU]})
    body = put_ok(connected, path, {"model_ids": []})
    assert (body["enabled"], body["region"], enabled(body)) == (False, "eu-west-1", set())


def test_unknown_models_are_refused_and_nothing_is_kept(connected: Org) -> None:
    path = new_project_path(connected)
    kept = put_ok(connected, path, {"model_ids": [TITAN_EMBED]})
    # Also a model the region does not serve.
    for bad, unknown in (
        ({"model_ids": ["acme.no-such-model-v1", HAIKU]}, "acme.no-such-model-v1"),
        ({"enabled": True, "region": "us-east-1", "allowed_model_ids": [LLAMA]}, LLAMA),
    ):
        refused = connected.api.put(path, json=bad)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "unknown_model"
        assert unknown in refused.json()["message"] and HAIKU not in refused.json()["message"]
    assert connected.api.get(path).json() == kept


def test_an_unknown_region_is_refused(connected: Org) -> None:
    path = new_project_path(connected)
    refused = connected.api.put(
        path, json={"enabled": True, "region": "xx-nowhere-1", "allowed_model_ids": []}
    )
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_region")


def test_bodies_of_neither_shape_are_refused(connected: Org) -> None:
    path = new_project_path(connected)
    for bad_body in (
        {},
        {"model_ids": [HAIKU], "enabled": True},
        {"model_ids": [HAIKU], "region": "us-east-1", "allowed_model_ids": [], "enabled": True},
        {"enabled": True, "region": "us-east-1"},
        {"model_ids": "anthropic"},
        {"allowed_model_ids": [HAIKU]},
    ):
        refused = connected.api.put(path, json=bad_body)
        assert refused.status_code == 400, (bad_body, refused.text)
        assert refused.json()["error"] == "invalid_request"
    assert connected.api.get(path).json()["allowed_model_ids"] == []


def test_another_organization_finds_no_model_access(connected: Org, other_org: Org) -> None:
    path = new_project_path(connected)
    assert other_org.api.get(path).status_code == 404
    assert other_org.api.put(path, json={"model_ids": []}).status_code == 404


def test_model_access_needs_a_connected_cloud_account(other_org: Org) -> None:
    theirs = other_org.api.post(
        "/api/projects", json={"name": "AI", "hostname_suffix": other_org.server.unique("ai")}
    ).json()
    for response in (
        other_org.api.get(f"/api/projects/{theirs['id']}/model_access"),
        other_org.api.put(f"/api/projects/{theirs['id']}/model_access", json={"model_ids": []}),
    ):
        assert response.status_code == 409, response.text
        assert response.json()["error"] == "cloud_account_not_connected"


def test_the_configuration_goes_with_its_project(connected: Org) -> None:
    path = new_project_path(connected)
    put_ok(connected, path, {"model_ids": [HAIKU]})
    # It does not keep the project from going.
    project = path.removesuffix("/model_access")
    assert connected.api.delete(project).status_code == 204
    assert connected.api.get(path).status_code == 404
