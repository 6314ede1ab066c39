"""CodeBuild's concurrency quota reached through the API: an account that may run no build fails
the deployment with the quota's sentence, and the same web server deploys once it may."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan_sandbox.cloud import quotas
from tests.apps.helpers import ready
from tests.harness import Org


@pytest.fixture
def no_builds() -> Iterator[None]:
    """A new account whose CodeBuild concurrency is 0 (AWS gives some new accounts that)."""
    with quotas.changed(codebuild_concurrent_builds=0):
        yield


def test_no_concurrent_builds_fails_the_deployment_until_the_quota_is_raised(
    org: Org, no_builds: None
) -> None:
    shop = ready(org)
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    assert shop.wait_for(path, "running", "failed")["status"] == "failed"
    (deployment,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert deployment["status"] == "failed"
    assert "concurrent CodeBuild builds" in deployment["error"]
    assert "Service Quotas" in deployment["error"]
    assert "Cannot have more than" not in deployment["error"]  # our sentence, not AWS's text

    quotas.configure(codebuild_concurrent_builds=1)
    assert shop.org.api.post(f"{path}/redeploy").status_code == 202
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
