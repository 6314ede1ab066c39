"""EC2: a project's network — VPC, two public subnets in two zones, internet gateway and default
route, and two security groups (the load balancer's: 80/443 from anywhere; the services': the
container port from the load balancer's group only). Everything is found by its tags first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

VPC_CIDR = "10.0.0.0/16"
SUBNET_CIDRS = ("10.0.0.0/20", "10.0.16.0/20")


@dataclass(frozen=True)
class ProjectNetwork:
    vpc_id: str
    subnet_ids: tuple[str, ...]
    load_balancer_group_id: str
    services_group_id: str


def _filters(project_id: str, **extra: str) -> list[dict[str, Any]]:
    filters = [
        {"Name": f"tag:{names.PROJECT_TAG}", "Values": [project_id]},
        {"Name": f"tag:{names.RESOURCE_TAG}", "Values": [project_id]},
    ]
    filters += [{"Name": key, "Values": [value]} for key, value in extra.items()]
    return filters


def _tag_spec(resource_type: str, project_id: str, name: str) -> list[dict[str, Any]]:
    return [
        {
            "ResourceType": resource_type,
            "Tags": [*names.tag_list(project_id, project_id), {"Key": "Name", "Value": name}],
        }
    ]


def find_network(session: AwsSession, project_id: str) -> ProjectNetwork | None:
    """The project's network if it is complete, else None."""
    ec2 = session.client("ec2")
    with aws_errors():
        vpcs = ec2.describe_vpcs(Filters=_filters(project_id))["Vpcs"]
        if not vpcs:
            return None
        vpc_id = vpcs[0]["VpcId"]
        subnets = ec2.describe_subnets(Filters=_filters(project_id, **{"vpc-id": vpc_id}))
        groups = ec2.describe_security_groups(Filters=_filters(project_id, **{"vpc-id": vpc_id}))[
            "SecurityGroups"
        ]
    by_name = {group["GroupName"]: group["GroupId"] for group in groups}
    subnet_ids = tuple(sorted(subnet["SubnetId"] for subnet in subnets["Subnets"]))
    alb_group = by_name.get(_alb_group_name(project_id))
    services_group = by_name.get(_services_group_name(project_id))
    if len(subnet_ids) < len(SUBNET_CIDRS) or alb_group is None or services_group is None:
        return None
    return ProjectNetwork(vpc_id, subnet_ids, alb_group, services_group)


def ensure_network(session: AwsSession, project_id: str) -> ProjectNetwork:
    ec2 = session.client("ec2")
    label = f"capstan-{project_id}"
    with aws_errors():
        vpcs = ec2.describe_vpcs(Filters=_filters(project_id))["Vpcs"]
        if vpcs:
            vpc_id = vpcs[0]["VpcId"]
        else:
            vpc_id = ec2.create_vpc(
                CidrBlock=VPC_CIDR, TagSpecifications=_tag_spec("vpc", project_id, label)
            )["Vpc"]["VpcId"]
            ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsSupport={"Value": True})
            ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsHostnames={"Value": True})
        subnet_ids = _ensure_subnets(ec2, project_id, vpc_id, label)
        _ensure_internet_route(ec2, project_id, vpc_id, label, subnet_ids)
        alb_group = _ensure_group(
            ec2, project_id, vpc_id, _alb_group_name(project_id), "Capstan load balancer"
        )
        _allow(
            ec2,
            alb_group,
            [
                {
                    "IpProtocol": "tcp",
                    "FromPort": port,
                    "ToPort": port,
                    "IpRanges": [{"CidrIp": "0.0.0.0/0"}],
                    "Ipv6Ranges": [{"CidrIpv6": "::/0"}],
                }
                for port in (80, 443)
            ],
        )
        services_group = _ensure_group(
            ec2, project_id, vpc_id, _services_group_name(project_id), "Capstan services"
        )
        _allow(
            ec2,
            services_group,
            [
                {
                    "IpProtocol": "tcp",
                    "FromPort": names.CONTAINER_PORT,
                    "ToPort": names.CONTAINER_PORT,
                    "UserIdGroupPairs": [{"GroupId": alb_group}],
                }
            ],
        )
    return ProjectNetwork(vpc_id, subnet_ids, alb_group, services_group)


def delete_network(session: AwsSession, project_id: str) -> bool:
    """Remove the project's network; False while something still depends on it (try later)."""
    ec2 = session.client("ec2")
    with aws_errors():
        for vpc in ec2.describe_vpcs(Filters=_filters(project_id))["Vpcs"]:
            _delete_vpc(ec2, vpc["VpcId"])
        return not ec2.describe_vpcs(Filters=_filters(project_id))["Vpcs"]


def _delete_vpc(ec2: Any, vpc_id: str) -> None:
    try:
        groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        # The services' group refers to the load balancer's: revoke, then delete both.
        for group in groups["SecurityGroups"]:
            if group["GroupName"] == "default":
                continue
            if group.get("IpPermissions"):
                with ignoring("InvalidPermission.NotFound"):
                    ec2.revoke_security_group_ingress(
                        GroupId=group["GroupId"], IpPermissions=group["IpPermissions"]
                    )
        for group in groups["SecurityGroups"]:
            if group["GroupName"] != "default":
                with ignoring("InvalidGroup.NotFound"):
                    ec2.delete_security_group(GroupId=group["GroupId"])
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
        ec2.delete_vpc(VpcId=vpc_id)
    except ClientError as error:
        if error_code(error) == "DependencyViolation":
            # Network interfaces of deleted load balancers and tasks linger for a while.
            raise RetryableCloudError(
                "dependency_violation", f"The project's network is still in use: {error}"
            ) from error
        raise


def _ensure_subnets(ec2: Any, project_id: str, vpc_id: str, label: str) -> tuple[str, ...]:
    existing = {
        subnet["CidrBlock"]: subnet["SubnetId"]
        for subnet in ec2.describe_subnets(Filters=_filters(project_id, **{"vpc-id": vpc_id}))[
            "Subnets"
        ]
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
                TagSpecifications=_tag_spec("subnet", project_id, f"{label}-{index}"),
            )["Subnet"]["SubnetId"]
            ec2.modify_subnet_attribute(SubnetId=subnet_id, MapPublicIpOnLaunch={"Value": True})
        subnet_ids.append(subnet_id)
    return tuple(sorted(subnet_ids))


def _ensure_internet_route(
    ec2: Any, project_id: str, vpc_id: str, label: str, subnet_ids: tuple[str, ...]
) -> None:
    gateways = ec2.describe_internet_gateways(
        Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}]
    )["InternetGateways"]
    if gateways:
        gateway_id = gateways[0]["InternetGatewayId"]
    else:
        detached = ec2.describe_internet_gateways(Filters=_filters(project_id))["InternetGateways"]
        if detached:
            gateway_id = detached[0]["InternetGatewayId"]
        else:
            gateway_id = ec2.create_internet_gateway(
                TagSpecifications=_tag_spec("internet-gateway", project_id, label)
            )["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway_id, VpcId=vpc_id)
    # The project's own route table, tagged from birth and associated with its subnets: the
    # VPC's main table is made untagged by EC2, and the access role changes tagged tables only.
    tables = ec2.describe_route_tables(Filters=_filters(project_id, **{"vpc-id": vpc_id}))[
        "RouteTables"
    ]
    if tables:
        table = tables[0]
    else:
        table = ec2.create_route_table(
            VpcId=vpc_id, TagSpecifications=_tag_spec("route-table", project_id, label)
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


def _alb_group_name(project_id: str) -> str:
    return f"capstan-{project_id}-load-balancer"


def _services_group_name(project_id: str) -> str:
    return f"capstan-{project_id}-services"


def _ensure_group(ec2: Any, project_id: str, vpc_id: str, name: str, description: str) -> str:
    found = ec2.describe_security_groups(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "group-name", "Values": [name]},
        ]
    )["SecurityGroups"]
    if found:
        return str(found[0]["GroupId"])
    return str(
        ec2.create_security_group(
            GroupName=name,
            Description=description,
            VpcId=vpc_id,
            TagSpecifications=_tag_spec("security-group", project_id, name),
        )["GroupId"]
    )


def _allow(ec2: Any, group_id: str, permissions: list[dict[str, Any]]) -> None:
    for permission in permissions:
        with ignoring("InvalidPermission.Duplicate"):
            ec2.authorize_security_group_ingress(GroupId=group_id, IpPermissions=[permission])
