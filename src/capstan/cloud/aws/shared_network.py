"""EC2: the network every project of an account and region shares — one VPC, two public subnets
in two zones, one internet gateway and one route table with the default route — tagged
`capstan:shared` = `network` (no project owns it) and found by that tag first.

One VPC per account and region instead of one per project: AWS allows 5 VPCs and 5 internet
gateways per region by default (the default VPC uses one of each), so per-project VPCs stopped
at four projects. Projects are kept apart by their own security groups (`network`), not by the
VPC. The shared pieces are removed with the last project's groups (`release_shared`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.errors import RetryableCloudError

VPC_CIDR = "10.0.0.0/16"
# Two /18s: 16,379 addresses each for every project's load balancer nodes and tasks.
SUBNET_CIDRS = ("10.0.0.0/18", "10.0.64.0/18")
SHARED_VALUE = "network"
LABEL = "capstan-shared"


@dataclass(frozen=True)
class SharedNetwork:
    vpc_id: str
    subnet_ids: tuple[str, ...]


def shared_filters(**extra: str) -> list[dict[str, Any]]:
    filters = [{"Name": f"tag:{names.SHARED_TAG}", "Values": [SHARED_VALUE]}]
    filters += [{"Name": key, "Values": [value]} for key, value in extra.items()]
    return filters


def _tag_spec(resource_type: str, name: str) -> list[dict[str, Any]]:
    tags = [{"Key": names.SHARED_TAG, "Value": SHARED_VALUE}, {"Key": "Name", "Value": name}]
    return [{"ResourceType": resource_type, "Tags": tags}]


def find_shared(ec2: Any) -> SharedNetwork | None:
    """The shared VPC and its subnets, if both are there."""
    vpcs = ec2.describe_vpcs(Filters=shared_filters())["Vpcs"]
    if not vpcs:
        return None
    vpc_id = vpcs[0]["VpcId"]
    subnets = ec2.describe_subnets(Filters=shared_filters(**{"vpc-id": vpc_id}))["Subnets"]
    subnet_ids = tuple(sorted(subnet["SubnetId"] for subnet in subnets))
    if len(subnet_ids) < len(SUBNET_CIDRS):
        return None
    return SharedNetwork(vpc_id, subnet_ids)


def ensure_shared(ec2: Any) -> SharedNetwork:
    """The shared VPC, subnets, gateway and route, made where missing (idempotent)."""
    vpcs = ec2.describe_vpcs(Filters=shared_filters())["Vpcs"]
    if vpcs:
        vpc_id = vpcs[0]["VpcId"]
    else:
        vpc_id = ec2.create_vpc(CidrBlock=VPC_CIDR, TagSpecifications=_tag_spec("vpc", LABEL))[
            "Vpc"
        ]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsSupport={"Value": True})
        ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsHostnames={"Value": True})
    subnet_ids = _ensure_subnets(ec2, vpc_id)
    _ensure_internet_route(ec2, vpc_id, subnet_ids)
    return SharedNetwork(vpc_id, subnet_ids)


def release_shared(ec2: Any) -> bool:
    """Remove the shared network once no project has a security group in it; True when it is
    gone, False while some project still uses it (it stays for them)."""
    for vpc in ec2.describe_vpcs(Filters=shared_filters())["Vpcs"]:
        groups = ec2.describe_security_groups(
            Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}]
        )["SecurityGroups"]
        if any(group["GroupName"] != "default" for group in groups):
            return False
        delete_vpc(ec2, vpc["VpcId"], "The shared network")
    return True


def delete_vpc(ec2: Any, vpc_id: str, what: str) -> None:
    """Delete a VPC and everything Capstan put in it (groups, route tables, subnets, gateway);
    RetryableCloudError while AWS still holds network interfaces in it."""
    try:
        groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        delete_groups(ec2, [g for g in groups["SecurityGroups"] if g["GroupName"] != "default"])
        tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])[
            "RouteTables"
        ]
        own_tables = [
            table
            for table in tables
            if not any(a.get("Main") for a in table.get("Associations", []))
        ]
        for table in own_tables:
            for association in table.get("Associations", []):
                with ignoring("InvalidAssociationID.NotFound"):
                    ec2.disassociate_route_table(
                        AssociationId=association["RouteTableAssociationId"]
                    )
        for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])[
            "Subnets"
        ]:
            with ignoring("InvalidSubnetID.NotFound"):
                ec2.delete_subnet(SubnetId=subnet["SubnetId"])
        gateways = ec2.describe_internet_gateways(
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}]
        )["InternetGateways"]
        for gateway in gateways:
            with ignoring("Gateway.NotAttached"):
                ec2.detach_internet_gateway(
                    InternetGatewayId=gateway["InternetGatewayId"], VpcId=vpc_id
                )
            ec2.delete_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"])
        for table in own_tables:
            with ignoring("InvalidRouteTableID.NotFound"):
                ec2.delete_route_table(RouteTableId=table["RouteTableId"])
        with ignoring("InvalidVpcID.NotFound"):
            ec2.delete_vpc(VpcId=vpc_id)
    except ClientError as error:
        if error_code(error) == "DependencyViolation":
            # Network interfaces of deleted load balancers and tasks linger for a while.
            raise RetryableCloudError(
                "dependency_violation", f"{what} is still in use; trying again later."
            ) from error
        raise


def delete_groups(ec2: Any, groups: list[dict[str, Any]]) -> None:
    """Delete security groups that may refer to each other: revoke their rules, then delete."""
    for group in groups:
        if group.get("IpPermissions"):
            with ignoring("InvalidPermission.NotFound", "InvalidGroup.NotFound"):
                ec2.revoke_security_group_ingress(
                    GroupId=group["GroupId"], IpPermissions=group["IpPermissions"]
                )
    for group in groups:
        with ignoring("InvalidGroup.NotFound"):
            ec2.delete_security_group(GroupId=group["GroupId"])


def _ensure_subnets(ec2: Any, vpc_id: str) -> tuple[str, ...]:
    existing = {
        subnet["CidrBlock"]: subnet["SubnetId"]
        for subnet in ec2.describe_subnets(Filters=shared_filters(**{"vpc-id": vpc_id}))["Subnets"]
    }
    zones = [
        zone["ZoneName"]
        for zone in ec2.describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}]
        )["AvailabilityZones"]
    ]
    subnet_ids = []
    for index, cidr in enumerate(SUBNET_CIDRS):
        subnet_id = existing.get(cidr)
        if subnet_id is None:
            subnet_id = ec2.create_subnet(
                VpcId=vpc_id,
                CidrBlock=cidr,
                AvailabilityZone=zones[index % len(zones)],
                TagSpecifications=_tag_spec("subnet", f"{LABEL}-{index}"),
            )["Subnet"]["SubnetId"]
            ec2.modify_subnet_attribute(SubnetId=subnet_id, MapPublicIpOnLaunch={"Value": True})
        subnet_ids.append(subnet_id)
    return tuple(sorted(subnet_ids))


def _ensure_internet_route(ec2: Any, vpc_id: str, subnet_ids: tuple[str, ...]) -> None:
    gateways = ec2.describe_internet_gateways(
        Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}]
    )["InternetGateways"]
    if gateways:
        gateway_id = gateways[0]["InternetGatewayId"]
    else:
        detached = ec2.describe_internet_gateways(Filters=shared_filters())["InternetGateways"]
        if detached:
            gateway_id = detached[0]["InternetGatewayId"]
        else:
            gateway_id = ec2.create_internet_gateway(
                TagSpecifications=_tag_spec("internet-gateway", LABEL)
            )["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway_id, VpcId=vpc_id)
    # Capstan's own route table, tagged from birth and associated with the subnets: the VPC's
    # main table is made untagged by EC2, and the access role changes tagged tables only.
    tables = ec2.describe_route_tables(Filters=shared_filters(**{"vpc-id": vpc_id}))["RouteTables"]
    if tables:
        table = tables[0]
    else:
        table = ec2.create_route_table(
            VpcId=vpc_id, TagSpecifications=_tag_spec("route-table", LABEL)
        )["RouteTable"]
    routes = {route.get("DestinationCidrBlock") for route in table.get("Routes", [])}
    if "0.0.0.0/0" not in routes:
        with ignoring("RouteAlreadyExists"):
            ec2.create_route(
                RouteTableId=table["RouteTableId"],
                DestinationCidrBlock="0.0.0.0/0",
                GatewayId=gateway_id,
            )
    associated = {a.get("SubnetId") for a in table.get("Associations", [])}
    for subnet_id in subnet_ids:
        if subnet_id not in associated:
            ec2.associate_route_table(RouteTableId=table["RouteTableId"], SubnetId=subnet_id)


__all__ = [
    "SharedNetwork",
    "delete_groups",
    "delete_vpc",
    "ensure_shared",
    "find_shared",
    "release_shared",
    "shared_filters",
]
