"""The checks `make aws-smoke` (`capstan.aws_smoke`) makes of what it deployed: that the web
server's and the site's URLs answer (through `--front` in the sandbox), and, in the AWS account
itself with the caller's own credentials, that a bucket takes, returns and removes an object and
that a cache is where the API says and admits the worker's security group on its port (the
network path of the worker's TLS connection; no handshake is made from inside the worker)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

from capstan.cloud.aws import elasticache, names
from capstan.cloud.aws.session import AwsSession

PROBE_OBJECT = "capstan-aws-smoke.txt"
HTTP_TIMEOUT_SECONDS = 15.0


class SmokeFailure(Exception):
    """The sentence the smoke test ends with when something did not work."""


def get_url(url: str, front: str | None) -> httpx.Response:
    """GET `url`, or through `front` (the sandbox's dev server) with its hostname as Host."""
    parts = urlsplit(url)
    try:
        if front:
            target = f"{front}{parts.path or '/'}"
            return httpx.get(target, headers={"Host": parts.netloc}, timeout=HTTP_TIMEOUT_SECONDS)
        return httpx.get(url, follow_redirects=True, timeout=HTTP_TIMEOUT_SECONDS)
    except httpx.HTTPError as error:
        raise SmokeFailure(f"{url} cannot be reached ({type(error).__name__})") from error


def check_web_server(url: str, front: str | None) -> str:
    answer = get_url(url, front)
    if not 200 <= answer.status_code < 400:
        raise SmokeFailure(f"{url} answered {answer.status_code}")
    return f"{url} answered {answer.status_code}"


def check_site(url: str, front: str | None) -> str:
    answer = get_url(url, front)
    if answer.status_code != 200:
        raise SmokeFailure(f"{url} answered {answer.status_code}")
    if "<html" not in answer.text.lower():
        raise SmokeFailure(f"{url} answered 200 but not an HTML index")
    return f"{url} served its index ({len(answer.content)} bytes of HTML)"


def check_bucket(session: AwsSession, bucket_arn: str, resource_id: str) -> str:
    bucket = bucket_arn.rsplit(":", 1)[-1]
    s3 = session.client("s3")
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    if tags.get(names.RESOURCE_TAG) != resource_id:
        raise SmokeFailure(f"the bucket {bucket} is not tagged {names.RESOURCE_TAG}={resource_id}")
    written = f"written by the AWS smoke test at {datetime.now(UTC).isoformat()}".encode()
    s3.put_object(Bucket=bucket, Key=PROBE_OBJECT, Body=written)
    try:
        read = s3.get_object(Bucket=bucket, Key=PROBE_OBJECT)["Body"].read()
    finally:
        s3.delete_object(Bucket=bucket, Key=PROBE_OBJECT)
    if read != written:
        raise SmokeFailure(f"the bucket {bucket} returned other bytes than were written")
    return f"{bucket} took, returned and removed an object"


def check_cache(
    session: AwsSession, cache_id: str, endpoint: str, project_id: str, worker_id: str
) -> str:
    """The cache `cache_id` at `endpoint` (as the API gives it), reachable from the worker."""
    host, _, port_text = endpoint.rpartition(":")
    if not host or not port_text.isdigit():
        raise SmokeFailure(f"the API gives no endpoint for it ({endpoint or 'none'})")
    name = elasticache.cache_name(cache_id)
    caches = session.client("elasticache").describe_serverless_caches(ServerlessCacheName=name)
    if len(caches["ServerlessCaches"]) != 1:
        raise SmokeFailure(f"ElastiCache has no serverless cache {name}")
    cache = caches["ServerlessCaches"][0]
    reported = cache.get("Endpoint") or {}
    if (reported.get("Address"), reported.get("Port")) != (host, int(port_text)):
        raise SmokeFailure(f"ElastiCache reports {reported}, the API {endpoint}")
    worker_groups = _service_security_groups(session, project_id, worker_id)
    admitted = _admitted_groups(session, cache.get("SecurityGroupIds") or [], int(port_text))
    through = sorted(worker_groups & admitted)
    if not through:
        raise SmokeFailure(
            f"its security groups admit {sorted(admitted) or 'nothing'} on {port_text}, "
            f"not the worker's {sorted(worker_groups)}"
        )
    return (
        f"{endpoint} (TLS only) admits the worker's {', '.join(through)} on {port_text}; "
        "no TLS handshake made (see README)"
    )


def _service_security_groups(session: AwsSession, project_id: str, resource_id: str) -> set[str]:
    described = session.client("ecs").describe_services(
        cluster=names.cluster_name(project_id), services=[names.service_name(resource_id)]
    )
    groups: set[str] = set()
    for service in described["services"]:
        network = (service.get("networkConfiguration") or {}).get("awsvpcConfiguration") or {}
        groups |= set(network.get("securityGroups") or [])
    if not groups:
        raise SmokeFailure("the worker's ECS service has no security group")
    return groups


def _admitted_groups(session: AwsSession, group_ids: list[str], port: int) -> set[str]:
    if not group_ids:
        return set()
    described = session.client("ec2").describe_security_groups(GroupIds=group_ids)
    admitted: set[str] = set()
    for group in described["SecurityGroups"]:
        for permission in group.get("IpPermissions") or []:
            protocol = permission.get("IpProtocol")
            low, high = permission.get("FromPort", 0), permission.get("ToPort", 65535)
            if protocol in ("tcp", "-1") and (protocol == "-1" or low <= port <= high):
                admitted |= {pair["GroupId"] for pair in permission.get("UserIdGroupPairs", [])}
    return admitted
