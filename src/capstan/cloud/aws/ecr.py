"""ECR: one image repository per target, images tagged with the commit they were built from.

Each repository carries a lifecycle policy (`lifecycle_policy`): images that a release may roll
back to, or a deployment under way runs, carry a tag `release-<deployment id>` (`keep_images`,
after each rollout) and never expire; any other image expires `UNKEPT_DAYS` after its push. A
release's image is pinned by digest, and a rebuild of the same commit moves the commit's tag
away from it, so neither "the newest N" nor "untagged" could tell a kept image from one no
release needs.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def _client(session: AwsSession) -> Any:
    return session.client("ecr")


KEEP_PREFIX = "release-"
UNKEPT_DAYS = 7
# Rule 1 claims every image tagged `release-…` and expires none of them in practice (far more
# than a target keeps); ECR never lets a lower-priority rule expire an image a higher one
# matched. Rule 2 expires the rest a week after their push, which covers a build under way.
_KEEP_AT_MOST = 1000


def lifecycle_policy() -> str:
    return json.dumps(
        {
            "rules": [
                {
                    "rulePriority": 1,
                    "description": "Images a kept release or a deployment under way uses",
                    "selection": {
                        "tagStatus": "tagged",
                        "tagPrefixList": [KEEP_PREFIX],
                        "countType": "imageCountMoreThan",
                        "countNumber": _KEEP_AT_MOST,
                    },
                    "action": {"type": "expire"},
                },
                {
                    "rulePriority": 2,
                    "description": "Any other image, a week after its push",
                    "selection": {
                        "tagStatus": "any",
                        "countType": "sinceImagePushed",
                        "countUnit": "days",
                        "countNumber": UNKEPT_DAYS,
                    },
                    "action": {"type": "expire"},
                },
            ]
        },
        separators=(",", ":"),
    )


def ensure_repository(session: AwsSession, project_id: str, resource_id: str) -> str:
    """The repository's URI (`<account>.dkr.ecr.<region>.amazonaws.com/capstan/<id>`), with its
    lifecycle policy put again (repairing drift, and repositories made before it)."""
    uri = _ensure_repository(session, project_id, resource_id)
    with aws_errors():
        _client(session).put_lifecycle_policy(
            repositoryName=names.repository_name(resource_id),
            lifecyclePolicyText=lifecycle_policy(),
        )
    return uri


def _ensure_repository(session: AwsSession, project_id: str, resource_id: str) -> str:
    """CreateRepository is the look: it answers `RepositoryAlreadyExistsException` for one that
    exists, whose URI is then known from the account and region (read only where it is not)."""
    ecr = _client(session)
    name = names.repository_name(resource_id)
    with aws_errors():
        try:
            created = ecr.create_repository(
                repositoryName=name,
                imageTagMutability="MUTABLE",
                imageScanningConfiguration={"scanOnPush": True},
                tags=names.tag_list(project_id, resource_id),
            )
        except ClientError as error:
            if error_code(error) != "RepositoryAlreadyExistsException":
                raise
            known = _repository_uri(session, name)
            if known is not None:
                return known
            found = ecr.describe_repositories(repositoryNames=[name])["repositories"]
            return str(found[0]["repositoryUri"])
    return str(created["repository"]["repositoryUri"])


def _repository_uri(session: AwsSession, name: str) -> str | None:
    """`<account>.dkr.ecr.<region>.amazonaws.com/<name>` in the commercial partition, when the
    session knows its account (other partitions have other domains: None, read it instead)."""
    if session.account_id is None or session.partition() != "aws":
        return None
    return f"{session.account_id}.dkr.ecr.{session.endpoint.region}.amazonaws.com/{name}"


def repository_exists(session: AwsSession, resource_id: str) -> bool:
    with aws_errors():
        try:
            _client(session).describe_repositories(
                repositoryNames=[names.repository_name(resource_id)]
            )
        except ClientError as error:
            if error_code(error) == "RepositoryNotFoundException":
                return False
            raise
    return True


def delete_repository(session: AwsSession, resource_id: str) -> None:
    with aws_errors(), ignoring("RepositoryNotFoundException"):
        _client(session).delete_repository(
            repositoryName=names.repository_name(resource_id), force=True
        )


def image_digest(session: AwsSession, resource_id: str, tag: str) -> str | None:
    """The digest (`sha256:…`) the repository's `tag` names now, or None."""
    return _digest(session, resource_id, {"imageTag": tag})


def image_exists(session: AwsSession, resource_id: str, digest: str) -> bool:
    return _digest(session, resource_id, {"imageDigest": digest}) is not None


def _digest(session: AwsSession, resource_id: str, image_id: dict[str, str]) -> str | None:
    with aws_errors():
        try:
            found = _client(session).describe_images(
                repositoryName=names.repository_name(resource_id), imageIds=[image_id]
            )["imageDetails"]
        except ClientError as error:
            if error_code(error) in ("RepositoryNotFoundException", "ImageNotFoundException"):
                return None
            raise
    return str(found[0]["imageDigest"]) if found else None


def keep_images(
    session: AwsSession, resource_id: str, images: dict[str, str], *, first: bool = False
) -> None:
    """Tag each digest of `images` (deployment id -> `sha256:…`) `release-<deployment id>`, and
    untag the `release-…` tags of deployments not in `images` (an image left without tags is
    deleted, as ECR does; it would expire anyway). Digests no longer in the repository are
    skipped. `first`: no release of the target was kept before, so no tag is stale and the
    repository's tags are not listed (a tag already put is no error)."""
    ecr = _client(session)
    name = names.repository_name(resource_id)
    wanted = {f"{KEEP_PREFIX}{deployment_id}": digest for deployment_id, digest in images.items()}
    with aws_errors():
        try:
            tagged = {} if first else _tags_by_digest(ecr, name)
        except ClientError as error:
            if error_code(error) == "RepositoryNotFoundException":
                return
            raise
        present = {tag for tags in tagged.values() for tag in tags}
        for tag, digest in wanted.items():
            if tag not in tagged.get(digest, set()):
                _tag(ecr, name, digest, tag)
        stale = sorted(tag for tag in present if tag.startswith(KEEP_PREFIX) and tag not in wanted)
        for start in range(0, len(stale), 100):
            ecr.batch_delete_image(
                repositoryName=name,
                imageIds=[{"imageTag": tag} for tag in stale[start : start + 100]],
            )


def _tags_by_digest(ecr: Any, name: str) -> dict[str, set[str]]:
    tagged: dict[str, set[str]] = {}
    for page in ecr.get_paginator("describe_images").paginate(
        repositoryName=name, filter={"tagStatus": "TAGGED"}
    ):
        for detail in page["imageDetails"]:
            tagged[str(detail["imageDigest"])] = set(detail.get("imageTags", []))
    return tagged


def _tag(ecr: Any, name: str, digest: str, tag: str) -> None:
    """Add `tag` to the image `digest` (ECR tags an image by putting its manifest again)."""
    found = ecr.batch_get_image(
        repositoryName=name,
        imageIds=[{"imageDigest": digest}],
        acceptedMediaTypes=[
            "application/vnd.docker.distribution.manifest.v2+json",
            "application/vnd.oci.image.manifest.v1+json",
            "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.oci.image.index.v1+json",
        ],
    )["images"]
    if not found:
        return
    arguments: dict[str, Any] = {
        "repositoryName": name,
        "imageManifest": found[0]["imageManifest"],
        "imageTag": tag,
        "imageDigest": digest,
    }
    if found[0].get("imageManifestMediaType"):
        arguments["imageManifestMediaType"] = found[0]["imageManifestMediaType"]
    with ignoring("ImageAlreadyExistsException"):
        ecr.put_image(**arguments)
