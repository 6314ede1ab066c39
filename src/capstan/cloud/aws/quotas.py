"""Which AWS error codes mean "an account quota is reached", and the sentence a user acts on.

AWS names its quota errors per service: EC2's `VpcLimitExceeded`, Elastic Load Balancing's
`TooManyRules`, CodeBuild's `AccountLimitExceededException`, ElastiCache's
`…QuotaForCustomerExceeded`, CloudFront's `TooMany…`. A quota is not throttling: the same call
fails until something is deleted or the quota is raised, so it is `QuotaExceededError`, never a
retry. `LimitExceededException` is both (ACM, IAM and CloudWatch Logs mean a quota; Cost Explorer
and a few others mean a request rate): its message tells which.
"""

from __future__ import annotations

import re

from capstan.cloud.errors import QuotaExceededError

_REMEDY = (
    "Delete what is no longer used (a project, a service, a preview) or request a higher quota "
    "in the Service Quotas console of that account, then retry."
)

# code -> what the quota counts, with AWS's default where it is one number.
_KNOWN: dict[str, str] = {
    "VpcLimitExceeded": "VPCs per region (5 by default)",
    "InternetGatewayLimitExceeded": "internet gateways per region (5 by default)",
    "SubnetLimitExceeded": "subnets per VPC (200 by default)",
    "SecurityGroupLimitExceeded": "security groups per region (2,500 by default)",
    "RulesPerSecurityGroupLimitExceeded": "rules per security group (60 by default)",
    "RouteTableLimitExceeded": "route tables per VPC (200 by default)",
    "RouteLimitExceeded": "routes per route table (50 by default)",
    "AddressLimitExceeded": "Elastic IP addresses per region (5 by default)",
    "NatGatewayLimitExceeded": "NAT gateways per availability zone (5 by default)",
    "TooManyLoadBalancers": "load balancers per region (50 by default)",
    "TooManyRules": "rules per load balancer (100 by default)",
    "TooManyTargetGroups": "target groups per region (3,000 by default)",
    "TooManyListeners": "listeners per load balancer (50 by default)",
    "TooManyCertificates": "certificates per load balancer (25 by default)",
    "AccountLimitExceededException": (
        "concurrent CodeBuild builds (new accounts may start with 0 or 1)"
    ),
    "InstanceQuotaExceeded": "RDS DB instances per region (40 by default)",
    "DBSubnetGroupQuotaExceeded": "RDS DB subnet groups per region (50 by default)",
    "SnapshotQuotaExceeded": (
        "manual RDS DB snapshots per region (100 by default; each deleted database's final "
        "snapshot is one)"
    ),
    "TooManyDistributions": "CloudFront distributions (200 by default)",
    "TooManyOriginAccessControls": "CloudFront origin access controls (100 by default)",
    "TooManyFunctions": "CloudFront functions (100 by default)",
    "TooManyBuckets": "S3 buckets (10,000 by default)",
    "TooManyHostedZones": "Route 53 hosted zones (500 by default)",
    "ServiceQuotaExceededException": "a service quota",
    # IAM's own (its `LimitExceeded`): most often the 10,240 characters of inline policy a role
    # holds, which one project's grants to its buckets (the task role's) or to its databases'
    # secrets (the execution role's, one policy a referenced database) share.
    "LimitExceeded": (
        "an IAM quota (a role's inline policies hold 10,240 characters: in one project, 61 to "
        "126 buckets by the length of their names, or about 44 databases that services "
        "reference)"
    ),
}
# What to do where the general remedy is wrong: the size of a role's inline policies is fixed
# (Service Quotas raises none of it).
_REMEDIES = {
    # Capstan never deletes a snapshot: the final ones are kept for people to decide on.
    "SnapshotQuotaExceeded": (
        "Delete manual DB snapshots that are no longer needed, or request a higher quota in the "
        "Service Quotas console of that account."
    ),
    "LimitExceeded": (
        "No request raises the size of a role's policies: delete databases or buckets in that "
        "project, then retry."
    ),
}
_PATTERN = re.compile(r"QuotaExceeded|QuotaForCustomerExceeded|LimitExceeded$|^TooMany")
_RATE = re.compile(r"\brate\b|throttl", re.IGNORECASE)


def quota_error(code: str, message: str) -> QuotaExceededError | None:
    """The quota error for AWS's `code` (None when the code is no quota): a sentence naming the
    quota reached and what to do; AWS's own text is not repeated."""
    if code == "LimitExceededException":
        if _RATE.search(message):
            return None  # a request rate, not a quota: the caller retries
        what = "a quota of this service"
    elif code in _KNOWN:
        what = _KNOWN[code]
    elif _PATTERN.search(code) and code != "TooManyRequestsException":
        what = f"a quota of this service ({code})"
    else:
        return None
    remedy = _REMEDIES.get(code, _REMEDY)
    return QuotaExceededError(
        f"Your AWS account has reached its limit of {what}. {remedy}", detail=message
    )
