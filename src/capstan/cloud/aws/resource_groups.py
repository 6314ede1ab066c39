"""The security group of one resource that lives in a project's VPC (a cache, a database): it
admits one TCP port from the project's services group and nothing else, and carries the
resource's tags."""

from __future__ import annotations

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def ensure_group(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    *,
    name: str,
    description: str,
    port: int,
    vpc_id: str,
    services_group_id: str,
) -> str:
    """The resource's group `name` in the project's VPC, admitting `port` only from the services'
    group (made if missing)."""
    ec2 = session.client("ec2")
    with aws_errors():
        found = ec2.describe_security_groups(
            Filters=[
                {"Name": "vpc-id", "Values": [vpc_id]},
                {"Name": "group-name", "Values": [name]},
            ]
        )["SecurityGroups"]
        if found:
            group_id = str(found[0]["GroupId"])
        else:
            group_id = str(
                ec2.create_security_group(
                    GroupName=name,
                    Description=description,
                    VpcId=vpc_id,
                    TagSpecifications=[
                        {
                            "ResourceType": "security-group",
                            "Tags": [
                                *names.tag_list(project_id, resource_id),
                                {"Key": "Name", "Value": name},
                            ],
                        }
                    ],
                )["GroupId"]
            )
        with ignoring("InvalidPermission.Duplicate"):
            ec2.authorize_security_group_ingress(
                GroupId=group_id,
                IpPermissions=[
                    {
                        "IpProtocol": "tcp",
                        "FromPort": port,
                        "ToPort": port,
                        "UserIdGroupPairs": [{"GroupId": services_group_id}],
                    }
                ],
            )
    return group_id


def delete_group(session: AwsSession, resource_id: str, name: str) -> bool:
    """Remove the resource's group; False while network interfaces still use it."""
    ec2 = session.client("ec2")
    with aws_errors():
        groups = ec2.describe_security_groups(
            Filters=[
                {"Name": f"tag:{names.RESOURCE_TAG}", "Values": [resource_id]},
                {"Name": "group-name", "Values": [name]},
            ]
        )["SecurityGroups"]
        for group in groups:
            try:
                ec2.delete_security_group(GroupId=group["GroupId"])
            except ClientError as error:
                if error_code(error) == "DependencyViolation":
                    return False
                if error_code(error) != "InvalidGroup.NotFound":
                    raise
    return True
