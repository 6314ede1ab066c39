"""CloudFront: the distribution that serves a static website from its private bucket through an
origin access control (OAC), cache invalidations, and the distribution's additional metrics.

CloudFront is global: its API lives in us-east-1, and so do the certificates it serves and the
CloudWatch metrics it writes. Everything is found again by what Capstan derives from its ids:
the account's one OAC is named `capstan-sites` (a site's own was `capstan-<resource id>`, as
sites had before they shared one), a distribution's `CallerReference` is the resource id
and its `Comment` names it (`ListDistributions` shows comments, not caller references), and an
invalidation's `CallerReference` is the deployment it belongs to — so a step repeated after a
crash finds what the first attempt made instead of making a second one.

Each distribution runs the account's one CloudFront Function on viewer requests
(`cloudfront_functions`); a distribution may only name a published one.

A distribution is removed in two moves, as CloudFront requires: disabled (which also drops its
alias and its function, so the hostname is free at once), then deleted once the disabled
configuration is `Deployed`; a site's own function (from before sites shared one) after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

REGION = "us-east-1"
# The hosted zone of every CloudFront distribution, for Route 53 ALIAS records (fixed by AWS).
HOSTED_ZONE_ID = "Z2FDTNDATAQYW2"
# AWS's managed cache policy "CachingOptimized".
CACHING_OPTIMIZED = "658327ea-f89d-4fab-a63d-7e88639e58f6"
ORIGIN_ID = "site-bucket"
_COMMENT_PREFIX = "Capstan "
FUNCTION_EVENT = "viewer-request"


@dataclass(frozen=True)
class DistributionSpec:
    """What a site's distribution should be."""

    project_id: str
    resource_id: str
    origin_domain: str  # the bucket's regional REST endpoint
    origin_access_control_id: str
    hostname: str | None  # the alias; None while being removed
    certificate_arn: str | None  # an issued us-east-1 certificate covering `hostname`
    enabled: bool = True
    request_function_arn: str | None = None  # the published viewer-request function
    # Where in the bucket the served files are (`/<prefix>`: one build's output), or "".
    origin_path: str = ""


@dataclass(frozen=True)
class DistributionInfo:
    id: str
    arn: str
    domain_name: str  # "d111111abcdef8.cloudfront.net"
    status: str  # InProgress | Deployed
    enabled: bool
    aliases: tuple[str, ...]
    certificate_arn: str | None
    origin_domain: str | None
    origin_access_control_id: str | None
    request_function_arn: str | None
    etag: str
    origin_path: str = ""

    @property
    def deployed(self) -> bool:
        return self.status == "Deployed"

    def matches(self, spec: DistributionSpec) -> bool:
        return (
            self.enabled == spec.enabled
            and self.aliases == ((spec.hostname,) if spec.hostname else ())
            and (self.certificate_arn or None) == (spec.certificate_arn if spec.hostname else None)
            and self.origin_domain == spec.origin_domain
            and self.origin_access_control_id == spec.origin_access_control_id
            and self.request_function_arn == spec.request_function_arn
            and self.origin_path == spec.origin_path
        )


def client(session: AwsSession) -> Any:
    """A CloudFront client (its API lives in us-east-1)."""
    return session.client("cloudfront", region=REGION)


def origin_access_control_name(resource_id: str) -> str:
    """The name of a site's own OAC, as sites had before they shared one (found to delete)."""
    return f"capstan-{resource_id}"


# The one OAC of the account every site's distribution signs its bucket requests through (an
# account holds 100 OACs by default; each site's own would run out at the 101st site).
SHARED_ORIGIN_ACCESS_CONTROL = "capstan-sites"


def comment(resource_id: str) -> str:
    return f"{_COMMENT_PREFIX}{resource_id}"


# -- origin access control ------------------------------------------------------------------


def _find_control(session: AwsSession, wanted: str) -> str | None:
    cloudfront = client(session)
    marker: str | None = None
    with aws_errors():
        while True:
            page = cloudfront.list_origin_access_controls(**({"Marker": marker} if marker else {}))
            listing = page["OriginAccessControlList"]
            for item in listing.get("Items") or []:
                if item.get("Name") == wanted:
                    return str(item["Id"])
            marker = listing.get("NextMarker")
            if not listing.get("IsTruncated") or not marker:
                return None


def find_shared_origin_access_control(session: AwsSession) -> str | None:
    return _find_control(session, SHARED_ORIGIN_ACCESS_CONTROL)


def find_origin_access_control(session: AwsSession, resource_id: str) -> str | None:
    """A site's own OAC (made before sites shared one), if it still exists."""
    return _find_control(session, origin_access_control_name(resource_id))


def ensure_origin_access_control(session: AwsSession) -> str:
    """The account's shared OAC through which sites' distributions sign their requests to their
    buckets (SigV4, always); made if missing. OACs carry no tags: the description says, in the
    tags' terms, that it is shared. It grants nothing by itself: each bucket's policy names the
    one distribution that may read it."""
    found = find_shared_origin_access_control(session)
    if found is not None:
        return found
    with aws_errors():
        try:
            created = client(session).create_origin_access_control(
                OriginAccessControlConfig={
                    "Name": SHARED_ORIGIN_ACCESS_CONTROL,
                    "Description": f"{names.PROJECT_TAG}={names.SHARED}",
                    "SigningProtocol": "sigv4",
                    "SigningBehavior": "always",
                    "OriginAccessControlOriginType": "s3",
                }
            )
        except ClientError as error:
            if error_code(error) != "OriginAccessControlAlreadyExists":
                raise
            found = find_shared_origin_access_control(session)
            if found is None:
                raise
            return found
    return str(created["OriginAccessControl"]["Id"])


def delete_origin_access_control(session: AwsSession, control_id: str) -> None:
    """Delete the OAC (nothing happens when it is gone). CloudFront refuses while a
    distribution still uses it: `origin_access_control_in_use`, raised as retryable."""
    cloudfront = client(session)
    with aws_errors(), ignoring("NoSuchOriginAccessControl"):
        etag = cloudfront.get_origin_access_control(Id=control_id)["ETag"]
        try:
            cloudfront.delete_origin_access_control(Id=control_id, IfMatch=etag)
        except ClientError as error:
            if error_code(error) == "OriginAccessControlInUse":
                raise RetryableCloudError(
                    "origin_access_control_in_use", "A distribution still uses the OAC."
                ) from error
            raise


# -- distributions ----------------------------------------------------------------------


def _config(spec: DistributionSpec) -> dict[str, Any]:
    aliases = [spec.hostname] if spec.hostname else []
    if spec.hostname and spec.certificate_arn:
        certificate: dict[str, Any] = {
            "ACMCertificateArn": spec.certificate_arn,
            "SSLSupportMethod": "sni-only",
            "MinimumProtocolVersion": "TLSv1.2_2021",
        }
    else:
        certificate = {"CloudFrontDefaultCertificate": True}
    return {
        "CallerReference": spec.resource_id,
        "Comment": comment(spec.resource_id),
        "Enabled": spec.enabled,
        "Aliases": {"Quantity": len(aliases), "Items": aliases},
        "DefaultRootObject": "index.html",
        "Origins": {
            "Quantity": 1,
            "Items": [
                {
                    "Id": ORIGIN_ID,
                    "DomainName": spec.origin_domain,
                    "OriginPath": spec.origin_path,
                    "OriginAccessControlId": spec.origin_access_control_id,
                    # An OAC origin is an S3 origin with no origin access identity.
                    "S3OriginConfig": {"OriginAccessIdentity": ""},
                }
            ],
        },
        "DefaultCacheBehavior": {
            "TargetOriginId": ORIGIN_ID,
            "ViewerProtocolPolicy": "redirect-to-https",
            "CachePolicyId": CACHING_OPTIMIZED,
            "Compress": True,
            "FunctionAssociations": _associations(spec.request_function_arn),
            "AllowedMethods": {
                "Quantity": 2,
                "Items": ["GET", "HEAD"],
                "CachedMethods": {"Quantity": 2, "Items": ["GET", "HEAD"]},
            },
        },
        "ViewerCertificate": certificate,
        # North America and Europe edges: the cheapest class; others are served from them.
        "PriceClass": "PriceClass_100",
        "HttpVersion": "http2and3",
        "IsIPV6Enabled": True,
    }


def _associations(function_arn: str | None) -> dict[str, Any]:
    if function_arn is None:
        return {"Quantity": 0}
    return {
        "Quantity": 1,
        "Items": [{"FunctionARN": function_arn, "EventType": FUNCTION_EVENT}],
    }


def _info(distribution: dict[str, Any], etag: str) -> DistributionInfo:
    config = distribution.get("DistributionConfig", {})
    origins = (config.get("Origins") or {}).get("Items") or [{}]
    certificate = config.get("ViewerCertificate") or {}
    behavior = config.get("DefaultCacheBehavior") or {}
    functions = [
        str(item["FunctionARN"])
        for item in (behavior.get("FunctionAssociations") or {}).get("Items") or []
        if item.get("EventType") == FUNCTION_EVENT
    ]
    return DistributionInfo(
        id=str(distribution["Id"]),
        arn=str(distribution["ARN"]),
        domain_name=str(distribution["DomainName"]),
        status=str(distribution.get("Status", "InProgress")),
        enabled=bool(config.get("Enabled")),
        aliases=tuple(str(alias) for alias in (config.get("Aliases") or {}).get("Items") or []),
        certificate_arn=certificate.get("ACMCertificateArn") or None,
        origin_domain=origins[0].get("DomainName"),
        origin_access_control_id=origins[0].get("OriginAccessControlId") or None,
        request_function_arn=functions[0] if functions else None,
        etag=etag,
        origin_path=str(origins[0].get("OriginPath") or ""),
    )


def describe_distribution(session: AwsSession, distribution_id: str) -> DistributionInfo | None:
    with aws_errors():
        try:
            answer = client(session).get_distribution(Id=distribution_id)
        except ClientError as error:
            if error_code(error) == "NoSuchDistribution":
                return None
            raise
    return _info(answer["Distribution"], str(answer["ETag"]))


def find_distribution(session: AwsSession, resource_id: str) -> str | None:
    """The id of the distribution Capstan made for `resource_id` (by its comment), if any."""
    wanted = comment(resource_id)
    cloudfront = client(session)
    with aws_errors():
        for page in cloudfront.get_paginator("list_distributions").paginate():
            for item in page["DistributionList"].get("Items") or []:
                if item.get("Comment") == wanted:
                    return str(item["Id"])
    return None


def ensure_distribution(
    session: AwsSession, spec: DistributionSpec, known_id: str | None
) -> DistributionInfo:
    """The distribution of `spec.resource_id`, made or changed to match `spec`."""
    distribution_id = known_id or find_distribution(session, spec.resource_id)
    info = describe_distribution(session, distribution_id) if distribution_id else None
    if info is None:
        return _create(session, spec)
    if info.matches(spec):
        return info
    return _update(session, info.id, spec)


def _create(session: AwsSession, spec: DistributionSpec) -> DistributionInfo:
    with aws_errors():
        try:
            answer = client(session).create_distribution_with_tags(
                DistributionConfigWithTags={
                    "DistributionConfig": _config(spec),
                    "Tags": {"Items": names.tag_list(spec.project_id, spec.resource_id)},
                }
            )
        except ClientError as error:
            if error_code(error) == "CNAMEAlreadyExists":
                # Another distribution still holds the hostname (e.g. a deleted site's, being
                # removed): it lets go once disabled.
                raise RetryableCloudError(
                    "cname_already_exists",
                    f"Another CloudFront distribution still serves {spec.hostname}.",
                ) from error
            if error_code(error) != "DistributionAlreadyExists":
                raise
            found = find_distribution(session, spec.resource_id)
            info = describe_distribution(session, found) if found else None
            if info is None:
                raise
            return info if info.matches(spec) else _update(session, info.id, spec)
    return _info(answer["Distribution"], str(answer["ETag"]))


def _update(session: AwsSession, distribution_id: str, spec: DistributionSpec) -> DistributionInfo:
    cloudfront = client(session)
    with aws_errors():
        current = cloudfront.get_distribution_config(Id=distribution_id)
        config = _config(spec)
        # The caller reference is fixed at creation (a distribution found by comment keeps it).
        config["CallerReference"] = current["DistributionConfig"]["CallerReference"]
        try:
            answer = cloudfront.update_distribution(
                Id=distribution_id, IfMatch=current["ETag"], DistributionConfig=config
            )
        except ClientError as error:
            if error_code(error) == "CNAMEAlreadyExists":
                raise RetryableCloudError(
                    "cname_already_exists",
                    f"Another CloudFront distribution still serves {spec.hostname}.",
                ) from error
            if error_code(error) == "PreconditionFailed":  # changed since we read its ETag
                raise RetryableCloudError(
                    "distribution_changed", f"Distribution {distribution_id} changed meanwhile."
                ) from error
            raise
    return _info(answer["Distribution"], str(answer["ETag"]))


def disable_distribution(session: AwsSession, spec: DistributionSpec, distribution_id: str) -> None:
    """Disable the distribution and drop its alias and certificate (the first half of removal)."""
    _update(session, distribution_id, spec)


def delete_distribution(session: AwsSession, info: DistributionInfo) -> None:
    """Delete a disabled, deployed distribution (nothing happens when it is already gone)."""
    with aws_errors(), ignoring("NoSuchDistribution"):
        try:
            client(session).delete_distribution(Id=info.id, IfMatch=info.etag)
        except ClientError as error:
            if error_code(error) in ("DistributionNotDisabled", "PreconditionFailed"):
                raise RetryableCloudError(
                    "distribution_not_ready", f"Distribution {info.id} cannot be deleted yet."
                ) from error
            raise


def enable_additional_metrics(session: AwsSession, distribution_id: str) -> None:
    """Turn on the distribution's additional CloudWatch metrics (`CacheHitRate` is one of them;
    without the subscription CloudFront does not report it)."""
    with aws_errors(), ignoring("MonitoringSubscriptionAlreadyExists"):
        client(session).create_monitoring_subscription(
            DistributionId=distribution_id,
            MonitoringSubscription={
                "RealtimeMetricsSubscriptionConfig": {
                    "RealtimeMetricsSubscriptionStatus": "Enabled"
                }
            },
        )


# -- invalidations ----------------------------------------------------------------------


def create_invalidation(
    session: AwsSession,
    distribution_id: str,
    caller_reference: str,
    paths: tuple[str, ...] = ("/*",),
) -> str:
    """Invalidate `paths`; a repeat with the same caller reference answers the same invalidation."""
    with aws_errors():
        answer = client(session).create_invalidation(
            DistributionId=distribution_id,
            InvalidationBatch={
                "Paths": {"Quantity": len(paths), "Items": list(paths)},
                "CallerReference": caller_reference,
            },
        )
    return str(answer["Invalidation"]["Id"])


def invalidation_status(
    session: AwsSession, distribution_id: str, invalidation_id: str
) -> str | None:
    """`InProgress` or `Completed`; None when the invalidation (or distribution) is unknown."""
    with aws_errors():
        try:
            answer = client(session).get_invalidation(
                DistributionId=distribution_id, Id=invalidation_id
            )
        except ClientError as error:
            if error_code(error) in ("NoSuchInvalidation", "NoSuchDistribution"):
                return None
            raise
    return str(answer["Invalidation"]["Status"])
