"""Static websites in tests: made, deployed, and read back from the customer's account."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from capstan.cloud.aws.session import AwsSession
from tests.apps.helpers import Ready
from tests.apps.processes import account_sessions

SITE_REPO = "capstan-samples/hello-static"


@dataclass
class Site:
    shop: Ready
    site: dict[str, Any]
    path: str
    hostname: str

    @property
    def bucket(self) -> str:
        return site_bucket(self.site["id"])


def running_site(shop: Ready) -> Site:
    site = create_site(shop)
    path = f"{shop.base}/static_websites/{site['id']}"
    assert shop.wait_for(path, "running", timeout=30)["status"] == "running"
    hostname = f"docs.{shop.project['hostname_suffix']}.{shop.org.server.settings.domain}"
    return Site(shop, site, path, hostname)


def create_site(shop: Ready, **fields: Any) -> dict[str, Any]:
    body = {
        "name": "docs",
        "repo": SITE_REPO,
        "branch": "main",
        "build_command": "npm ci && npm run build",
        "publish_dir": "dist",
    }
    body.update(fields)
    response = shop.org.api.post(f"{shop.base}/static_websites", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


@contextmanager
def account(shop: Ready) -> Iterator[tuple[AwsSession, AwsSession]]:
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as sessions:
        yield sessions


def read(customer: AwsSession, bucket: str, key: str) -> str:
    return str(customer.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read().decode())


def served(customer: AwsSession, resource_id: str, key: str) -> str:
    """A file as the site's distribution serves it: from the build output it points at (its
    origin path, one build's prefix in the bucket)."""
    config = distribution_of(customer, resource_id)["DistributionConfig"]
    origin_path = config["Origins"]["Items"][0]["OriginPath"].strip("/")
    return read(customer, site_bucket(resource_id), f"{origin_path}/{key}")


def site_bucket(resource_id: str) -> str:
    return "capstan-site-" + resource_id.lower().replace("_", "-")


def distribution_of(customer: AwsSession, resource_id: str) -> dict[str, Any]:
    cloudfront = customer.client("cloudfront", region="us-east-1")
    for item in cloudfront.list_distributions()["DistributionList"].get("Items") or []:
        if item["Comment"] == f"Capstan {resource_id}":
            return dict(cloudfront.get_distribution(Id=item["Id"])["Distribution"])
    raise AssertionError(f"no distribution of {resource_id}")


def deployments(shop: Ready, path: str) -> list[dict[str, Any]]:
    return list(shop.org.api.get(f"{path}/deployments").json()["deployments"])
