"""EC2: a project's network — its two security groups (the load balancer's: 80/443 from anywhere;
the services': the container port from the load balancer's group only) in the account's shared
VPC and subnets (`shared_network`). Everything is found by its tags or names first.

A project made before the shared VPC has a VPC of its own (tagged with the project): its first
network (generation 0) uses it while it exists. The network reconciler moves such a project to
the shared VPC (`cloud/network_move.py`: its next generation is made there, then the old one is
removed with the VPC); deleting the project removes it too (`delete_network`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.aws.shared_network import (
    SUBNET_CIDRS,
    delete_groups,
    delete_vpc,
    find_shared,
)
from capstan.cloud.errors import RetryableCloudError

# The shared network is made by its own reconciler (one at a time per account and region), never
# by a project's: two projects' first passes would each make one.
SHARED_NOT_READY = "shared_network_not_ready"
# Codes EC2 answers when the shared VPC was removed (by the last other project) between finding
# it and using it: the next pass makes it again.
_SHARED_GONE = ("InvalidVpcID.NotFound", "InvalidSubnetID.NotFound", "InvalidSubnetId.NotFound")


@dataclass(frozen=True)
class ProjectNetwork:
    vpc_id: str
    subnet_ids: tuple[str, ...]
    load_balancer_group_id: str
    services_group_id: str
    # In the project's own VPC (made before the shared one), not the shared VPC.
    own_vpc: bool = False


def _project_filters(project_id: str, **extra: str) -> list[dict[str, Any]]:
    filters = [
        {"Name": f"tag:{names.PROJECT_TAG}", "Values": [project_id]},
        {"Name": f"tag:{names.RESOURCE_TAG}", "Values": [project_id]},
    ]
    filters += [{"Name": key, "Values": [value]} for key, value in extra.items()]
    return filters


def find_network(
    session: AwsSession, project_id: str, generation: int = 0
) -> ProjectNetwork | None:
    """The project's network if it is complete, else None: in its own VPC for generation 0 of
    a project that has one, else in the shared VPC."""
    ec2 = session.client("ec2")
    with aws_errors():
        legacy = _legacy_vpc(ec2, project_id) if generation == 0 else None
        if legacy is not None:
            subnets = ec2.describe_subnets(
                Filters=_project_filters(project_id, **{"vpc-id": legacy})
            )["Subnets"]
            vpc_id, subnet_ids = legacy, tuple(sorted(s["SubnetId"] for s in subnets))
            if len(subnet_ids) < len(SUBNET_CIDRS):
                return None
        else:
            shared = find_shared(ec2)
            if shared is None:
                return None
            vpc_id, subnet_ids = shared.vpc_id, shared.subnet_ids
        groups = _project_groups(ec2, project_id, vpc_id)
    alb_group = groups.get(_alb_group_name(project_id))
    services_group = groups.get(_services_group_name(project_id))
    if alb_group is None or services_group is None:
        return None
    return ProjectNetwork(vpc_id, subnet_ids, alb_group, services_group, own_vpc=legacy is not None)


def ensure_network(session: AwsSession, project_id: str, generation: int = 0) -> ProjectNetwork:
    """The project's groups in the shared network; generation 0 of a project that still has a
    VPC of its own keeps it. RetryableCloudError `shared_network_not_ready` while the shared
    network is not there (`shared_network.ensure_shared` makes it)."""
    ec2 = session.client("ec2")
    with aws_errors():
        legacy = generation == 0 and _legacy_vpc(ec2, project_id) is not None
    if legacy:
        found = find_network(session, project_id)
        if found is not None:
            return found
    with aws_errors():
        try:
            shared = find_shared(ec2)
            if shared is None:
                raise RetryableCloudError(
                    SHARED_NOT_READY, "The network this region's projects share is not made yet."
                )
            web = [
                {
                    "IpProtocol": "tcp",
                    "FromPort": port,
                    "ToPort": port,
                    "IpRanges": [{"CidrIp": "0.0.0.0/0"}],
                    "Ipv6Ranges": [{"CidrIpv6": "::/0"}],
                }
                for port in (80, 443)
            ]
            alb_group = _ensure_group(
                ec2, project_id, shared.vpc_id, _alb_group_name(project_id), web
            )
            from_balancer = {
                "IpProtocol": "tcp",
                "FromPort": names.CONTAINER_PORT,
                "ToPort": names.CONTAINER_PORT,
                "UserIdGroupPairs": [{"GroupId": alb_group}],
            }
            services_group = _ensure_group(
                ec2, project_id, shared.vpc_id, _services_group_name(project_id), [from_balancer]
            )
        except ClientError as error:
            if error_code(error) in _SHARED_GONE:
                raise RetryableCloudError(
                    "network_changing", "The shared network is being removed; trying again."
                ) from error
            raise
    return ProjectNetwork(shared.vpc_id, shared.subnet_ids, alb_group, services_group)


def delete_network(session: AwsSession, project_id: str) -> bool:
    """Remove the project's groups (and its own VPC, if it has one from before the shared
    network); False while something still depends on them (try later). The shared network
    stays for `shared_network.release_shared`."""
    ec2 = session.client("ec2")
    with aws_errors():
        legacy = _legacy_vpc(ec2, project_id)
        if legacy is not None:
            delete_vpc(ec2, legacy, "The project's network")
        groups = ec2.describe_security_groups(Filters=_project_filters(project_id))[
            "SecurityGroups"
        ]
        try:
            delete_groups(ec2, groups)
        except ClientError as error:
            if error_code(error) == "DependencyViolation":
                return False  # network interfaces of its load balancer and tasks linger
            raise
        left = ec2.describe_security_groups(Filters=_project_filters(project_id))
        return not left["SecurityGroups"] and _legacy_vpc(ec2, project_id) is None


def own_vpc(session: AwsSession, project_id: str) -> str | None:
    """The VPC of the project's own, made before the shared network, if it still has one."""
    with aws_errors():
        return _legacy_vpc(session.client("ec2"), project_id)


def others_in_own_vpc(session: AwsSession, project_id: str, vpc_id: str) -> list[str]:
    """The security groups in the project's own VPC besides its two and the default: each is
    something else that lives there (a cache, a database)."""
    ours = {_alb_group_name(project_id), _services_group_name(project_id), "default"}
    with aws_errors():
        groups = session.client("ec2").describe_security_groups(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}]
        )["SecurityGroups"]
    return sorted(group["GroupName"] for group in groups if group["GroupName"] not in ours)


def delete_own_vpc(session: AwsSession, project_id: str) -> bool:
    """Remove the project's own VPC and what Capstan put in it, once it has moved to the shared
    network; True when it is gone, False while AWS still holds network interfaces in it."""
    ec2 = session.client("ec2")
    with aws_errors():
        legacy = _legacy_vpc(ec2, project_id)
        if legacy is None:
            return True
        try:
            delete_vpc(ec2, legacy, "The project's own network")
        except RetryableCloudError as error:
            if error.code == "dependency_violation":
                return False  # network interfaces of its load balancer and tasks linger
            raise
        return _legacy_vpc(ec2, project_id) is None


def _legacy_vpc(ec2: Any, project_id: str) -> str | None:
    vpcs = ec2.describe_vpcs(Filters=_project_filters(project_id))["Vpcs"]
    return str(vpcs[0]["VpcId"]) if vpcs else None


def _project_groups(ec2: Any, project_id: str, vpc_id: str) -> dict[str, str]:
    groups = ec2.describe_security_groups(
        Filters=_project_filters(project_id, **{"vpc-id": vpc_id})
    )["SecurityGroups"]
    return {group["GroupName"]: group["GroupId"] for group in groups}


def _alb_group_name(project_id: str) -> str:
    return f"capstan-{project_id}-load-balancer"


def _services_group_name(project_id: str) -> str:
    return f"capstan-{project_id}-services"


def _ensure_group(
    ec2: Any, project_id: str, vpc_id: str, name: str, permissions: list[dict[str, Any]]
) -> str:
    """The project's group `name` in the VPC, admitting exactly `permissions` (made if missing)."""
    found = ec2.describe_security_groups(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "group-name", "Values": [name]},
        ]
    )["SecurityGroups"]
    if found:
        group_id = str(found[0]["GroupId"])
    else:
        tags = [*names.tag_list(project_id, project_id), {"Key": "Name", "Value": name}]
        group_id = str(
            ec2.create_security_group(
                GroupName=name,
                Description=name,
                VpcId=vpc_id,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": tags}],
            )["GroupId"]
        )
    for permission in permissions:
        with ignoring("InvalidPermission.Duplicate"):
            ec2.authorize_security_group_ingress(GroupId=group_id, IpPermissions=[permission])
    return group_id
