"""AWS's API rate limits, enforced by the sandbox: a call over a rate AWS documents is answered
with that service's own throttling error, in its protocol's shape.

AWS meters API calls with token buckets: a bucket holds at most `burst` tokens, each call takes
one, and `refill` tokens come back every second. A call finds no token, and is throttled, when
it comes faster than that for long enough. `Throttler` (a WSGI middleware inside the
authorizer, so it reads the call the authorizer read) keeps one bucket per (caller account,
region, service, bucket of AWS's table) and draws a call from every bucket that applies to it:

- EC2: each API has a bucket of its own, sized by its category (non-mutating, unfiltered and
  unpaginated non-mutating, mutating, resource-intensive, or its own row);
  `RequestLimitExceeded`, HTTP 503.
- ECS: the calls of a category (cluster read, service modify, ...) share one bucket;
  `ThrottlingException`.
- Elastic Load Balancing (v2): an account bucket shared by every call, and one per category
  (non-mutating, mutating, registration, resource-intensive); `ThrottlingException`.
- Route 53: one bucket per account for every call, five a second (see `ROUTE53`); `Throttling`.
- RDS: one bucket per account and region for every call; `ThrottlingException`.
- Systems Manager: the Parameter Store reads share one bucket; `ThrottlingException`.
- CloudWatch Logs, ECR, ACM, Secrets Manager, CloudWatch: the operations their quota pages
  rate, each its own bucket (a rate given "per second" with no burst: a bucket of one second's
  tokens); `ThrottlingException` (CloudWatch: `Throttling`).

Each row says the page it comes from. Where AWS documents no rate, nothing is throttled: IAM
and STS (AWS says they throttle with token buckets, and publishes no rates), CodeBuild,
Application Auto Scaling, CloudFront, ElastiCache, CloudFormation, Organizations, Cost Explorer,
the Resource Groups Tagging API and Bedrock's control plane; Route 53's per-operation buckets
and change throughput, EC2's resource buckets (`RunInstances`, which Capstan never calls), ELB's
version 1 API, Logs' `PutLogEvents` per stream, the Parameter Store writes and the Secrets
Manager operations its page does not list; S3's request rates, which AWS sets per prefix of a
bucket and scales by itself, not per account.

Whose bucket a call draws from is the caller's account, as AWS counts it: an assumed role's
calls count in the role's account, a user's in the user's; so do the sandbox's own callers (an
account's administrator in tests, the console launching a stack), who call over HTTP like
anyone. What stands for AWS's own work draws nothing, as AWS meters none of it against the
account: the simulator's, in-process (ECS registering targets, a build writing its log: "Services
that call the Elastic Load Balancing API on your behalf ... have their own account-level
buckets"), and the dev server's front, which plays DNS resolution, a load balancer's routing and
CloudFront's serving by reading the API, its calls marked as such (`stand_in`).

On by default, in `--dev` too. `CAPSTAN_SANDBOX_THROTTLING="off"` (or `"scale=0.5"`) when the
sandbox starts, or `configure(enabled=..., scale=...)` / `changed(...)` in a running process,
switch it off or scale every bucket's burst and refill. Tests ask for a throttle without a
burst (`throttle(...)`: the next calls of an operation are refused), read what was refused
(`throttled(...)`), and move an account's buckets on a clock of their own (`clock(...)`);
`CAPSTAN_SANDBOX_THROTTLING_LOG=<file>` writes each throttled call there as a line of JSON.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from capstan.sandbox.cloud.authorization import error_response
from capstan.sandbox.cloud.requests import CALL, Call
from capstan.sandbox.cloud.stats import ACCOUNT

if TYPE_CHECKING:
    from capstan.cloud.aws.session import AwsSession

ENVIRONMENT_VARIABLE = "CAPSTAN_SANDBOX_THROTTLING"
# Sent by the sandbox's stand-ins for AWS's data plane (`stand_in`): not metered.
STAND_IN_HEADER = "X-Capstan-Sandbox-Stand-In"
_STAND_IN_ENVIRON = "HTTP_" + STAND_IN_HEADER.upper().replace("-", "_")
LOG_VARIABLE = "CAPSTAN_SANDBOX_THROTTLING_LOG"
Clock = Callable[[], float]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

EC2_PAGE = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
ECS_PAGE = "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html"
ELB_PAGE = (
    "https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html"
)
ROUTE53_PAGE = "https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/DNSLimitations.html"
RDS_PAGE = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-api-throttling.html"
SSM_PAGE = "https://docs.aws.amazon.com/general/latest/gr/ssm.html"
LOGS_PAGE = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/cloudwatch_limits_cwl.html"
ECR_PAGE = "https://docs.aws.amazon.com/AmazonECR/latest/userguide/service-quotas.html"
ACM_PAGE = "https://docs.aws.amazon.com/acm/latest/userguide/acm-limits.html"
SECRETS_PAGE = "https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html"
CLOUDWATCH_PAGE = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_limits.html"
)


@dataclass(frozen=True)
class Rate:
    burst: float  # the bucket's maximum capacity: calls that may come at once
    refill: float  # tokens given back every second: the rate that may be kept up


@dataclass(frozen=True)
class Row:
    """A row of a service's table: the bucket `name` that the calls it `matches` draw from.
    `per_operation`: each operation of the row has a bucket of its own of that size (EC2)."""

    name: str
    rate: Rate
    matches: Callable[[Call], bool]
    source: str
    per_operation: bool = False
    # Regions where AWS documents another rate for the row.
    in_regions: Mapping[str, Rate] = field(default_factory=dict)

    def rate_in(self, region: str) -> Rate:
        return self.in_regions.get(region, self.rate)


@dataclass(frozen=True)
class Answer:
    """How a service refuses a throttled call: its error code, HTTP status and message."""

    code: str
    status: int
    message: str


@dataclass(frozen=True)
class Limits:
    """One service's rates: `account` (if any) is drawn by every call; of `rows`, the first
    that matches the call. `per_account`: one set of buckets per account, whatever the region
    (Route 53 is a global service)."""

    answer: Answer
    rows: tuple[Row, ...] = ()
    account: Row | None = None
    per_account: bool = False


def _named(*operations: str) -> Callable[[Call], bool]:
    names = frozenset(operations)
    return lambda call: call.operation in names


def _every(_call: Call) -> bool:
    return True


RATE_EXCEEDED = "Rate exceeded"

# -- EC2 ---------------------------------------------------------------------------------------

_EC2_UNFILTERED = frozenset(
    {
        "DescribeInstances",
        "DescribeInstanceStatus",
        "DescribeNetworkInterfaces",
        "DescribeSecurityGroups",
        "DescribeSnapshots",
        "DescribeSpotInstanceRequests",
        "DescribeVolumes",
    }
)
_EC2_RESOURCE_INTENSIVE = (
    "AcceptVpcPeeringConnection",
    "AuthorizeSecurityGroupIngress",
    "CancelSpotInstanceRequests",
    "CreateKeyPair",
    "CreateVpcPeeringConnection",
    "DeleteVpcPeeringConnection",
    "RejectVpcPeeringConnection",
    "RevokeSecurityGroupIngress",
    "RequestSpotInstances",
)
# "Uncategorized actions": (burst, refill) each, from the same page's table.
_EC2_UNCATEGORIZED: dict[str, tuple[float, float]] = {
    "AcceptVpcEndpointConnections": (10, 1),
    "AdvertiseByoipCidr": (1, 0.1),
    "AssignIpv6Addresses": (100, 5),
    "AssignPrivateIpAddresses": (100, 5),
    "AssignPrivateNatGatewayAddress": (10, 1),
    "AssociateCapacityReservationBillingOwner": (1, 0.5),
    "AssociateEnclaveCertificateIamRole": (10, 1),
    "AssociateIamInstanceProfile": (100, 5),
    "AssociateNatGatewayAddress": (10, 1),
    "AttachVerifiedAccessTrustProvider": (10, 2),
    "AuthorizeClientVpnIngress": (5, 2),
    "CancelDeclarativePoliciesReport": (1, 1),
    "CopyImage": (100, 1),
    "CreateClientVpnRoute": (5, 2),
    "CreateCoipCidr": (5, 1),
    "CreateCoipPool": (5, 1),
    "CreateDefaultSubnet": (1, 1),
    "CreateDefaultVpc": (1, 1),
    "CreateLaunchTemplateVersion": (100, 5),
    "CreateNatGateway": (10, 1),
    "CreateNetworkInterface": (100, 5),
    "CreateRestoreImageTask": (50, 0.1),
    "CreateSnapshot": (100, 5),
    "CreateSnapshots": (100, 5),
    "CreateSpotDatafeedSubscription": (50, 3),
    "CreateStoreImageTask": (50, 0.1),
    "CreateSubnetCidrReservation": (5, 1),
    "CreateTags": (100, 10),
    "CreateVerifiedAccessEndpoint": (20, 4),
    "CreateVerifiedAccessGroup": (10, 2),
    "CreateVerifiedAccessInstance": (10, 2),
    "CreateVerifiedAccessTrustProvider": (10, 2),
    "CreateVolume": (100, 5),
    "CreateVpcEndpoint": (4, 0.3),
    "CreateVpcEndpointServiceConfiguration": (10, 1),
    "DeleteClientVpnRoute": (5, 2),
    "DeleteCoipCidr": (5, 1),
    "DeleteCoipPool": (5, 1),
    "DeleteCoipPoolPermission": (5, 1),
    "DeleteNatGateway": (10, 1),
    "DeleteNetworkInterface": (100, 5),
    "DeleteSnapshot": (100, 5),
    "DeleteSpotDatafeedSubscription": (50, 3),
    "DeleteSubnetCidrReservation": (5, 1),
    "DeleteQueuedReservedInstances": (5, 5),
    "DeleteTags": (100, 10),
    "DeleteVerifiedAccessEndpoint": (20, 4),
    "DeleteVerifiedAccessGroup": (10, 2),
    "DeleteVerifiedAccessInstance": (10, 2),
    "DeleteVerifiedAccessTrustProvider": (10, 2),
    "DeleteVolume": (100, 5),
    "DeleteVpcEndpoints": (4, 0.3),
    "DeleteVpcEndpointServiceConfigurations": (10, 1),
    "DeprovisionByoipCidr": (1, 0.1),
    "DeregisterImage": (100, 5),
    "DescribeAggregateIdFormat": (10, 10),
    "DescribeByoipCidrs": (1, 0.5),
    "DescribeCapacityBlockExtensionOfferings": (10, 0.15),
    "DescribeCapacityBlockOfferings": (10, 0.15),
    "DescribeDeclarativePoliciesReports": (5, 5),
    "DescribeHostReservations": (5, 2),
    "DescribeHostReservationOfferings": (5, 2),
    "DescribeIdentityIdFormat": (10, 10),
    "DescribeIdFormat": (10, 10),
    "DescribeInstanceTopology": (1, 1),
    "DescribeMovingAddresses": (1, 1),
    "DescribePrincipalIdFormat": (10, 10),
    "DescribeReservedInstancesOfferings": (10, 10),
    "DescribeSecurityGroupReferences": (20, 5),
    "DescribeSpotDatafeedSubscription": (100, 13),
    "DescribeSpotFleetInstances": (100, 5),
    "DescribeSpotFleetRequestHistory": (100, 5),
    "DescribeSpotFleetRequests": (50, 3),
    "DescribeStaleSecurityGroups": (20, 5),
    "DescribeStoreImageTasks": (50, 0.5),
    "DescribeVerifiedAccessInstanceLoggingConfigurations": (10, 2),
    "DetachVerifiedAccessTrustProvider": (10, 2),
    "DisableFastLaunch": (5, 2),
    "DisableImageBlockPublicAccess": (1, 0.1),
    "DisableSnapshotBlockPublicAccess": (1, 0.1),
    "DisassociateCapacityReservationBillingOwner": (1, 0.5),
    "DisassociateEnclaveCertificateIamRole": (10, 1),
    "DisassociateIamInstanceProfile": (100, 5),
    "DisassociateNatGatewayAddress": (10, 1),
    "EnableFastLaunch": (5, 2),
    "EnableImageBlockPublicAccess": (1, 0.1),
    "EnableSnapshotBlockPublicAccess": (1, 0.1),
    "GetAssociatedEnclaveCertificateIamRoles": (10, 1),
    "GetDeclarativePoliciesReportSummary": (5, 5),
    "GetHostReservationPurchasePreview": (5, 2),
    "ModifyImageAttribute": (100, 5),
    "ModifyInstanceMetadataDefaults": (2, 2),
    "ModifyInstanceMetadataOptions": (100, 5),
    "ModifyLaunchTemplate": (100, 5),
    "ModifyNetworkInterfaceAttribute": (100, 5),
    "ModifySnapshotAttribute": (100, 5),
    "ModifyVerifiedAccessEndpoint": (20, 4),
    "ModifyVerifiedAccessEndpointPolicy": (20, 4),
    "ModifyVerifiedAccessGroup": (10, 2),
    "ModifyVerifiedAccessGroupPolicy": (20, 4),
    "ModifyVerifiedAccessInstance": (10, 2),
    "ModifyVerifiedAccessInstanceLoggingConfiguration": (10, 2),
    "ModifyVerifiedAccessTrustProvider": (10, 2),
    "ModifyVpcEndpoint": (4, 0.3),
    "ModifyVpcEndpointServiceConfiguration": (10, 1),
    "MoveAddressToVpc": (1, 1),
    "ProvisionByoipCidr": (1, 0.1),
    "PurchaseCapacityBlock": (10, 0.15),
    "PurchaseCapacityBlockExtension": (10, 0.15),
    "PurchaseHostReservation": (5, 2),
    "PurchaseReservedInstancesOffering": (5, 5),
    "RejectVpcEndpointConnections": (10, 1),
    "RestoreAddressToClassic": (1, 1),
    "RevokeClientVpnIngress": (5, 2),
    "RunInstances": (5, 2),
    "StartDeclarativePoliciesReport": (1, 1),
    "StartInstances": (5, 2),
    "TerminateInstances": (100, 5),
    "UnassignPrivateIpAddresses": (100, 5),
    "UnassignPrivateNatGatewayAddress": (10, 1),
    "WithdrawByoipCidr": (1, 0.1),
}
_NON_MUTATING_PREFIXES = ("Describe", "List", "Search", "Get")


def _ec2_unfiltered(call: Call) -> bool:
    """A call of the smaller bucket's APIs "requested without specifying either pagination or a
    filter" (`Filter.N.Name`, `MaxResults`, `NextToken`)."""
    if call.operation not in _EC2_UNFILTERED:
        return False
    return not any(
        key.startswith("Filter.") or key in ("MaxResults", "NextToken") for key in call.params
    )


def _non_mutating(call: Call) -> bool:
    return call.operation.startswith(_NON_MUTATING_PREFIXES)


EC2 = Limits(
    answer=Answer("RequestLimitExceeded", 503, "Request limit exceeded."),
    rows=(
        *(
            Row(name, Rate(burst, refill), _named(name), EC2_PAGE, per_operation=True)
            for name, (burst, refill) in _EC2_UNCATEGORIZED.items()
        ),
        Row(
            "Resource-intensive actions",
            Rate(50, 5),
            _named(*_EC2_RESOURCE_INTENSIVE),
            EC2_PAGE,
            per_operation=True,
        ),
        Row(
            "Unfiltered and unpaginated non-mutating actions",
            Rate(50, 10),
            _ec2_unfiltered,
            EC2_PAGE,
            per_operation=True,
        ),
        Row("Non-mutating actions", Rate(100, 20), _non_mutating, EC2_PAGE, per_operation=True),
        Row("Mutating actions", Rate(50, 5), _every, EC2_PAGE, per_operation=True),
    ),
)

# -- ECS ---------------------------------------------------------------------------------------

_ECS_CATEGORIES: tuple[tuple[str, float, float, tuple[str, ...]], ...] = (
    (
        "Cluster modify actions",
        20,
        1,
        (
            "CreateCluster",
            "DeleteCluster",
            "PutClusterCapacityProviders",
            "UpdateCluster",
            "UpdateClusterSettings",
        ),
    ),
    ("Cluster read actions", 50, 20, ("DescribeClusters", "ListClusters")),
    (
        "Task definition modify actions",
        20,
        1,
        ("DeregisterTaskDefinition", "RegisterTaskDefinition"),
    ),
    (
        "Task definition read actions",
        50,
        20,
        ("DescribeTaskDefinition", "ListTaskDefinitions", "ListTaskDefinitionFamilies"),
    ),
    ("Task definition deletion actions", 5, 1, ("DeleteTaskDefinitions",)),
    (
        "Capacity provider modify actions",
        10,
        1,
        ("CreateCapacityProvider", "DeleteCapacityProvider", "UpdateCapacityProvider"),
    ),
    ("Capacity provider read actions", 50, 20, ("DescribeCapacityProviders",)),
    ("Tag modify actions", 20, 10, ("TagResource", "UntagResource")),
    ("Tag read actions", 50, 20, ("ListTagsForResource",)),
    (
        "Setting modify actions",
        10,
        1,
        ("DeleteAccountSetting", "PutAccountSetting", "PutAccountSettingDefault"),
    ),
    ("Setting read actions", 50, 20, ("ListAccountSettings",)),
    (
        "Cluster resource modify actions",
        100,
        40,
        (
            "DeleteAttributes",
            "DeregisterContainerInstance",
            "ExecuteCommand",
            "PutAttributes",
            "RunTask",
            "StartTask",
            "StopTask",
            "UpdateContainerAgent",
            "UpdateContainerInstancesState",
        ),
    ),
    (
        "Cluster resource read actions",
        100,
        20,
        (
            "DescribeContainerInstances",
            "DescribeTasks",
            "ListAttributes",
            "ListContainerInstances",
            "ListTasks",
        ),
    ),
    (
        "Agent modify actions",
        200,
        120,
        (
            "RegisterContainerInstance",
            "SubmitAttachmentStateChanges",
            "SubmitContainerStateChange",
            "SubmitTaskStateChange",
        ),
    ),
    ("Service modify actions", 50, 5, ("CreateService", "DeleteService", "UpdateService")),
    ("Service read actions", 100, 20, ("DescribeServices", "ListServices")),
    (
        "Service deployment actions",
        50,
        20,
        ("DescribeServiceDeployments", "ListServiceDeployments"),
    ),
    ("Service revision actions", 50, 20, ("DescribeServiceRevisions",)),
    ("Task protection actions", 200, 80, ("UpdateTaskProtection", "GetTaskProtection")),
    ("Cluster service resource read actions", 10, 1, ("ListServicesByNamespace",)),
)

ECS = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=tuple(
        Row(name, Rate(burst, refill), _named(*operations), ECS_PAGE)
        for name, burst, refill, operations in _ECS_CATEGORIES
    ),
)

# -- Elastic Load Balancing (version 2) --------------------------------------------------------

ELBV2 = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    account=Row("Account", Rate(40, 10), _every, ELB_PAGE),
    rows=(
        Row(
            "Resource-intensive",
            Rate(10, 0.2),
            _named("CreateLoadBalancer", "SetSubnets"),
            ELB_PAGE,
        ),
        Row("Registration", Rate(20, 4), _named("RegisterTargets", "DeregisterTargets"), ELB_PAGE),
        Row("CreateTrustStore", Rate(10, 0.2), _named("CreateTrustStore"), ELB_PAGE),
        Row(
            "Trust store modify actions",
            Rate(10, 0.2),
            _named(
                "AddTrustStoreRevocations",
                "DeleteSharedTrustStoreAssociation",
                "DeleteTrustStore",
                "ModifyTrustStore",
                "RemoveTrustStoreRevocations",
            ),
            ELB_PAGE,
        ),
        Row(
            "Trust store reads",
            Rate(20, 4),
            _named(
                "GetResourcePolicy",
                "GetTrustStoreCaCertificatesBundle",
                "GetTrustStoreRevocationContent",
            ),
            ELB_PAGE,
        ),
        Row(
            "Trust store descriptions",
            Rate(40, 10),
            _named(
                "DescribeTrustStoreAssociations",
                "DescribeTrustStoreRevocations",
                "DescribeTrustStores",
            ),
            ELB_PAGE,
        ),
        Row("Non-mutating", Rate(40, 10), _non_mutating, ELB_PAGE),
        Row("Mutating", Rate(20, 3), _every, ELB_PAGE),
    ),
)

# -- Route 53 ----------------------------------------------------------------------------------

# "All requests: Five requests per second per AWS account" (the Route 53 quotas page, and AWS's
# knowledge-center article on avoiding its throttling errors). Route 53's newer throttling page
# documents an account bucket of 50 refilled at 10 a second: a driver that keeps within five a
# second keeps within both (docs/decisions/0011-sandbox-api-rate-limits.md).
ROUTE53 = Limits(
    answer=Answer("Throttling", 400, RATE_EXCEEDED),
    account=Row("All requests", Rate(5, 5), _every, ROUTE53_PAGE),
    per_account=True,
)

# -- RDS ---------------------------------------------------------------------------------------

RDS = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    account=Row("All requests", Rate(300, 12), _every, RDS_PAGE),
)

# -- Systems Manager: Parameter Store ---------------------------------------------------------

SSM = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        Row(
            "Parameter Store default throughput",
            Rate(40, 40),
            _named("GetParameter", "GetParameters", "GetParametersByPath"),
            SSM_PAGE,
        ),
    ),
)


def _per_second(name: str, rate: float, source: str, *operations: str) -> Row:
    """A quota page's "N transactions per second": a bucket of one second's calls."""
    return Row(name, Rate(rate, rate), _named(*(operations or (name,))), source)


# -- CloudWatch Logs ---------------------------------------------------------------------------

LOGS = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("CreateLogStream", 50, LOGS_PAGE),
        _per_second("DescribeLogGroups", 5, LOGS_PAGE),
        _per_second("DescribeLogStreams", 5, LOGS_PAGE),
        _per_second("FilterLogEvents", 5, LOGS_PAGE),
        _per_second("GetLogEvents", 10, LOGS_PAGE),
        Row(
            "PutLogEvents",
            Rate(800, 800),
            _named("PutLogEvents"),
            LOGS_PAGE,
            in_regions={
                region: Rate(1500, 1500) for region in ("us-east-1", "us-west-2", "eu-west-1")
            },
        ),
    ),
)

# -- ECR ---------------------------------------------------------------------------------------

ECR = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("BatchCheckLayerAvailability", 1000, ECR_PAGE),
        _per_second("BatchGetImage", 2000, ECR_PAGE),
        _per_second("CompleteLayerUpload", 100, ECR_PAGE),
        _per_second("GetAuthorizationToken", 500, ECR_PAGE),
        _per_second("GetDownloadUrlForLayer", 3000, ECR_PAGE),
        _per_second("InitiateLayerUpload", 100, ECR_PAGE),
        _per_second("PutImage", 10, ECR_PAGE),
        _per_second("UploadLayerPart", 500, ECR_PAGE),
    ),
)

# -- ACM ---------------------------------------------------------------------------------------

ACM = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("AddTagsToCertificate", 5, ACM_PAGE),
        _per_second("DeleteCertificate", 10, ACM_PAGE),
        _per_second("DescribeCertificate", 10, ACM_PAGE),
        _per_second("ExportCertificate", 5, ACM_PAGE),
        _per_second("ImportCertificate", 1, ACM_PAGE),
        _per_second("ListCertificates", 5, ACM_PAGE),
        _per_second("ListTagsForCertificate", 10, ACM_PAGE),
        _per_second("RemoveTagsFromCertificate", 5, ACM_PAGE),
        _per_second("RequestCertificate", 5, ACM_PAGE),
        _per_second("ResendValidationEmail", 1, ACM_PAGE),
    ),
)

# -- Secrets Manager ---------------------------------------------------------------------------

SECRETS_MANAGER = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("GetSecretValue", 10_000, SECRETS_PAGE),
        _per_second("DescribeSecret", 40_000, SECRETS_PAGE),
        _per_second("ListSecrets", 100, SECRETS_PAGE),
        _per_second("BatchGetSecretValue", 100, SECRETS_PAGE),
        _per_second(
            "Resource policy requests",
            50,
            SECRETS_PAGE,
            "DeleteResourcePolicy",
            "GetResourcePolicy",
            "PutResourcePolicy",
            "ValidateResourcePolicy",
        ),
        _per_second(
            "Secret value and replication updates",
            50,
            SECRETS_PAGE,
            "PutSecretValue",
            "RemoveRegionsFromReplication",
            "ReplicateSecretToRegion",
            "StopReplicationToReplica",
            "UpdateSecret",
            "UpdateSecretVersionStage",
        ),
        _per_second("RestoreSecret", 50, SECRETS_PAGE),
        _per_second("Rotation requests", 50, SECRETS_PAGE, "RotateSecret", "CancelRotateSecret"),
        _per_second("Tagging requests", 50, SECRETS_PAGE, "TagResource", "UntagResource"),
    ),
)

# -- CloudWatch --------------------------------------------------------------------------------

CLOUDWATCH = Limits(
    answer=Answer("Throttling", 400, RATE_EXCEEDED),
    rows=(
        _per_second("DescribeAlarms", 9, CLOUDWATCH_PAGE),
        _per_second("DescribeAlarmsForMetric", 9, CLOUDWATCH_PAGE),
        *(
            _per_second(name, 3, CLOUDWATCH_PAGE)
            for name in (
                "DeleteAlarms",
                "DescribeAlarmHistory",
                "DisableAlarmActions",
                "EnableAlarmActions",
                "SetAlarmState",
                "PutMetricAlarm",
            )
        ),
        *(
            _per_second(name, 10, CLOUDWATCH_PAGE)
            for name in (
                "DeleteDashboards",
                "GetDashboard",
                "ListDashboards",
                "PutDashboard",
                "PutAnomalyDetector",
                "DescribeAnomalyDetectors",
            )
        ),
        _per_second("DeleteAnomalyDetector", 5, CLOUDWATCH_PAGE),
        _per_second("GetMetricData", 50, CLOUDWATCH_PAGE),
        _per_second("GetMetricStatistics", 400, CLOUDWATCH_PAGE),
        _per_second("GetMetricWidgetImage", 20, CLOUDWATCH_PAGE),
        _per_second("ListMetrics", 25, CLOUDWATCH_PAGE),
        _per_second("PutMetricData", 500, CLOUDWATCH_PAGE),
    ),
)

# botocore's service name -> the service's documented rates.
LIMITS: dict[str, Limits] = {
    "ec2": EC2,
    "ecs": ECS,
    "elbv2": ELBV2,
    "route53": ROUTE53,
    "rds": RDS,
    "ssm": SSM,
    "logs": LOGS,
    "ecr": ECR,
    "acm": ACM,
    "secretsmanager": SECRETS_MANAGER,
    "cloudwatch": CLOUDWATCH,
}

# How a service with no documented rate answers a throttle a test asks for (`throttle`): its
# own code where its API documents one, else its protocol's usual one.
_FORCED_ANSWERS: dict[str, Answer] = {
    # Bedrock's API reference: ThrottlingException, HTTP 429.
    "bedrock": Answer("ThrottlingException", 429, "Too many requests, please wait."),
    "organizations": Answer("TooManyRequestsException", 400, RATE_EXCEEDED),
    "resourcegroupstaggingapi": Answer("ThrottledException", 400, RATE_EXCEEDED),
    "s3": Answer("SlowDown", 503, "Please reduce your request rate."),
}
_PROTOCOL_ANSWERS = {
    "ec2": EC2.answer,
    "json": Answer("ThrottlingException", 400, RATE_EXCEEDED),
    "rest-json": Answer("ThrottlingException", 429, RATE_EXCEEDED),
    "query": Answer("Throttling", 400, RATE_EXCEEDED),
    "rest-xml": Answer("Throttling", 400, RATE_EXCEEDED),
}


def answer_for(call: Call) -> Answer:
    """How `call`'s service refuses it when it is throttled."""
    limits = LIMITS.get(call.service)
    if limits is not None:
        return limits.answer
    return _FORCED_ANSWERS.get(call.service) or _PROTOCOL_ANSWERS[call.protocol]


# -- settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    enabled: bool = True
    # Every bucket's burst and refill, times this (a burst never below one call).
    scale: float = 1.0


def parse(text: str) -> Settings:
    """`"off"`, `"on"`, `"scale=0.5"` (or `"on, scale=2"`); anything else is an error."""
    settings = Settings()
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name in ("off", "on") and not value:
            settings = replace(settings, enabled=name == "on")
        elif name == "scale":
            try:
                scale = float(value)
            except ValueError:
                raise ValueError(f"{ENVIRONMENT_VARIABLE}: scale must be a number") from None
            if scale <= 0:
                raise ValueError(f"{ENVIRONMENT_VARIABLE}: scale must be above 0 (or say off)")
            settings = replace(settings, scale=scale)
        else:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}: expected off, on or scale=N, not {part!r}")
    return settings


@dataclass(frozen=True)
class Throttled:
    """A call the sandbox refused for its rate (`forced`: a test asked for it)."""

    at: float
    account: str
    region: str
    service: str
    operation: str
    bucket: str
    forced: bool = False


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class _Forced:
    service: str
    operation: str | None
    account: str | None
    left: int


class RateLimiter:
    """The buckets of every account in this process, and the calls they refused."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, ...], _Bucket] = {}
        self._clocks: dict[str, Clock] = {}
        self._forced: list[_Forced] = []
        self._refused: deque[Throttled] = deque(maxlen=100_000)
        self._settings: Settings | None = None
        self._log = os.environ.get(LOG_VARIABLE)

    # settings

    @property
    def settings(self) -> Settings:
        with self._lock:
            if self._settings is None:
                self._settings = parse(os.environ.get(ENVIRONMENT_VARIABLE, ""))
            return self._settings

    def configure(self, *, enabled: bool | None = None, scale: float | None = None) -> Settings:
        """Change the settings; answers those before the change. A new scale starts every
        bucket full again."""
        before = self.settings
        changes: dict[str, Any] = {}
        if enabled is not None:
            changes["enabled"] = enabled
        if scale is not None:
            if scale <= 0:
                raise ValueError("scale must be above 0 (or enabled=False)")
            changes["scale"] = float(scale)
        with self._lock:
            self._settings = replace(before, **changes)
            if scale is not None:
                self._buckets.clear()
        return before

    # what tests ask for

    def throttle(
        self,
        service: str,
        operation: str | None = None,
        *,
        account: str | None = None,
        times: int = 1,
    ) -> None:
        """Refuse the next `times` calls of `service` (of `operation` only, of `account` only,
        when given) as throttled, whatever their buckets hold."""
        with self._lock:
            self._forced.append(_Forced(service, operation, account, times))

    def clear_throttles(self) -> None:
        with self._lock:
            self._forced.clear()

    def throttled(self, account: str | None = None) -> list[Throttled]:
        """The calls refused for their rate, oldest first (those of `account`, when given)."""
        with self._lock:
            refused = list(self._refused)
        return [item for item in refused if account is None or item.account == account]

    @contextmanager
    def clock(self, clock: Clock, *, account: str) -> Iterator[None]:
        """`account`'s buckets refill on `clock` in the block (they start full, and again
        after it): a test moves time instead of waiting for tokens."""
        with self._lock:
            self._clocks[account] = clock
            self._drop(account)
        try:
            yield
        finally:
            with self._lock:
                self._clocks.pop(account, None)
                self._drop(account)

    def _drop(self, account: str) -> None:
        for key in [key for key in self._buckets if key[0] == account]:
            del self._buckets[key]

    # the decision

    def admit(self, call: Call, account: str) -> Answer | None:
        """None when `call` may go on; else the answer that refuses it. Takes its tokens."""
        settings = self.settings
        with self._lock:
            now = self._clocks.get(account, self._clock)()
            forced = self._take_forced(call, account)
            if forced:
                refused = Throttled(
                    now, account, call.region, call.service, call.operation, "", forced=True
                )
                self._refused.append(refused)
                self._note(refused)
                return answer_for(call)
            limits = LIMITS.get(call.service)
            if not settings.enabled or limits is None:
                return None
            region = "*" if limits.per_account else call.region
            drawn = []
            for row in self._rows(limits, call):
                rate = row.rate_in(call.region)
                burst = max(1.0, rate.burst * settings.scale)
                refill = rate.refill * settings.scale
                name = f"{row.name}:{call.operation}" if row.per_operation else row.name
                key = (account, region, call.service, name)
                bucket = self._buckets.get(key)
                if bucket is None:
                    bucket = self._buckets[key] = _Bucket(burst, now)
                bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * refill)
                bucket.at = now
                if bucket.tokens < 1:
                    refused = Throttled(
                        now, account, call.region, call.service, call.operation, name
                    )
                    self._refused.append(refused)
                    self._note(refused)
                    return limits.answer
                drawn.append(bucket)
            # A call takes a token from every bucket it draws from, or from none.
            for bucket in drawn:
                bucket.tokens -= 1
        return None

    def _note(self, refused: Throttled) -> None:
        """A development aid, like the authorizer's log of refusals: each throttled call as a
        line of JSON in the file `CAPSTAN_SANDBOX_THROTTLING_LOG` names."""
        if self._log:
            with open(self._log, "a", encoding="utf-8") as out:
                out.write(json.dumps(asdict(refused)) + "\n")

    @staticmethod
    def _rows(limits: Limits, call: Call) -> list[Row]:
        rows = [limits.account] if limits.account is not None else []
        row = next((row for row in limits.rows if row.matches(call)), None)
        return rows + ([row] if row is not None else [])

    def _take_forced(self, call: Call, account: str) -> bool:
        for forced in self._forced:
            if (
                forced.service == call.service
                and forced.operation in (None, call.operation)
                and forced.account in (None, account)
            ):
                forced.left -= 1
                if forced.left <= 0:
                    self._forced.remove(forced)
                return True
        return False


_limiter = RateLimiter()


def limiter() -> RateLimiter:
    """This process's rate limiter (moto's state, and so the buckets, are per process)."""
    return _limiter


def configure(*, enabled: bool | None = None, scale: float | None = None) -> Settings:
    return _limiter.configure(enabled=enabled, scale=scale)


@contextmanager
def changed(*, enabled: bool | None = None, scale: float | None = None) -> Iterator[Settings]:
    """The settings changed for the block, as they were after it."""
    before = configure(enabled=enabled, scale=scale)
    try:
        yield _limiter.settings
    finally:
        configure(enabled=before.enabled, scale=before.scale)


def throttle(
    service: str, operation: str | None = None, *, account: str | None = None, times: int = 1
) -> None:
    _limiter.throttle(service, operation, account=account, times=times)


def throttled(account: str | None = None) -> list[Throttled]:
    return _limiter.throttled(account)


def clock(fake: Clock, *, account: str) -> Any:
    return _limiter.clock(fake, account=account)


# -- whose call it is --------------------------------------------------------------------------

_callers: dict[str, str] = {}
_callers_lock = threading.Lock()


def caller_account(environ: Mapping[str, Any], call: Call) -> str:
    """The account a call counts in: the assumed role's (the authorizer read it), else the one
    whose user issued the access key (moto's default account for keys nobody issued, as moto
    answers them)."""
    known = environ.get(ACCOUNT)
    if known:
        return str(known)
    with _callers_lock:
        cached = _callers.get(call.access_key)
    if cached is not None:
        return cached
    from moto.iam.models import get_account_id_from

    # A key is issued before it is used, so the account found for it never changes.
    account = get_account_id_from(call.access_key)
    with _callers_lock:
        _callers[call.access_key] = account
    return account


def stand_in(session: AwsSession) -> AwsSession:
    """`session`, its calls marked as the data plane's that the sandbox plays over the API (what
    a resolver, a load balancer or CloudFront reads), which AWS does not meter as API calls.
    Only for a session of the sandbox's own that has made no client yet."""

    def mark(request: Any, **_: Any) -> None:
        request.headers[STAND_IN_HEADER] = "data-plane"

    session.boto3.events.register("before-sign", mark)
    return session


class Throttler:
    """The WSGI middleware (see the module docstring): inside the authorizer, which leaves the
    call it read in the environ."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        call = environ.get(CALL)
        if not isinstance(call, Call) or environ.get(_STAND_IN_ENVIRON):
            return self._app(environ, start_response)
        answer = _limiter.admit(call, caller_account(environ, call))
        if answer is None:
            return self._app(environ, start_response)
        status, headers, body = error_response(call, answer.status, answer.code, answer.message)
        start_response(status, headers)
        return [body]


__all__ = [
    "ENVIRONMENT_VARIABLE",
    "LIMITS",
    "STAND_IN_HEADER",
    "Answer",
    "Limits",
    "Rate",
    "RateLimiter",
    "Row",
    "Settings",
    "Throttled",
    "Throttler",
    "answer_for",
    "caller_account",
    "changed",
    "clock",
    "configure",
    "limiter",
    "parse",
    "stand_in",
    "throttle",
    "throttled",
]
