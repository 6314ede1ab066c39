"""Releases: honest history (one live deployment per target), one deployment by id, rollback of
code, settings and environment."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.cloud.aws import names
from capstan.cloud.aws.session import Endpoint
from tests.apps.helpers import Ready, new_shop, ready
from tests.apps.processes import REGION, account_sessions
from tests.apps.sites import account, create_site, distribution_of, served
from tests.harness import Org
from tests.sandbox.aws import calls, calls_since


@pytest.fixture
def shop(connected: Org) -> Ready:
    """A new project in the module's one connected organization."""
    return new_shop(connected)


@pytest.fixture
def own_shop(org: Org) -> Ready:
    """A project in an account of its own, where every call counted is this test's."""
    return ready(org)


def test_the_live_deployment_is_the_only_running_one_and_one_reads_by_id(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    (first,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert first["status"] == "running"
    assert shop.org.api.patch(path, json={"cpu": 512, "memory": 1024}).status_code == 200
    shop.wait_for(path, "running")
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert [(d["trigger"], d["status"]) for d in deployments] == [
        ("patch", "running"),
        ("create", "replaced"),
    ]
    # Both releases' images carry the tag that the repository's lifecycle policy keeps.
    expected: dict[str, set[str]] = {}
    for deployment in deployments:  # a rebuild of the same commit may give the same digest
        digest = deployment["image"].partition("@")[2]
        expected.setdefault(digest, set()).add(f"release-{deployment['id']}")
    assert _release_tags(shop, created["id"]) == expected
    one = shop.org.api.get(f"{path}/deployments/{first['id']}")
    assert one.status_code == 200, one.text
    assert one.json()["id"] == first["id"] and one.json()["status"] == "replaced"
    missing = shop.org.api.get(f"{path}/deployments/dep_nothing")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    # A deployment is found only under its own service.
    other = shop.create_worker()
    elsewhere = f"{shop.base}/workers/{other['id']}/deployments/{first['id']}"
    assert shop.org.api.get(elsewhere).status_code == 404


def test_a_first_release_lists_nothing_to_prune_and_the_next_one_prunes(
    own_shop: Ready,
) -> None:
    """A target's first deployment is its only one: no other version of its environment can be
    in SSM, so its rollout lists none to remove. The release after it lists and removes what no
    release needs, as ever. Counted in the organization's own account."""
    shop = own_shop
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    endpoint = Endpoint(region=REGION, url=sandbox_url)
    before = calls(endpoint, account_id)
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    first = calls_since(endpoint, before, account_id)
    assert first["ecs:CreateService"] == 1  # counted: the deployment's calls are in the account
    assert "ssm:GetParametersByPath" not in first, first
    # Its image is kept by the repository's lifecycle policy all the same.
    (release,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert _release_tags(shop, created["id"]) == {
        release["image"].partition("@")[2]: {f"release-{release['id']}"}
    }

    before = calls(endpoint, account_id)
    put = shop.org.api.put(
        f"{path}/environment", json={"environment": [{"name": "GREETING", "value": "b"}]}
    )
    assert put.status_code == 202, put.text
    shop.wait_for(path, "running")
    assert _newest(shop, path)["id"] != release["id"]
    assert calls_since(endpoint, before, account_id)["ssm:GetParametersByPath"] == 1


def _live_task(shop: Ready, service_id: str) -> dict[str, Any]:
    """What the service's ECS service runs now: image, cpu, memory, and each secret variable's
    value as the task would be given it (resolved from SSM by the name the definition gives)."""
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        ecs = customer.client("ecs")
        (service,) = ecs.describe_services(
            cluster=names.cluster_name(shop.project["id"]),
            services=[names.service_name(service_id)],
        )["services"]
        definition = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])
        (container,) = definition["taskDefinition"]["containerDefinitions"]
        secrets = {item["name"]: item["valueFrom"] for item in container.get("secrets", [])}
        ssm = customer.client("ssm")
        values = {}
        for name, parameter_name in secrets.items():
            parameter = ssm.get_parameter(Name=parameter_name, WithDecryption=True)
            values[name] = parameter["Parameter"]["Value"]
        builds = customer.client("codebuild").list_builds_for_project(
            projectName=names.service_name(service_id)
        )["ids"]
    return {
        "image": container["image"],
        "cpu": int(definition["taskDefinition"]["cpu"]),
        "environment": values,
        "builds": len(builds),
    }


def _release_tags(shop: Ready, service_id: str) -> dict[str, set[str]]:
    """The `release-…` tags of the service's images, by digest."""
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        details = customer.client("ecr").describe_images(
            repositoryName=names.repository_name(service_id)
        )["imageDetails"]
    tags = {
        detail["imageDigest"]: {
            tag for tag in detail.get("imageTags", []) if tag.startswith("release-")
        }
        for detail in details
    }
    return {digest: found for digest, found in tags.items() if found}


def _newest(shop: Ready, path: str) -> dict[str, Any]:
    return dict(shop.org.api.get(f"{path}/deployments").json()["deployments"][0])


def test_rollback_deploys_the_release_again_without_a_build_and_forward_again(
    shop: Ready,
) -> None:
    api = shop.org.api
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    put = api.put(f"{path}/environment", json={"environment": [{"name": "GREETING", "value": "a"}]})
    assert put.status_code == 202
    shop.wait_for(path, "running")
    release_a = _newest(shop, path)
    assert release_a["image"].partition("@")[2].startswith("sha256:"), release_a
    assert release_a["settings"]["cpu"] == 256
    # Release B: new environment values and more cpu.
    api.put(f"{path}/environment", json={"environment": [{"name": "GREETING", "value": "b"}]})
    assert api.patch(path, json={"cpu": 512, "memory": 1024}).status_code == 200
    shop.wait_for(path, "running")
    release_b = _newest(shop, path)
    assert _live_task(shop, created["id"])["environment"] == {"GREETING": "b"}
    builds_before = _live_task(shop, created["id"])["builds"]

    answer = api.post(f"{path}/deployments/{release_a['id']}/rollback")
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["status"] == "deploying"
    assert body["deployment"]["trigger"] == "rollback"
    assert body["deployment"]["rollback_of"] == release_a["id"]
    # The service's settings and environment are the release's at once.
    shown = api.get(path).json()
    assert (shown["cpu"], shown["memory"]) == (256, 512)
    assert api.get(f"{path}/environment").json() == {
        "environment": [{"name": "GREETING", "value": "a"}]
    }
    shop.wait_for(path, "running")
    live = _live_task(shop, created["id"])
    assert live == {
        "image": release_a["image"],
        "cpu": 256,
        "environment": {"GREETING": "a"},
        "builds": builds_before,  # no build
    }
    statuses = {d["id"]: d["status"] for d in api.get(f"{path}/deployments").json()["deployments"]}
    assert statuses[body["deployment"]["id"]] == "running"
    assert statuses[release_b["id"]] == "replaced"
    assert list(statuses.values()).count("running") == 1

    # And forward again, to B.
    forward = api.post(f"{path}/deployments/{release_b['id']}/rollback")
    assert forward.status_code == 202, forward.text
    shop.wait_for(path, "running")
    assert _live_task(shop, created["id"]) == {
        "image": release_b["image"],
        "cpu": 512,
        "environment": {"GREETING": "b"},
        "builds": builds_before,
    }
    assert api.get(path).json()["cpu"] == 512


def test_rolling_back_to_a_failed_or_unfinished_deployment_is_409(shop: Ready) -> None:
    api = shop.org.api
    created = shop.create_worker()
    path = f"{shop.base}/workers/{created['id']}"
    shop.wait_for(path, "running")
    assert api.patch(path, json={"branch": "broken-build"}).status_code == 200
    shop.wait_for(path, "failed")
    failed = _newest(shop, path)
    refused = api.post(f"{path}/deployments/{failed['id']}/rollback")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "release_not_deployable"
    assert "failed" in refused.json()["message"] and "Build failed" in refused.json()["message"]
    missing = api.post(f"{path}/deployments/dep_nothing/rollback")
    assert missing.status_code == 404
    # The live release (the failed one never replaced it) can be deployed again — until its
    # image is gone from the repository.
    live = next(
        d for d in api.get(f"{path}/deployments").json()["deployments"] if d["status"] == "running"
    )
    account_id = api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        customer.client("ecr").batch_delete_image(
            repositoryName=names.repository_name(created["id"]),
            imageIds=[{"imageDigest": live["image"].partition("@")[2]}],
        )
    gone = api.post(f"{path}/deployments/{live['id']}/rollback")
    assert gone.status_code == 409, gone.text
    assert gone.json()["error"] == "release_not_deployable" and "gone" in gone.json()["message"]


def test_a_static_website_rolls_back_by_pointing_at_the_release_s_output(shop: Ready) -> None:
    api = shop.org.api
    site = create_site(shop)
    path = f"{shop.base}/static_websites/{site['id']}"
    shop.wait_for(path, "running")
    release_a = _newest(shop, path)
    greeting = [{"name": "PUBLIC_GREETING", "value": "Hello, B"}]
    assert api.put(f"{path}/environment", json={"environment": greeting}).status_code == 202
    shop.wait_for(path, "running")
    release_b = _newest(shop, path)
    with account(shop) as (customer, _operator):
        assert "Hello, B" in served(customer, site["id"], "index.html")
        codebuild = customer.client("codebuild")
        project = names.service_name(site["id"])
        builds = len(codebuild.list_builds_for_project(projectName=project)["ids"])

    answer = api.post(f"{path}/deployments/{release_a['id']}/rollback")
    assert answer.status_code == 202, answer.text
    assert answer.json()["deployment"]["rollback_of"] == release_a["id"]
    assert api.get(f"{path}/environment").json() == {"environment": []}
    shop.wait_for(path, "running")
    with account(shop) as (customer, _operator):
        config = distribution_of(customer, site["id"])["DistributionConfig"]
        assert config["Origins"]["Items"][0]["OriginPath"] == f"/{release_a['id']}"
        index = served(customer, site["id"], "index.html")
        assert "Hello, B" not in index and release_a["commit_sha"] in index
        assert len(codebuild.list_builds_for_project(projectName=project)["ids"]) == builds
    statuses = {d["id"]: d["status"] for d in api.get(f"{path}/deployments").json()["deployments"]}
    assert statuses[release_b["id"]] == "replaced"
    assert statuses[answer.json()["deployment"]["id"]] == "running"
