"""Extension: ElastiCache Serverless in moto's ElastiCache, as AWS answers it.

moto 5 has no serverless caches. `install()` (idempotent) adds to its ElastiCache backend and
query-protocol responses:

- `CreateServerlessCache`, `DescribeServerlessCaches`, `ModifyServerlessCache` and
  `DeleteServerlessCache`, in the output shapes of botocore's service model (moto serializes the
  results from it), with AWS's errors: `ServerlessCacheNotFoundFault` (404),
  `ServerlessCacheAlreadyExistsFault`, `InvalidServerlessCacheStateFault`,
  `InvalidParameterValue` and `InvalidParameterCombination` (400);
- tags on the cache's ARN (`arn:aws:elasticache:<region>:<account>:serverlesscache:<name>`):
  `ListTagsForResource`, `AddTagsToResource`, `RemoveTagsFromResource`, and the Resource Groups
  Tagging API (resource type `elasticache:serverlesscache`);
- EC2's `DeleteSecurityGroup` refuses, with `DependencyViolation`, a group a serverless cache
  still uses — as AWS does while the cache's network interfaces exist.

Statuses are AWS's (lowercase): `creating`, `available`, `modifying`, `deleting`,
`create-failed`. Calls only start work; the simulator (`simulator.elasticache`) moves
`creating`/`modifying` to `available` and removes `deleting` caches after the `cache_seconds`
knob, and writes their CloudWatch metrics and cost. Like AWS, a cache has no endpoint until it is
available, and can be modified or deleted only when it is available (deleted also when its
creation failed).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from moto.core.exceptions import ServiceException
from moto.core.resource_tagging import TaggedResource
from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.ec2.exceptions import DependencyViolationError
from moto.ec2.models import EC2Backend, ec2_backends
from moto.elasticache.models import ElastiCacheBackend
from moto.elasticache.responses import ElastiCacheResponse
from moto.utilities.utils import get_partition

ENGINES = {"valkey": ("8", "8.0"), "redis": ("7", "7.1"), "memcached": ("1.6", "1.6.22")}
PORTS = {"valkey": 6379, "redis": 6379, "memcached": 11211}
MAX_DATA_STORAGE_GB = 5000
_NAME = re.compile(r"^[a-z](?:[a-z0-9]|-(?!-)){0,39}$")
_SERVERLESS_ARN = re.compile(
    r"^arn:[\w-]+:elasticache:(?P<region>[\w-]+):(?P<account>\d+):serverlesscache:(?P<name>.+)$"
)
_MARK = "_capstan_serverless"
_install_lock = threading.Lock()
# One lock for every change to serverless caches: the server's threads and the simulator's.
lock = threading.RLock()


class ServerlessCacheNotFound(ServiceException):
    code = "ServerlessCacheNotFoundFault"

    def __init__(self, name: str) -> None:
        super().__init__(f"Serverless cache {name} not found.")


class ServerlessCacheAlreadyExists(ServiceException):
    code = "ServerlessCacheAlreadyExistsFault"

    def __init__(self, name: str) -> None:
        super().__init__(f"Serverless cache {name} already exists.")


class InvalidServerlessCacheState(ServiceException):
    code = "InvalidServerlessCacheStateFault"

    def __init__(self, name: str, status: str) -> None:
        super().__init__(f"Serverless cache {name} is not in available state (it is {status}).")


class InvalidParameterValue(ServiceException):
    code = "InvalidParameterValue"


class InvalidParameterCombination(ServiceException):
    code = "InvalidParameterCombination"


@dataclass
class ServerlessCache:
    account_id: str
    region: str
    name: str
    description: str
    engine: str
    usage_limits: dict[str, Any]
    security_group_ids: list[str]
    subnet_ids: list[str]
    vpc_id: str | None
    arn: str
    created: datetime = field(default_factory=utcnow)
    status: str = "creating"
    # time.monotonic() of the last status change: the simulator moves the cache on from it.
    changed_at: float = field(default_factory=time.monotonic)
    address: str = ""
    # What the simulator made up: bytes held, for metrics and cost.
    bytes_used: int = 0

    def move(self, status: str) -> None:
        self.status = status
        self.changed_at = time.monotonic()

    @property
    def data_storage_gb(self) -> int | None:
        maximum = (self.usage_limits.get("DataStorage") or {}).get("Maximum")
        return int(maximum) if maximum is not None else None

    def shape(self) -> dict[str, Any]:
        """The `ServerlessCache` structure of the API."""
        major, full = ENGINES[self.engine]
        shape: dict[str, Any] = {
            "ServerlessCacheName": self.name,
            "Description": self.description,
            "CreateTime": self.created,
            "Status": self.status,
            "Engine": self.engine,
            "MajorEngineVersion": major,
            "FullEngineVersion": full,
            "CacheUsageLimits": self.usage_limits,
            "SecurityGroupIds": list(self.security_group_ids),
            "ARN": self.arn,
            "SubnetIds": list(self.subnet_ids),
            "SnapshotRetentionLimit": 0,
            "DailySnapshotTime": "04:00",
            "NetworkType": "ipv4",
        }
        if self.status in ("available", "modifying"):
            port = PORTS[self.engine]
            shape["Endpoint"] = {"Address": self.address, "Port": port}
            if self.engine != "memcached":
                shape["ReaderEndpoint"] = {"Address": self.address, "Port": port + 1}
        return shape


def caches_of(backend: ElastiCacheBackend) -> dict[str, ServerlessCache]:
    """The backend's serverless caches by name (made on first use)."""
    with lock:
        caches: dict[str, ServerlessCache] | None = backend.__dict__.get("serverless_caches")
        if caches is None:
            caches = backend.__dict__["serverless_caches"] = {}
        return caches


def remove(backend: ElastiCacheBackend, name: str) -> None:
    """The cache is gone: no description, no tags."""
    with lock:
        cache = caches_of(backend).pop(name, None)
        if cache is not None:
            backend.tagging_service.delete_all_tags_for_resource(cache.arn)


def _region_code(region: str) -> str:
    """`us-east-1` -> `use1`, `ap-southeast-2` -> `apse2`, as AWS's cache hostnames spell it."""
    parts = region.split("-")
    words = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c"}
    middle = "".join(
        "".join(words.get(word, word[:1]) for word in re.findall(r"north|south|east|west|\w+", p))
        for p in parts[1:-1]
    )
    return f"{parts[0]}{middle}{parts[-1]}"


# -- the backend ------------------------------------------------------------------------------


def _usage_limits(limits: dict[str, Any] | None) -> dict[str, Any]:
    limits = dict(limits or {})
    storage = limits.get("DataStorage")
    if storage is not None:
        if storage.get("Unit") != "GB":
            raise InvalidParameterValue("DataStorage Unit must be GB.")
        maximum, minimum = storage.get("Maximum"), storage.get("Minimum")
        for value in (maximum, minimum):
            if value is not None and not 1 <= int(value) <= MAX_DATA_STORAGE_GB:
                raise InvalidParameterValue(
                    f"DataStorage must be between 1 and {MAX_DATA_STORAGE_GB} GB."
                )
        if maximum is not None and minimum is not None and int(minimum) > int(maximum):
            raise InvalidParameterCombination("DataStorage Minimum cannot exceed its Maximum.")
        limits["DataStorage"] = {k: v for k, v in storage.items() if v is not None}
    return limits


def _network(
    backend: ElastiCacheBackend, group_ids: list[str], subnet_ids: list[str]
) -> str | None:
    """The VPC of the given subnets and groups, checked as AWS checks them."""
    ec2 = ec2_backends[backend.account_id][backend.region_name]
    vpcs: set[str] = set()
    for subnet_id in subnet_ids:
        subnet = next(
            (found for subnets in ec2.subnets.values() if (found := subnets.get(subnet_id))),
            None,
        )
        if subnet is None:
            raise InvalidParameterValue(f"The subnet ID {subnet_id} does not exist")
        vpcs.add(str(subnet.vpc_id))
    for group_id in group_ids:
        group = ec2.get_security_group_from_id(group_id)
        if group is None:
            raise InvalidParameterValue(f"The security group {group_id} does not exist")
        vpcs.add(str(group.vpc_id))
    if len(vpcs) > 1:
        raise InvalidParameterValue("The subnets and security groups must be in the same VPC.")
    return next(iter(vpcs), None)


def create_serverless_cache(self: ElastiCacheBackend, params: dict[str, Any]) -> ServerlessCache:
    name = str(params.get("ServerlessCacheName") or "").lower()
    engine = str(params.get("Engine") or "").lower()
    if not _NAME.match(name) or name.endswith("-"):
        raise InvalidParameterValue(
            "The parameter ServerlessCacheName must be 1 to 40 letters, digits or hyphens, begin "
            "with a letter, and contain neither two consecutive hyphens nor a trailing hyphen."
        )
    if engine not in ENGINES:
        raise InvalidParameterValue(
            f"Invalid engine {engine!r}; use one of {', '.join(sorted(ENGINES))}."
        )
    limits = _usage_limits(params.get("CacheUsageLimits"))
    group_ids = list(params.get("SecurityGroupIds") or [])
    subnet_ids = list(params.get("SubnetIds") or [])
    vpc_id = _network(self, group_ids, subnet_ids)
    with lock:
        caches = caches_of(self)
        if name in caches:
            raise ServerlessCacheAlreadyExists(name)
        partition = get_partition(self.region_name)
        cache = ServerlessCache(
            account_id=self.account_id,
            region=self.region_name,
            name=name,
            description=str(params.get("Description") or ""),
            engine=engine,
            usage_limits=limits,
            security_group_ids=group_ids,
            subnet_ids=subnet_ids,
            vpc_id=vpc_id,
            arn=f"arn:{partition}:elasticache:{self.region_name}:{self.account_id}:"
            f"serverlesscache:{name}",
            address=f"{name}-{secrets.token_hex(3)}.serverless.{_region_code(self.region_name)}"
            ".cache.amazonaws.com",
        )
        caches[name] = cache
        tags = params.get("Tags") or []
        if tags:
            self.tagging_service.tag_resource(cache.arn, tags)
    return cache


def describe_serverless_caches(self: ElastiCacheBackend, name: str | None) -> list[ServerlessCache]:
    with lock:
        caches = caches_of(self)
        if name:
            cache = caches.get(name.lower())
            if cache is None:
                raise ServerlessCacheNotFound(name)
            return [cache]
        return sorted(caches.values(), key=lambda item: item.created)


def modify_serverless_cache(self: ElastiCacheBackend, params: dict[str, Any]) -> ServerlessCache:
    name = str(params.get("ServerlessCacheName") or "").lower()
    with lock:
        cache = caches_of(self).get(name)
        if cache is None:
            raise ServerlessCacheNotFound(name)
        if cache.status != "available":
            raise InvalidServerlessCacheState(name, cache.status)
        changed = False
        if params.get("CacheUsageLimits") is not None:
            cache.usage_limits = _usage_limits(params["CacheUsageLimits"])
            changed = True
        if params.get("SecurityGroupIds") is not None:
            _network(self, list(params["SecurityGroupIds"]), cache.subnet_ids)
            cache.security_group_ids = list(params["SecurityGroupIds"])
            changed = True
        if params.get("Description") is not None:
            cache.description = str(params["Description"])
        if changed:
            cache.move("modifying")
        return cache


def delete_serverless_cache(self: ElastiCacheBackend, name: str) -> ServerlessCache:
    with lock:
        cache = caches_of(self).get((name or "").lower())
        if cache is None:
            raise ServerlessCacheNotFound(name)
        if cache.status not in ("available", "create-failed"):
            raise InvalidServerlessCacheState(name, cache.status)
        cache.move("deleting")
        return cache


def _serverless_cache_of(self: ElastiCacheBackend, arn: str) -> ServerlessCache | None:
    """The cache an ARN names (None if it names no serverless cache); unknown caches raise."""
    match = _SERVERLESS_ARN.match(arn or "")
    if match is None:
        return None
    with lock:
        cache = caches_of(self).get(match["name"])
    if cache is None or match["account"] != self.account_id or match["region"] != self.region_name:
        raise ServerlessCacheNotFound(match["name"])
    return cache


def _iter_serverless(self: ElastiCacheBackend) -> Iterator[TaggedResource]:
    with lock:
        caches = list(caches_of(self).values())
    for cache in caches:
        yield TaggedResource(
            arn=cache.arn,
            tags=self.tagging_service.get_tag_dict_for_resource(cache.arn),
            resource_type="elasticache:serverlesscache",
            extra={"include_untagged": True},
        )


# -- the responses ------------------------------------------------------------------------------


def _backend(response: ElastiCacheResponse) -> Any:
    """The response's backend, with the serverless operations `install` added to its class."""
    return response.elasticache_backend


def _create(self: ElastiCacheResponse) -> ActionResult:
    cache = _backend(self).create_serverless_cache(dict(self._get_params()))
    return ActionResult({"ServerlessCache": cache.shape()})


def _describe(self: ElastiCacheResponse) -> ActionResult:
    caches = _backend(self).describe_serverless_caches(self._get_param("ServerlessCacheName"))
    try:
        start = int(self._get_param("NextToken") or 0)
        size = int(self._get_param("MaxResults") or 50)
    except ValueError as error:
        raise InvalidParameterValue("Invalid NextToken or MaxResults.") from error
    page = caches[start : start + size]
    result: dict[str, Any] = {"ServerlessCaches": [cache.shape() for cache in page]}
    if start + size < len(caches):
        result["NextToken"] = str(start + size)
    return ActionResult(result)


def _modify(self: ElastiCacheResponse) -> ActionResult:
    cache = _backend(self).modify_serverless_cache(dict(self._get_params()))
    return ActionResult({"ServerlessCache": cache.shape()})


def _delete(self: ElastiCacheResponse) -> ActionResult:
    if self._get_param("FinalSnapshotName"):
        raise InvalidParameterValue("The sandbox keeps no snapshots of serverless caches.")
    cache = _backend(self).delete_serverless_cache(self._get_param("ServerlessCacheName"))
    return ActionResult({"ServerlessCache": cache.shape()})


def install() -> None:
    """Teach moto's ElastiCache (and EC2's group deletion) about serverless caches."""
    with _install_lock:
        if getattr(ElastiCacheResponse, _MARK, False):
            return
        backend_class: Any = ElastiCacheBackend
        backend_class.create_serverless_cache = create_serverless_cache
        backend_class.describe_serverless_caches = describe_serverless_caches
        backend_class.modify_serverless_cache = modify_serverless_cache
        backend_class.delete_serverless_cache = delete_serverless_cache
        _wrap_tags(backend_class)
        response_class: Any = ElastiCacheResponse
        response_class.create_serverless_cache = _create
        response_class.describe_serverless_caches = _describe
        response_class.modify_serverless_cache = _modify
        response_class.delete_serverless_cache = _delete
        _guard_security_groups()
        setattr(ElastiCacheResponse, _MARK, True)


def _wrap_tags(backend_class: Any) -> None:
    list_tags = backend_class.list_tags_for_resource
    add_tags = backend_class.add_tags_to_resource
    iter_tagged = backend_class.iter_tagged_resources

    def list_tags_for_resource(self: ElastiCacheBackend, arn: str) -> Any:
        cache = _serverless_cache_of(self, arn)
        if cache is None:
            return list_tags(self, arn)
        return self.tagging_service.list_tags_for_resource(cache.arn)

    def add_tags_to_resource(self: ElastiCacheBackend, arn: str, tags: Any) -> None:
        _serverless_cache_of(self, arn)  # an unknown serverless cache is an error, as in AWS
        add_tags(self, arn, tags)

    def iter_tagged_resources(self: ElastiCacheBackend) -> Iterator[TaggedResource]:
        yield from iter_tagged(self)
        yield from _iter_serverless(self)

    backend_class.list_tags_for_resource = list_tags_for_resource
    backend_class.add_tags_to_resource = add_tags_to_resource
    backend_class.iter_tagged_resources = iter_tagged_resources
    # RemoveTagsFromResource needs nothing more: moto keys every kind's tags by ARN.


def _guard_security_groups() -> None:
    original = EC2Backend.delete_security_group

    def delete_security_group(
        self: Any, name: str | None = None, group_id: str | None = None
    ) -> None:
        from moto.elasticache.models import elasticache_backends

        if group_id:
            # .get, not [...]: a backend dict makes missing backends on lookup.
            regions: Any = elasticache_backends.get(self.account_id) or {}
            backend = regions.get(self.region_name)
            if backend is not None:
                with lock:
                    users = [
                        cache.name
                        for cache in caches_of(backend).values()
                        if group_id in cache.security_group_ids
                    ]
                if users:
                    raise DependencyViolationError(
                        f"resource {group_id} has a dependent object (serverless cache {users[0]})"
                    )
        original(self, name=name, group_id=group_id)

    ec2_class: Any = EC2Backend
    ec2_class.delete_security_group = delete_security_group
