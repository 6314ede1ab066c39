"""Deploying static websites into a customer's AWS account: the site part of the app driver.

What a site (or a site preview) owns, all named after its resource id: a private S3 bucket
`capstan-site-<id>` (public access blocked; its policy lets only the site's distribution read),
a build role `capstan-site-build-<id>` that may write only that bucket and read only the site's
parameters, a CodeBuild project `capstan-<id>` with the site buildspec, the build log group, SSM
SecureString parameters under `/capstan/<id>/` (its build-time environment), a CloudFront
distribution with the hostname as alias, and an ALIAS record `<hostname>` -> the distribution in
the operator's zone.

What it shares, so that a fresh account's quotas (100 OACs, 100 functions, certificates) do not
bound the number of sites: the project's DNS-validated wildcard certificate in us-east-1,
`*.<suffix>.<domain>` (`cloud/site_certificates.py`: CloudFront serves an alternate domain name
only with one; a site's full hostname can be over ACM's 64 characters where the wildcard is
not), deleted by the last site of the project to leave; and the account's origin access control
`capstan-sites` and viewer-request function `capstan-site-index` (directory indexes), tagged as
shared (`capstan:project` = `shared`), deleted by the last site of the account to leave. Sites
made before this had their own certificate, OAC and function: a resync moves them over, and their
deletion removes what was their own.

`SiteDriver` is what `Deployer.site` is: every deployer has one, on the same sessions, so the
caller never asks which kind of deployer it holds. Like `Deployer`, every method finds what
exists before it makes anything, starts long work (builds, certificate validation, distribution
deployments, invalidations) without waiting for it, and raises only `RetryableCloudError` or
`TerminalCloudError`. Build logs and spend are `Deployer`'s own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from capstan.cloud.aws import (
    acm,
    cloudfront,
    cloudfront_functions,
    cloudwatch,
    codebuild,
    iam,
    logs,
    names,
    route53,
    s3,
    ssm,
)
from capstan.cloud.aws.codebuild import SITE_BUILD_VARIABLES
from capstan.cloud.errors import RetryableCloudError
from capstan.cloud.site_certificates import (
    CLOUDFRONT_REGION,
    SiteCertificate,
    SiteCertificates,
    shared_in_use,
)
from capstan.cloud.target import Target


def bucket_name(resource_id: str) -> str:
    """`capstan-site-<id>`: S3 names are global, Capstan's ids are unique (80 random bits)."""
    return "capstan-site-" + resource_id.lower().replace("_", "-")


@dataclass(frozen=True)
class SiteStorage:
    bucket: str
    origin_domain: str  # the bucket's regional REST endpoint, CloudFront's origin
    origin_access_control_id: str


@dataclass(frozen=True)
class Publication:
    """Where a site's distribution stands (status `Deployed` once its configuration is live at
    the edges) and its deployment's invalidation (`Completed` once the old files are gone)."""

    distribution_deployed: bool
    invalidation_completed: bool


@dataclass(frozen=True)
class SiteHandles:
    """What Capstan stored of a site's resources (for removal and for the leftovers check)."""

    distribution_id: str | None = None
    distribution_domain: str | None = None
    origin_access_control_id: str | None = None
    certificate_arns: tuple[str, ...] = ()
    hostnames: tuple[str, ...] = ()  # hostnames whose records may point at the distribution


class SiteDriver(SiteCertificates):
    """A static website's own steps: storage, certificate, publication, removal, metrics."""

    # -- storage and certificate (before the build) --------------------------------------

    def ensure_site_storage(self, target: Target) -> SiteStorage:
        """The site's private bucket and the origin access control CloudFront reads it through."""
        name = bucket_name(target.resource_id)
        bucket = s3.ensure_private_bucket(
            self._customer, name, target.project_id, target.resource_id
        )
        control = cloudfront.ensure_origin_access_control(self._customer)
        return SiteStorage(
            bucket=bucket.name,
            origin_domain=self.origin_domain(bucket.name),
            origin_access_control_id=control,
        )

    def output_exists(self, target: Target, prefix: str) -> bool:
        """Whether a build's output (`<prefix>/…` in the site's bucket) is still there."""
        return s3.has_prefix(self._customer, bucket_name(target.resource_id), prefix + "/")

    def prune_outputs(self, target: Target, keep: set[str]) -> int:
        """Remove the outputs of builds no release needs (and files of the unprefixed layout
        sites had before); how many objects went."""
        return s3.delete_prefixes(self._customer, bucket_name(target.resource_id), keep)

    def origin_domain(self, bucket: str) -> str:
        """The bucket's regional REST endpoint (CloudFront's origin for an OAC)."""
        suffix = "amazonaws.com.cn" if self._customer.partition() == "aws-cn" else "amazonaws.com"
        return f"{bucket}.s3.{self._region}.{suffix}"

    # -- publishing -------------------------------------------------------------------------

    def publish(
        self,
        target: Target,
        storage: SiteStorage,
        certificate_arn: str,
        distribution_id: str | None,
        prefix: str | None = None,
    ) -> cloudfront.DistributionInfo:
        """The distribution serving the bucket (the output under `prefix`: one build's) at the
        hostname through the site's request function, the bucket readable by it alone, and the
        hostname's ALIAS record pointing at it."""
        assert target.hostname is not None
        function_arn = cloudfront_functions.ensure_request_function(self._customer)
        distribution = cloudfront.ensure_distribution(
            self._customer,
            cloudfront.DistributionSpec(
                project_id=target.project_id,
                resource_id=target.resource_id,
                origin_domain=storage.origin_domain,
                origin_access_control_id=storage.origin_access_control_id,
                hostname=target.hostname,
                certificate_arn=certificate_arn,
                request_function_arn=function_arn,
                origin_path=f"/{prefix}" if prefix else "",
            ),
            distribution_id,
        )
        cloudfront.enable_additional_metrics(self._customer, distribution.id)
        s3.put_policy(
            self._customer,
            storage.bucket,
            [
                {
                    "Sid": "CloudFrontReadsThroughOriginAccessControl",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudfront.amazonaws.com"},
                    "Action": "s3:GetObject",
                    "Resource": f"{s3.arn(self._customer, storage.bucket)}/*",
                    "Condition": {"StringEquals": {"AWS:SourceArn": distribution.arn}},
                }
            ],
        )
        zone = route53.service_zone(self._operator, self._domain)
        route53.upsert_alias(
            self._operator,
            zone,
            target.hostname,
            dns_name=distribution.domain_name,
            target_zone_id=cloudfront.HOSTED_ZONE_ID,
        )
        return distribution

    def invalidate(self, distribution_id: str, deployment_id: str) -> str:
        """Invalidate every cached path for this deployment (idempotent per deployment)."""
        return cloudfront.create_invalidation(self._customer, distribution_id, deployment_id)

    def describe_publication(self, distribution_id: str, invalidation_id: str) -> Publication:
        distribution = cloudfront.describe_distribution(self._customer, distribution_id)
        status = cloudfront.invalidation_status(self._customer, distribution_id, invalidation_id)
        return Publication(
            distribution_deployed=distribution is not None and distribution.deployed,
            invalidation_completed=status == "Completed",
        )

    def remove_hostname(self, hostname: str, distribution_domain: str | None) -> None:
        """The ALIAS record of a hostname the site no longer serves — only while it points at
        the site's own distribution: a new site of the same name may have taken it over."""
        if self._points_at(hostname, distribution_domain):
            route53.delete_record(self._operator, self._domain, hostname)

    def _points_at(self, hostname: str, distribution_domain: str | None) -> bool:
        if not distribution_domain:
            return False
        zone = route53.kept_zone(self._operator, self._domain)
        record = route53.find_record(self._operator, zone, hostname) if zone else None
        alias = (record or {}).get("AliasTarget") or {}
        return str(alias.get("DNSName", "")).rstrip(".").lower() == distribution_domain.lower()

    # -- deletion -------------------------------------------------------------------------

    def delete_site(self, target: Target, handles: SiteHandles) -> bool:
        """Remove everything of the site, in order; True when nothing of it is left.

        The hostname's record goes first; the distribution is disabled (dropping its alias,
        certificate and function) and deleted on a later call, once the disabled configuration
        is deployed; then its request function, the origin access control, the certificates,
        the bucket (emptied), the parameters, the build project, its log group and its role."""
        distribution_id = handles.distribution_id or cloudfront.find_distribution(
            self._customer, target.resource_id
        )
        info = (
            cloudfront.describe_distribution(self._customer, distribution_id)
            if distribution_id
            else None
        )
        domain = handles.distribution_domain or (info.domain_name if info else None)
        for hostname in dict.fromkeys(h for h in (target.hostname, *handles.hostnames) if h):
            self.remove_hostname(hostname, domain)
        if info is not None:
            if info.enabled or info.aliases or info.certificate_arn or info.request_function_arn:
                cloudfront.disable_distribution(
                    self._customer,
                    cloudfront.DistributionSpec(
                        project_id=target.project_id,
                        resource_id=target.resource_id,
                        origin_domain=info.origin_domain
                        or self.origin_domain(bucket_name(target.resource_id)),
                        origin_access_control_id=info.origin_access_control_id or "",
                        hostname=None,
                        certificate_arn=None,
                        enabled=False,
                    ),
                    info.id,
                )
                return False
            if not info.deployed:
                return False
            try:
                cloudfront.delete_distribution(self._customer, info)
            except RetryableCloudError:
                return False
        # The site's own function and OAC, if it has them from before sites shared the account's.
        if not self._delete_function(target.resource_id):
            return False
        control = cloudfront.find_origin_access_control(self._customer, target.resource_id)
        if control is not None and not self._delete_control(control):
            return False
        # The account's: refused while another site's distribution uses them, which then keeps
        # them (each site asks once its own distribution is gone: the last one's ask succeeds).
        self._delete_function(None)
        shared = cloudfront.find_shared_origin_access_control(self._customer)
        if shared is not None:
            self._delete_control(shared)
        for arn in handles.certificate_arns:
            if not self.retire_certificate(arn, leaving=True):
                return False
        s3.delete_bucket(self._customer, bucket_name(target.resource_id))
        ssm.delete_environment(self._customer, target.resource_id)
        ssm.delete_build_tokens(self._customer, target.project_id, target.resource_id)
        codebuild.delete_project(self._customer, target.resource_id)
        logs.delete_group(self._customer, names.build_log_group(target.resource_id))
        iam.delete_site_build_role(self._customer, target.resource_id)
        return not self.remaining_site(target, handles)

    def _delete_function(self, resource_id: str | None) -> bool:
        """Delete a site's own function (or the shared one: None); False while a distribution
        still runs it."""
        try:
            cloudfront_functions.delete_request_function(self._customer, resource_id)
        except RetryableCloudError as error:
            if error.code != "function_in_use":
                raise
            return False
        return True

    def _delete_control(self, control_id: str) -> bool:
        """Delete an origin access control; False while a distribution still signs with it."""
        try:
            cloudfront.delete_origin_access_control(self._customer, control_id)
        except RetryableCloudError as error:
            if error.code != "origin_access_control_in_use":
                raise
            return False
        return True

    def remaining_site(self, target: Target, handles: SiteHandles) -> list[str]:
        """What of the site still exists, by kind of resource ([] when it is all gone)."""
        left: list[str] = []
        distribution_id = handles.distribution_id or cloudfront.find_distribution(
            self._customer, target.resource_id
        )
        if distribution_id and cloudfront.describe_distribution(self._customer, distribution_id):
            left.append("cloudfront distribution")
        if cloudfront_functions.request_function_exists(self._customer, target.resource_id):
            left.append("cloudfront function")
        if cloudfront.find_origin_access_control(self._customer, target.resource_id):
            left.append("origin access control")
        for arn in handles.certificate_arns:
            info = acm.describe_certificate(self._customer, arn, region=CLOUDFRONT_REGION)
            if info is not None and not shared_in_use(info):
                left.append(f"certificate {arn}")
        if s3.bucket_exists(self._customer, bucket_name(target.resource_id)):
            left.append("s3 bucket")
        if ssm.parameter_names(self._customer, target.resource_id):
            left.append("ssm parameters")
        if codebuild.project_exists(self._customer, target.resource_id):
            left.append("codebuild project")
        if logs.group_exists(self._customer, names.build_log_group(target.resource_id)):
            left.append("build log group")
        if iam.site_build_role_exists(self._customer, target.resource_id):
            left.append("build role")
        for hostname in dict.fromkeys(h for h in (target.hostname, *handles.hostnames) if h):
            if self._points_at(hostname, handles.distribution_domain):
                left.append(f"dns record {hostname}")
        return left

    # -- observation ----------------------------------------------------------------------

    def site_metrics(self, distribution_id: str | None) -> dict[str, Any]:
        """CloudFront's metrics of the last hour, and under `series` each of them per 5 minutes
        (zeros and empty series before the distribution exists)."""
        values: dict[str, list[float]] = {}
        points: dict[str, list[tuple[datetime, float]]] = {}
        if distribution_id:
            end = self._clock()
            dimensions = {"DistributionId": distribution_id, "Region": "Global"}
            queries = [
                cloudwatch.MetricQuery("requests", "AWS/CloudFront", "Requests", dimensions, "Sum"),
                cloudwatch.MetricQuery(
                    "bytes", "AWS/CloudFront", "BytesDownloaded", dimensions, "Sum"
                ),
                cloudwatch.MetricQuery(
                    "errors", "AWS/CloudFront", "TotalErrorRate", dimensions, "Average"
                ),
                cloudwatch.MetricQuery(
                    "hits", "AWS/CloudFront", "CacheHitRate", dimensions, "Average"
                ),
            ]
            window: dict[str, Any] = {
                "start": end - timedelta(hours=1),
                "end": end,
                "region": CLOUDFRONT_REGION,
            }
            values = cloudwatch.aggregate(self._customer, queries, period_seconds=60, **window)
            points = cloudwatch.series(
                self._customer,
                queries,
                period_seconds=cloudwatch.SERIES_PERIOD_SECONDS,
                **window,
            )

        def mean(key: str) -> float:
            found = values.get(key, [])
            return round(sum(found) / len(found), 2) if found else 0.0

        return {
            "requests_1h": int(sum(values.get("requests", []))),
            "bytes_transferred_1h": int(sum(values.get("bytes", []))),
            "error_rate_percent": mean("errors"),
            "cache_hit_rate_percent": mean("hits"),
            "series": {
                field: cloudwatch.as_points(points.get(key, []))
                for field, key in (
                    ("requests_1h", "requests"),
                    ("bytes_transferred_1h", "bytes"),
                    ("error_rate_percent", "errors"),
                    ("cache_hit_rate_percent", "hits"),
                )
            },
        }

    def site_usage(self, target: Target, distribution_id: str | None) -> dict[str, Any]:
        """The last hour's traffic and what the bucket stores: the inputs of the run-rate."""
        metrics = self.site_metrics(distribution_id)
        return {
            "requests_1h": int(metrics["requests_1h"]),
            "bytes_1h": int(metrics["bytes_transferred_1h"]),
            "stored_bytes": s3.stored_bytes(self._customer, bucket_name(target.resource_id)),
        }


__all__ = [
    "CLOUDFRONT_REGION",
    "SITE_BUILD_VARIABLES",
    "Publication",
    "SiteCertificate",
    "SiteDriver",
    "SiteHandles",
    "SiteStorage",
    "bucket_name",
]
