"""AWS's documented API rates, as data: a service's token buckets (`Limits`, `Row`,
`Rate`), how it refuses a throttled call (`Answer`), and the tables of the services whose
rows are many (EC2, ECS, Elastic Load Balancing). The other services' tables and the map of
them all are in `rate_table`; `throttling` enforces them. Each row names the page it comes
from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from capstan_sandbox.cloud.requests import Call

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
