"""Web servers and workers through HTTP against the sandbox: the lifecycle and the bad paths."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Service
from tests.apps.helpers import WEB_REPO, Ready, new_shop, ready, served_at
from tests.apps.processes import account_sessions
from tests.git_host.events_helpers import new_repository
from tests.harness import Org, run_db
from tests.sandbox_git_host.helpers import sandbox_install


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def test_a_web_server_deploys_and_runs(org: Org) -> None:
    # A project outside the control plane's region (us-east-1): everything lands in its own.
    shop = ready(org, region="eu-west-1")
    created = shop.create_web_server(health_path="/healthz")
    assert created["status"] == "deploying"
    suffix = shop.project["hostname_suffix"]
    host = f"web.{suffix}.{shop.org.server.settings.domain}"
    assert created["url"] == served_at(org, host)  # where the dev server answers for it
    assert created["health_path"] == "/healthz"
    assert created["auto_deploy"] is False
    path = f"{shop.base}/web_servers/{created['id']}"
    running = shop.wait_for(path, "running", "failed")
    assert running["status"] == "running", shop.org.api.get(f"{path}/deployments").json()
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert len(deployments) == 1
    (first,) = deployments
    assert first["trigger"] == "create"
    assert first["status"] == "running"
    assert re.fullmatch(r"[0-9a-f]{40}", first["commit_sha"])
    assert first["finished_at"] and first["error"] is None
    # The URL answers where it says: the dev server, at the port the URL names.
    served = urlsplit(running["url"])
    page = httpx.get(
        f"http://127.0.0.1:{served.port}/", headers={"Host": served.netloc}, timeout=30
    )
    assert page.status_code == 200 and first["id"] in page.text
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    assert org.server.settings.sandbox_cloud_url
    cluster = f"capstan-{shop.project['id']}"
    with account_sessions(org.server.settings.sandbox_cloud_url, account_id) as (customer, _):
        services = customer.client("ecs", region="eu-west-1").list_services(cluster=cluster)
        assert len(services["serviceArns"]) == 1
        assert ":eu-west-1:" in services["serviceArns"][0]
        assert customer.client("ecs", region="us-east-1").list_clusters()["clusterArns"] == []


def test_an_image_without_a_shell_or_curl_runs(shop: Ready) -> None:
    """The distroless sample (no shell, no curl): its health is the load balancer's to judge,
    and a plain start command runs without a shell."""
    repo = "capstan-samples/hello-distroless"
    web = shop.create_web_server(repo=repo, health_path="/")
    path = f"{shop.base}/web_servers/{web['id']}"
    running = shop.wait_for(path, "running", "failed")
    assert running["status"] == "running", shop.org.api.get(f"{path}/deployments").json()
    worker = shop.create_worker(repo=repo, start_command="/server --queue jobs")
    worker_path = f"{shop.base}/workers/{worker['id']}"
    assert shop.wait_for(worker_path, "running", "failed")["status"] == "running"


def test_a_worker_deploys_without_a_url(shop: Ready) -> None:
    created = shop.create_worker()
    assert "url" not in created
    assert created["start_command"] == "python worker.py"
    running = shop.wait_for(f"{shop.base}/workers/{created['id']}", "running", "failed")
    assert running["status"] == "running"


def test_a_broken_build_fails_with_the_reason(shop: Ready) -> None:
    created = shop.create_web_server(branch="broken-build")
    path = f"{shop.base}/web_servers/{created['id']}"
    assert shop.wait_for(path, "running", "failed")["status"] == "failed"
    (deployment,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert deployment["status"] == "failed"
    assert "Build failed" in deployment["error"]


def test_patch_of_compute_redeploys_and_auto_deploy_alone_does_not(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    quiet = shop.org.api.patch(path, json={"auto_deploy": True})
    assert quiet.status_code == 200
    assert quiet.json()["status"] == "running" and quiet.json()["auto_deploy"] is True
    assert len(shop.org.api.get(f"{path}/deployments").json()["deployments"]) == 1
    patched = shop.org.api.patch(path, json={"cpu": 512, "memory": 1024})
    assert patched.status_code == 200
    assert patched.json()["status"] == "deploying"
    assert (patched.json()["cpu"], patched.json()["memory"]) == (512, 1024)
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
    triggers = [d["trigger"] for d in shop.org.api.get(f"{path}/deployments").json()["deployments"]]
    assert triggers == ["patch", "create"]


def test_two_patches_in_a_row_converge_once(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    assert shop.org.api.patch(path, json={"health_path": "/one"}).status_code == 200
    assert shop.org.api.patch(path, json={"health_path": "/two"}).status_code == 200
    final = shop.wait_for(path, "running", "failed")
    assert final["status"] == "running" and final["health_path"] == "/two"
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert [d["status"] for d in deployments] == ["running", "superseded", "superseded"]


def test_redeploy_and_environment(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    redeploy = shop.org.api.post(f"{path}/redeploy")
    assert redeploy.status_code == 202 and redeploy.json() == {"status": "deploying"}
    shop.wait_for(path, "running")
    variables = [{"name": "DATABASE_URL", "value": "postgres://x"}, {"name": "DEBUG", "value": ""}]
    put = shop.org.api.put(f"{path}/environment", json={"environment": variables})
    assert put.status_code == 202 and put.json() == {"status": "deploying"}
    assert shop.org.api.get(f"{path}/environment").json() == {"environment": variables}
    # Full replacement, not a merge.
    replaced = [{"name": "ONLY", "value": "this"}]
    shop.org.api.put(f"{path}/environment", json={"environment": replaced})
    assert shop.org.api.get(f"{path}/environment").json() == {"environment": replaced}
    shop.wait_for(path, "running")
    triggers = [d["trigger"] for d in shop.org.api.get(f"{path}/deployments").json()["deployments"]]
    assert triggers[:3] == ["environment", "environment", "redeploy"]


def test_an_environment_at_the_limits_deploys(shop: Ready) -> None:
    """The largest environment the API takes fits the cloud's limits (which the sandbox keeps):
    200 variables, names of 16 KiB together, a value of 8 KiB, and an empty value."""
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    long_names = [{"name": "L" * 246 + f"{i:04}", "value": f"v{i}"} for i in range(60)]
    short = [{"name": f"SHORT_{i:03}", "value": f"s{i}"} for i in range(137)]
    variables = [
        *long_names,
        *short,
        {"name": "BIG", "value": "é" * 4096},  # 8192 bytes: an advanced parameter
        {"name": "MEDIUM", "value": "m" * 4097},
        {"name": "DEBUG", "value": ""},  # no parameter can hold it: given in plain
    ]
    assert len(variables) == 200
    assert 16_000 < sum(len(v["name"]) for v in variables) <= 16 * 1024
    put = shop.org.api.put(f"{path}/environment", json={"environment": variables})
    assert put.status_code == 202, put.text
    shop.wait_for(path, "running", timeout=120)
    latest = shop.org.api.get(f"{path}/deployments").json()["deployments"][0]
    assert (latest["trigger"], latest["status"]) == ("environment", "running"), latest
    assert shop.org.api.get(f"{path}/environment").json() == {"environment": variables}


@pytest.mark.parametrize(
    "environment",
    [
        [{"name": "1BAD", "value": "x"}],
        [{"name": "OK", "value": 1}],
        [{"name": "A", "value": "x"}, {"name": "A", "value": "y"}],
        [{"name": "A"}],
        "not a list",
        [{"name": "BIG", "value": "x" * 8193}],
        [{"name": "BIG", "value": "é" * 4097}],  # 8194 bytes
        [{"name": f"V{i}", "value": "x"} for i in range(201)],
        [{"name": "N" * 250 + f"{i:03}", "value": "x"} for i in range(65)],  # 16445 in names
    ],
    ids=[
        "bad name",
        "number value",
        "duplicate",
        "no value",
        "not a list",
        "value over 8 KiB",
        "multibyte value over 8 KiB",
        "201 variables",
        "names over 16 KiB",
    ],
)
def test_bad_environments_are_400(shop: Ready, environment: object) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}/environment"
    response = shop.org.api.put(path, json={"environment": environment})
    assert response.status_code == 400
    assert shop.org.api.get(path).json() == {"environment": []}


def test_port_is_capstans_on_a_web_server_and_free_on_a_worker(shop: Ready) -> None:
    """A web server listens on the PORT Capstan gives it (its load balancer's target port), so
    the user cannot set another; a worker has no port and may use the name."""
    web = f"{shop.base}/web_servers/{shop.create_web_server()['id']}/environment"
    variables = [{"name": "PORT", "value": "3000"}, {"name": "OTHER", "value": "x"}]
    refused = shop.org.api.put(web, json={"environment": variables})
    assert refused.status_code == 400, refused.text
    error = refused.json()
    assert error["error"] == "reserved_variable" and "$PORT" in error["message"]
    assert error["details"] == [
        {"field": "environment", "type": "reserved_variable", "message": "PORT"}
    ]
    assert shop.org.api.get(web).json() == {"environment": []}
    worker = f"{shop.base}/workers/{shop.create_worker()['id']}"
    accepted = shop.org.api.put(f"{worker}/environment", json={"environment": variables})
    assert accepted.status_code == 202, accepted.text
    shop.wait_for(worker, "running")
    assert shop.org.api.get(f"{worker}/environment").json() == {"environment": variables}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"cpu": 300}, "cpu"),
        ({"cpu": 256, "memory": 4096}, "memory"),
        ({"name": "Web_1"}, "name"),
        ({"name": "-web"}, "name"),
        ({"repo": "not-a-repo"}, "repo"),
        ({"branch": "bad..branch"}, "branch"),
        ({"health_path": "no-slash"}, "health_path"),
        ({"cpu": "256"}, "cpu"),
        ({"auto_deploy": "yes"}, "auto_deploy"),
        ({"color": "red"}, "color"),
    ],
)
def test_bad_web_server_bodies_are_400(shop: Ready, fields: dict, field: str) -> None:
    body = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
    body.update(fields)
    response = shop.org.api.post(f"{shop.base}/web_servers", json=body)
    assert response.status_code == 400, response.text
    assert field in response.text
    assert shop.org.api.get(f"{shop.base}/web_servers/x").status_code == 404


def test_invalid_memory_names_the_valid_values(shop: Ready) -> None:
    body = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 1024, "memory": 1024}
    response = shop.org.api.post(f"{shop.base}/web_servers", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_memory"
    assert "2048, 3072, 4096, 5120, 6144, 7168, 8192" in response.json()["message"]


def test_missing_fields_are_400(shop: Ready) -> None:
    for missing in ("name", "repo", "branch", "cpu", "memory"):
        body = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
        del body[missing]
        response = shop.org.api.post(f"{shop.base}/web_servers", json=body)
        assert response.status_code == 400, missing
        assert response.json()["details"][0]["field"] == missing
    worker = {"name": "w", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
    assert shop.org.api.post(f"{shop.base}/workers", json=worker).status_code == 400


def test_unreachable_repo_is_400_and_duplicate_name_409(shop: Ready) -> None:
    unreachable = shop.org.api.post(
        f"{shop.base}/web_servers",
        json={"name": "web", "repo": "someone/else", "branch": "main", "cpu": 256, "memory": 512},
    )
    assert unreachable.status_code == 400
    assert unreachable.json()["error"] == "repo_not_accessible"
    # One another installation reads only, and names that are no repository's (a dot segment
    # would take the read out of `/repos/`): not accessible either.
    elsewhere = new_repository(shop.org.server, sandbox_install(shop.org.server))
    for repo in (elsewhere, "capstan-samples/..", "../hello-web"):
        refused = shop.org.api.post(
            f"{shop.base}/web_servers",
            json={"name": "web", "repo": repo, "branch": "main", "cpu": 256, "memory": 512},
        )
        assert refused.status_code == 400, repo
        assert refused.json()["error"] == "repo_not_accessible", repo
    shop.create_web_server()
    again = shop.org.api.post(
        f"{shop.base}/web_servers",
        json={"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512},
    )
    assert again.status_code == 409 and again.json()["error"] == "name_taken"
    # Names are unique per kind: a worker may share it.
    assert shop.create_worker(name="web")["name"] == "web"


def test_no_cloud_account_is_409(org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "p", "hostname_suffix": org.server.unique("p")}
    ).json()
    response = org.api.post(
        f"/api/projects/{project['id']}/web_servers",
        json={"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512},
    )
    assert response.status_code == 409
    assert response.json()["error"] == "cloud_account_not_connected"


def test_other_organizations_see_nothing(shop: Ready, other_org: Org) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    for method, suffix, body in [
        ("GET", "", None),
        ("PATCH", "", {"cpu": 512, "memory": 1024}),
        ("DELETE", "", None),
        ("POST", "/redeploy", None),
        ("GET", "/deployments", None),
        ("GET", "/environment", None),
        ("PUT", "/environment", {"environment": []}),
        ("GET", "/logs", None),
        ("GET", "/metrics", None),
        ("GET", "/cost", None),
        ("POST", "/previews", {"branch": "main"}),
    ]:
        response = other_org.api.request(method, path + suffix, json=body)
        assert response.status_code == 404, (method, suffix, response.text)
    assert shop.org.api.get(path).status_code == 200


def test_delete_hides_at_once_and_blocks_nothing_after(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    refused = shop.org.api.delete(shop.base)
    assert refused.status_code == 409 and refused.json()["error"] == "project_not_empty"
    assert shop.org.api.delete(path).status_code == 204
    assert shop.org.api.get(path).status_code == 404
    assert shop.org.api.delete(path).status_code == 404
    # The name is free again at once.
    assert shop.create_web_server()["name"] == "web"


def _dns_record(shop: Ready, hostname: str) -> object:
    from capstan.cloud.aws import route53
    from tests.cloud_account.flow import cloud_of

    cloud = cloud_of(shop.org.server)
    zone = route53.find_zone(cloud.operator, shop.org.server.settings.domain)
    return None if zone is None else route53.find_record(cloud.operator, zone, hostname)


def test_renaming_the_suffix_moves_the_dns_record(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    domain = shop.org.server.settings.domain
    old_host = f"web.{shop.project['hostname_suffix']}.{domain}"
    assert _dns_record(shop, old_host) is not None
    new_suffix = shop.org.server.unique("moved")
    renamed = shop.org.api.patch(shop.base, json={"hostname_suffix": new_suffix})
    assert renamed.status_code == 200
    new_host = f"web.{new_suffix}.{domain}"
    assert shop.org.api.get(path).json()["url"] == served_at(shop.org, new_host)  # at once
    deadline = time.monotonic() + 30
    while _dns_record(shop, new_host) is None or _dns_record(shop, old_host) is not None:
        assert time.monotonic() < deadline, "the DNS record did not move"
        time.sleep(0.2)


def test_environment_values_are_encrypted_at_rest(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    secret = "postgres://user:s3cr3t-value@db/prod"
    shop.org.api.put(f"{path}/environment", json={"environment": [{"name": "DB", "value": secret}]})

    async def stored(session: AsyncSession) -> bytes | None:
        return await session.scalar(select(Service.environment).where(Service.id == created["id"]))

    sealed = run_db(shop.org.server.settings, stored)
    assert sealed is not None and secret.encode() not in sealed and b"DB" not in sealed
    assert shop.org.api.get(f"{path}/environment").json()["environment"][0]["value"] == secret
