"""What bucket tests share: an account's admin session, an active bucket, traffic, metrics."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from tests.harness import Org
from tests.polling import wait_until

HAIKU = "anthropic.claude-3-haiku-20240307-v1:0"


@contextmanager
def account_admin(org: Org, region: str) -> Iterator[AwsSession]:
    """An administrator of the organization's sandbox account, in `region`."""
    url = org.server.settings.sandbox_cloud_url
    assert url
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    with organization_access(Endpoint(region=region, url=url), account_id) as admin:
        yield admin


def new_project(org: Org, **fields: Any) -> dict[str, Any]:
    body = {"name": "Files", "hostname_suffix": org.server.unique("files"), **fields}
    response = org.api.post("/api/projects", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def wait_status(org: Org, path: str, status: str) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        body = dict(org.api.get(path).json())
        return body if body.get("status") == status else None

    return wait_until(settled, what=f"{path} to be {status}")


@dataclass
class Made:
    """A bucket made through the API in a project of its own, and what it was answered."""

    project: dict[str, Any]
    base: str
    bucket: dict[str, Any]
    path: str

    @property
    def real_name(self) -> str:
        return str(self.bucket["arn"]).removeprefix("arn:aws:s3:::")


def make_bucket(org: Org, *, region: str = "eu-west-1", name: str = "User uploads!") -> Made:
    project = new_project(org, region=region)
    base = f"/api/projects/{project['id']}/storage"
    created = org.api.post(base, json={"name": name})
    assert created.status_code == 201, created.text
    bucket = created.json()
    return Made(project, base, bucket, f"{base}/{bucket['id']}")


def active_bucket(org: Org) -> Made:
    made = make_bucket(org)
    wait_status(org, made.path, "active")
    return made


def send_traffic(s3: Any, real_name: str) -> None:
    """3 puts (one a copy), 2 gets and a head, 1 delete; two objects are left."""
    s3.put_object(Bucket=real_name, Key="a.txt", Body=b"0123456789")
    s3.put_object(Bucket=real_name, Key="b.bin", Body=b"x" * 1000)
    s3.copy_object(Bucket=real_name, Key="c.txt", CopySource=f"{real_name}/a.txt")
    assert s3.get_object(Bucket=real_name, Key="a.txt")["Body"].read() == b"0123456789"
    s3.get_object(Bucket=real_name, Key="b.bin")["Body"].read()
    s3.head_object(Bucket=real_name, Key="c.txt")
    s3.delete_object(Bucket=real_name, Key="c.txt")


def wait_for_the_traffic_in_metrics(org: Org, path: str) -> None:
    expected = {
        "get_requests": 3,
        "put_requests": 3,
        "delete_requests": 1,
        "bytes_downloaded": 1010,
        "bytes_uploaded": 1010,
        "period_seconds": 3600,
    }
    seen: list[Any] = []

    def counted() -> bool:
        response = org.api.get(f"{path}/metrics")
        assert response.status_code == 200, response.text
        body = response.json()
        series = body.pop("series")
        seen.append(body)
        if body != expected:
            return False
        # Each figure's series adds up to it.
        for name, points in series.items():
            assert sum(point["value"] for point in points) == body[name], (name, points)
        return True

    wait_until(counted, what=lambda: f"metrics {expected}, last {seen[-1]}")
