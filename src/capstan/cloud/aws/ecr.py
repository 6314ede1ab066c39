"""ECR: one image repository per target, images tagged with the commit they were built from."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def _client(session: AwsSession) -> Any:
    return session.client("ecr")


def ensure_repository(session: AwsSession, project_id: str, resource_id: str) -> str:
    """The repository's URI (`<account>.dkr.ecr.<region>.amazonaws.com/capstan/<id>`)."""
    ecr = _client(session)
    name = names.repository_name(resource_id)
    with aws_errors():
        try:
            found = ecr.describe_repositories(repositoryNames=[name])["repositories"]
            return str(found[0]["repositoryUri"])
        except ClientError as error:
            if error_code(error) != "RepositoryNotFoundException":
                raise
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
            found = ecr.describe_repositories(repositoryNames=[name])["repositories"]
            return str(found[0]["repositoryUri"])
    return str(created["repository"]["repositoryUri"])


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
