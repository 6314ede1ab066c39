"""A monorepo's services through HTTP against the sandbox: each kind builds from its directory of
`capstan-samples/hello-monorepo`, a Dockerfile missing at its path fails naming it, and a path
that leaves the repository is 400."""

from __future__ import annotations

from typing import Any

import pytest

from capstan_sandbox.cloud.simulator import images
from tests.apps.helpers import Ready, new_shop
from tests.apps.sites import account, create_site, served
from tests.harness import Org

MONOREPO = "capstan-samples/hello-monorepo"


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _image_files(shop: Ready, path: str) -> dict[str, bytes]:
    """The files of the image the service's deployment runs, as the sandbox's build made them
    (remembered by the tag the build pushed: the image's repository and the commit)."""
    (deployment,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    repository = deployment["image"].split("@")[0].rsplit(":", 1)[0]
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    uri = f"{repository}:{deployment['commit_sha']}"
    image = images.image(account_id, shop.project["region"], uri)
    assert image is not None, deployment
    return image.files()


def test_a_web_server_builds_from_its_directory(shop: Ready) -> None:
    web = shop.create_web_server(repo=MONOREPO, root_dir="services/api/")
    assert web["root_dir"] == "services/api" and web["dockerfile_path"] == "Dockerfile"
    path = f"{shop.base}/web_servers/{web['id']}"
    running = shop.wait_for(path, "running", "failed")
    assert running["status"] == "running", shop.org.api.get(f"{path}/deployments").json()
    files = _image_files(shop, path)
    assert b"services/api" in files["app/app.py"]  # services/api/app.py, built there
    assert not any(name.startswith("app/services/") for name in files)


def test_a_worker_builds_from_its_directory(shop: Ready) -> None:
    worker = shop.create_worker(
        repo=MONOREPO, root_dir="services/jobs", dockerfile_path="./Dockerfile"
    )
    assert worker["dockerfile_path"] == "Dockerfile"
    path = f"{shop.base}/workers/{worker['id']}"
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
    assert b"services/jobs" in _image_files(shop, path)["app/worker.py"]


def test_a_static_website_builds_in_its_directory(shop: Ready) -> None:
    site = create_site(shop, repo=MONOREPO, root_dir="site", publish_dir="dist")
    assert site["root_dir"] == "site" and "dockerfile_path" not in site
    path = f"{shop.base}/static_websites/{site['id']}"
    assert shop.wait_for(path, "running", "failed", timeout=30)["status"] == "running"
    with account(shop) as (customer, _operator):
        assert "The site of a monorepo, built in site/." in served(
            customer, site["id"], "index.html"
        )


def test_a_wrong_dockerfile_path_fails_naming_it(shop: Ready) -> None:
    web = shop.create_web_server(
        repo=MONOREPO, root_dir="services/api", dockerfile_path="Dockerfile.prod"
    )
    path = f"{shop.base}/web_servers/{web['id']}"
    failed = shop.wait_for(path, "running", "failed")
    assert failed["status"] == "failed"
    assert "services/api/Dockerfile.prod" in failed["error"], failed
    (deployment,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert deployment["status"] == "failed"
    assert (
        deployment["error"] == "Build failed: error: no Dockerfile at services/api/Dockerfile.prod"
    )


@pytest.mark.parametrize(
    ("kind", "fields", "field"),
    [
        ("web_servers", {"root_dir": "../elsewhere"}, "root_dir"),
        ("web_servers", {"root_dir": "/etc"}, "root_dir"),
        ("web_servers", {"dockerfile_path": "services/../../Dockerfile"}, "dockerfile_path"),
        ("web_servers", {"dockerfile_path": "."}, "dockerfile_path"),
        ("workers", {"root_dir": "a/../.."}, "root_dir"),
        ("workers", {"watch_paths": ["/services/**"]}, "watch_paths"),
        ("static_websites", {"root_dir": "../site"}, "root_dir"),
        ("static_websites", {"watch_paths": ["site/../../x"]}, "watch_paths"),
    ],
)
def test_paths_that_leave_the_repository_are_400(
    shop: Ready, kind: str, fields: dict[str, Any], field: str
) -> None:
    bodies: dict[str, dict[str, Any]] = {
        "web_servers": {
            "name": "web",
            "repo": MONOREPO,
            "branch": "main",
            "cpu": 256,
            "memory": 512,
        },
        "workers": {
            "name": "jobs",
            "repo": MONOREPO,
            "branch": "main",
            "start_command": "python worker.py",
            "cpu": 256,
            "memory": 512,
        },
        "static_websites": {
            "name": "docs",
            "repo": MONOREPO,
            "branch": "main",
            "build_command": "npm run build",
            "publish_dir": "dist",
        },
    }
    answer = shop.org.api.post(f"{shop.base}/{kind}", json={**bodies[kind], **fields})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_request"
    assert field in answer.json()["message"]
    assert shop.org.api.get(f"{shop.base}/{kind}").json()[kind] == []


def test_a_patch_of_the_dockerfile_redeploys_and_of_watch_paths_does_not(shop: Ready) -> None:
    web = shop.create_web_server(repo=MONOREPO, root_dir="services/api")
    path = f"{shop.base}/web_servers/{web['id']}"
    patched = shop.org.api.patch(path, json={"watch_paths": ["services/api/**"]})
    assert patched.status_code == 200, patched.text
    assert patched.json()["watch_paths"] == ["services/api/**"]
    assert len(shop.org.api.get(f"{path}/deployments").json()["deployments"]) == 1
    bad = shop.org.api.patch(path, json={"root_dir": "../x"})
    assert bad.status_code == 400, bad.text
    assert bad.json()["message"] == "root_dir must stay inside the repository (no '..')."
    null = shop.org.api.patch(path, json={"watch_paths": None})
    assert null.status_code == 400 and null.json()["details"][0]["field"] == "watch_paths"
    moved = shop.org.api.patch(path, json={"dockerfile_path": "Dockerfile.missing"})
    assert moved.status_code == 200 and moved.json()["dockerfile_path"] == "Dockerfile.missing"
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert len(deployments) == 2 and deployments[0]["trigger"] == "patch"
