"""ElastiCache Serverless (Valkey) caches, and the security group of each cache.

A cache is named after its id (`capstan-<id>`, within ElastiCache's 40 characters) and tagged
`capstan:project` / `capstan:resource`. It lives in the project's subnets behind a security group
of its own (`capstan-<id>-cache`, in the project's VPC) that admits TCP 6379 from the project's
services group and nothing else. Serverless caches accept TLS connections only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names, resource_groups
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

ENGINE = "valkey"
PORT = 6379
NAME_LIMIT = 40


@dataclass(frozen=True)
class ServerlessCache:
    name: str
    status: str  # AWS's, lowercased: creating | available | modifying | deleting | create-failed
    address: str | None  # set once the cache is available
    port: int | None
    data_storage_gb: int | None  # the DataStorage maximum


def cache_name(cache_id: str) -> str:
    return names.short_name("capstan", cache_id, NAME_LIMIT)


def security_group_name(cache_id: str) -> str:
    return f"capstan-{cache_id}-cache"


def _client(session: AwsSession) -> Any:
    return session.client("elasticache")


def _parse(cache: dict[str, Any]) -> ServerlessCache:
    endpoint = cache.get("Endpoint") or {}
    storage = (cache.get("CacheUsageLimits") or {}).get("DataStorage") or {}
    return ServerlessCache(
        name=str(cache["ServerlessCacheName"]),
        status=str(cache.get("Status") or "").lower(),
        address=endpoint.get("Address") or None,
        port=int(endpoint["Port"]) if endpoint.get("Port") else None,
        data_storage_gb=int(storage["Maximum"]) if storage.get("Maximum") is not None else None,
    )


def _limits(data_storage_gb: int) -> dict[str, Any]:
    return {"DataStorage": {"Maximum": data_storage_gb, "Unit": "GB"}}


def describe(session: AwsSession, cache_id: str) -> ServerlessCache | None:
    with aws_errors():
        try:
            found = _client(session).describe_serverless_caches(
                ServerlessCacheName=cache_name(cache_id)
            )["ServerlessCaches"]
        except ClientError as error:
            if error_code(error) == "ServerlessCacheNotFoundFault":
                return None
            raise
    return _parse(found[0]) if found else None


def create(
    session: AwsSession,
    project_id: str,
    cache_id: str,
    *,
    data_storage_gb: int,
    security_group_id: str,
    subnet_ids: tuple[str, ...],
) -> ServerlessCache:
    """Create the cache (or answer the one a previous attempt created)."""
    with aws_errors():
        try:
            created = _client(session).create_serverless_cache(
                ServerlessCacheName=cache_name(cache_id),
                Description=f"Capstan cache {cache_id}",
                Engine=ENGINE,
                CacheUsageLimits=_limits(data_storage_gb),
                SecurityGroupIds=[security_group_id],
                SubnetIds=list(subnet_ids),
                Tags=names.tag_list(project_id, cache_id),
            )
        except ClientError as error:
            if error_code(error) != "ServerlessCacheAlreadyExistsFault":
                raise
            found = describe(session, cache_id)
            if found is None:  # deleted between the two calls: try again later
                raise RetryableCloudError(
                    "cache_conflict", "The cache was deleted while it was made.", detail=str(error)
                ) from error
            return found
    return _parse(created["ServerlessCache"])


def grow(session: AwsSession, cache_id: str, data_storage_gb: int) -> ServerlessCache | None:
    """Raise the data storage limit; None when the cache is not available to modify yet."""
    with aws_errors():
        try:
            modified = _client(session).modify_serverless_cache(
                ServerlessCacheName=cache_name(cache_id), CacheUsageLimits=_limits(data_storage_gb)
            )
        except ClientError as error:
            if error_code(error) == "InvalidServerlessCacheStateFault":
                return None
            raise
    return _parse(modified["ServerlessCache"])


def delete(session: AwsSession, cache_id: str) -> None:
    """Start deleting the cache (nothing happens while it is being created or modified: AWS
    refuses, and the caller asks again later)."""
    with (
        aws_errors(),
        ignoring("ServerlessCacheNotFoundFault", "InvalidServerlessCacheStateFault"),
    ):
        _client(session).delete_serverless_cache(ServerlessCacheName=cache_name(cache_id))


# -- the cache's security group ---------------------------------------------------------------


def ensure_security_group(
    session: AwsSession, project_id: str, cache_id: str, *, vpc_id: str, services_group_id: str
) -> str:
    """The cache's group in the project's VPC, admitting 6379 only from the services' group."""
    return resource_groups.ensure_group(
        session,
        project_id,
        cache_id,
        name=security_group_name(cache_id),
        description="Capstan cache: Valkey over TLS from the project services",
        port=PORT,
        vpc_id=vpc_id,
        services_group_id=services_group_id,
    )


def delete_security_group(session: AwsSession, cache_id: str) -> bool:
    """Remove the cache's group; False while the cache's network interfaces still use it."""
    return resource_groups.delete_group(session, cache_id, security_group_name(cache_id))
