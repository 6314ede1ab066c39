"""A service's image repository keeps what releases need: its lifecycle policy (stored by the
sandbox, applied by it as ECR's daily pass would) expires old images but never one a kept
release or a deployment under way uses, those carrying `release-<deployment id>`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from capstan.cloud.aws import ecr
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.ecr_lifecycle import expire
from tests.sandbox.aws import access_role, calls, calls_since, new_account

RESOURCE = "web_lifecycle"
NAME = f"capstan/{RESOURCE}"


@pytest.fixture
def sessions(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession, AwsSession]]:
    account = new_account(endpoint, "ecr")
    with access_role(endpoint, account) as role, organization_access(endpoint, account) as admin:
        yield account, role, admin


def _push(admin: AwsSession, commit: str) -> str:
    """An image built from `commit` (a manifest of its own), tagged with the commit; its digest."""
    layer = "sha256:" + hashlib.sha256(commit.encode()).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 7,
            "digest": layer,
        },
        "layers": [
            {
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": 9,
                "digest": layer,
            }
        ],
    }
    image = admin.client("ecr").put_image(
        repositoryName=NAME, imageManifest=json.dumps(manifest), imageTag=commit
    )["image"]
    return str(image["imageId"]["imageDigest"])


def _digests(admin: AwsSession) -> set[str]:
    details = admin.client("ecr").describe_images(repositoryName=NAME)["imageDetails"]
    return {detail["imageDigest"] for detail in details}


def test_the_policy_never_expires_an_image_a_kept_release_uses(
    sessions: tuple[str, AwsSession, AwsSession], endpoint: Endpoint
) -> None:
    account, role, admin = sessions
    ecr.ensure_repository(role, "prj_lifecycle", RESOURCE)
    stored = admin.client("ecr").get_lifecycle_policy(repositoryName=NAME)
    assert json.loads(stored["lifecyclePolicyText"]) == json.loads(ecr.lifecycle_policy())

    built = {f"c{index}": _push(admin, f"c{index}") for index in range(15)}
    # The ten newest releases that went live, and a rollback to c1's image (pinned by digest).
    kept = {f"dpl{index}": built[f"c{index}"] for index in range(5, 15)}
    kept["dplrollback"] = built["c1"]
    ecr.keep_images(role, RESOURCE, kept)
    ecr.keep_images(role, RESOURCE, kept)  # again: nothing changes, nothing fails

    now = datetime.now(UTC)
    assert expire(account, endpoint.region, now=now + timedelta(days=1)) == {}
    removed = expire(account, endpoint.region, now=now + timedelta(days=30))
    assert set(removed[NAME]) == {built[commit] for commit in ("c0", "c2", "c3", "c4")}
    assert _digests(admin) == set(kept.values())

    # c5's release is no longer kept: its tag goes, and the image expires at the next pass.
    del kept["dpl5"]
    ecr.keep_images(role, RESOURCE, kept)
    details = admin.client("ecr").describe_images(
        repositoryName=NAME, imageIds=[{"imageDigest": built["c5"]}]
    )["imageDetails"]
    assert details[0]["imageTags"] == ["c5"]
    assert expire(account, endpoint.region, now=now + timedelta(days=30)) == {NAME: [built["c5"]]}
    assert _digests(admin) == set(kept.values())


def test_without_the_protecting_rule_a_kept_image_would_expire(
    sessions: tuple[str, AwsSession, AwsSession], endpoint: Endpoint
) -> None:
    """The sandbox's pass really expires by age: a policy of rule 2 alone takes a kept image."""
    account, role, admin = sessions
    ecr.ensure_repository(role, "prj_lifecycle", RESOURCE)
    digest = _push(admin, "c0")
    ecr.keep_images(role, RESOURCE, {"dpl0": digest})
    rules = json.loads(ecr.lifecycle_policy())["rules"][1:]
    rules[0]["rulePriority"] = 1
    admin.client("ecr").put_lifecycle_policy(
        repositoryName=NAME, lifecyclePolicyText=json.dumps({"rules": rules})
    )
    now = datetime.now(UTC)
    assert expire(account, endpoint.region, now=now + timedelta(days=30)) == {NAME: [digest]}


def test_a_first_release_is_kept_without_listing_the_repository(
    sessions: tuple[str, AwsSession, AwsSession], endpoint: Endpoint
) -> None:
    """A target's first release: no earlier release tag can be stale, so the repository's
    images are not listed; the tag is put (again, on a retry, without an error)."""
    account, role, admin = sessions
    ecr.ensure_repository(role, "prj_lifecycle", RESOURCE)
    digest = _push(admin, "c0")
    for _ in range(2):
        before = calls(endpoint, account)
        ecr.keep_images(role, RESOURCE, {"dpl0": digest}, first=True)
        made = calls_since(endpoint, before, account)
        assert "ecr:DescribeImages" not in made, made
        assert made["ecr:PutImage"] == 1, made
    details = admin.client("ecr").describe_images(
        repositoryName=NAME, imageIds=[{"imageDigest": digest}]
    )["imageDetails"]
    assert sorted(details[0]["imageTags"]) == ["c0", "release-dpl0"]
    # A later release lists them, and takes the first's tag off when it is no longer kept.
    second = _push(admin, "c1")
    before = calls(endpoint, account)
    ecr.keep_images(role, RESOURCE, {"dpl1": second})
    assert calls_since(endpoint, before, account)["ecr:DescribeImages"] == 1
    details = admin.client("ecr").describe_images(
        repositoryName=NAME, imageIds=[{"imageDigest": digest}]
    )["imageDetails"]
    assert details[0]["imageTags"] == ["c0"]
