"""The task role's grants and IAM's inline policy quota (10,240 characters a role, which the
sandbox enforces as IAM does): a bucket or a model selection the role could not be granted is
refused at its request, with nothing written, instead of failing the project network's pass
(and with it every deployment waiting for the network)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws import iam
from capstan.cloud.network import TASK_GRANTS_CHARS
from tests.apps.helpers import Ready, ready
from tests.buckets.helpers import HAIKU, account_admin
from tests.harness import RunningServer
from tests.polling import wait_until

# The longest label's bucket name is 63 characters, the most S3 allows: the most room a bucket
# takes in the grants (about 160 characters).
LONG = "Quarterly reports for the finance team, kept for auditors " * 2


@pytest.fixture(scope="module")
def shop(server: RunningServer) -> Iterator[Ready]:
    member = server.new_org()
    yield ready(member)
    member.close()


def test_a_bucket_the_task_role_could_not_be_granted_is_refused_and_nothing_is_written(
    shop: Ready,
) -> None:
    org = shop.org
    web = shop.create_web_server()  # the project's network, whose pass puts the grants
    base = f"{shop.base}/storage"
    made: list[dict[str, Any]] = []
    refused = None
    for _ in range(80):
        response = org.api.post(base, json={"name": LONG[:100]})
        if response.status_code != 201:
            refused = response
            break
        made.append(response.json())
    assert refused is not None, "80 buckets of 63-character names fit 10,240 characters"
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["error"] == "quota_exceeded"
    assert f"{TASK_GRANTS_CHARS:,} characters" in body["message"]
    assert 55 <= len(made) <= 65, len(made)
    assert len(org.api.get(base).json()["buckets"]) == len(made)  # nothing half-written

    # What was accepted, IAM (the sandbox's, which counts as IAM does) holds: the network's
    # pass put every accepted bucket into the task role's grants.
    shop.wait_for(f"{shop.base}/web_servers/{web['id']}", "running")
    arns = {bucket["arn"] for bucket in made}
    with account_admin(org, "us-east-1") as admin:

        def granted() -> set[str] | None:
            statements = {s["Sid"]: s for s in iam.task_grants(admin, shop.project["id"])}
            held = set(statements.get("CapstanBuckets", {}).get("Resource", []))
            return held if held == arns else None

        wait_until(granted, what="every accepted bucket's grant")

    # Models take room in the same policy: none is left for them.
    put = org.api.put(f"{shop.base}/model_access", json={"model_ids": [HAIKU]})
    assert put.status_code == 409, put.text
    assert put.json()["error"] == "quota_exceeded"
    assert org.api.get(f"{shop.base}/model_access").json()["allowed_model_ids"] == []

    # A bucket deleted makes room again.
    assert org.api.delete(f"{base}/{made[0]['id']}").status_code == 200
    again = org.api.post(base, json={"name": LONG[:100]})
    assert again.status_code == 201, again.text
