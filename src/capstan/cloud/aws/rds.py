"""RDS for PostgreSQL: a database's DB instance, its DB subnet group and its security group.

A database is one DB instance named after its id (`capstan-<id>`, within RDS's 63 characters),
with a DB subnet group of the same name over the project's subnets and a security group of its own
(`capstan-<id>-database`, in the project's VPC) that admits TCP 5432 from the project's services
group and nothing else. It is not publicly accessible, its storage is encrypted, RDS keeps its
master password in Secrets Manager (`ManageMasterUserPassword`: Capstan never sees it), and it is
protected from deletion until Capstan itself removes it (the protection is lifted only by the
step that deletes it, and put back when RDS refuses the delete: `cloud.databases`). Everything
is tagged `capstan:project` / `capstan:resource`, and the tags are copied to its snapshots (the
final one included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names, resource_groups
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

ENGINE = "postgres"
PORT = 5432
NAME_LIMIT = 63
INSTANCE_CLASS = "db.t4g.micro"
STORAGE_TYPE = "gp3"
# PostgreSQL's reserved key words (`pg_get_keywords()`, category R: PostgreSQL 15's 77, and 16's
# `system_user`), which RDS refuses as the master user's or the first database's name ("can't
# be a reserved word for the chosen database engine").
RESERVED_WORDS = frozenset(
    """
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create current_catalog current_date current_role current_time current_timestamp
    current_user default deferrable desc distinct do else end except false fetch for foreign from
    grant group having in initially intersect into lateral leading limit localtime localtimestamp
    not null offset on only or order placing primary references returning select session_user some
    symmetric system_user table then to trailing true union unique user using variadic when where
    window with
    """.split()  # noqa: SIM905 (the words as one text, as PostgreSQL lists them)
)


@dataclass(frozen=True)
class DbInstance:
    identifier: str
    status: str  # AWS's: creating | backing-up | available | modifying | deleting | failed | ...
    address: str | None
    port: int | None
    allocated_storage_gb: int
    multi_az: bool
    backup_retention_days: int
    deletion_protection: bool
    secret_arn: str | None  # the RDS-managed master user secret
    username: str
    database_name: str | None
    tags: dict[str, str]


@dataclass(frozen=True)
class InstanceSettings:
    engine_version: str
    database_name: str
    username: str
    storage_gb: int
    multi_az: bool
    backup_retention_days: int


def instance_identifier(database_id: str) -> str:
    return names.short_name("capstan", database_id, NAME_LIMIT)


def subnet_group_name(database_id: str) -> str:
    return instance_identifier(database_id)


def final_snapshot_identifier(database_id: str) -> str:
    return f"{instance_identifier(database_id)}-final"


def security_group_name(database_id: str) -> str:
    return f"capstan-{database_id}-database"


def _client(session: AwsSession) -> Any:
    return session.client("rds")


def _parse(instance: dict[str, Any]) -> DbInstance:
    endpoint = instance.get("Endpoint") or {}
    secret = instance.get("MasterUserSecret") or {}
    return DbInstance(
        identifier=str(instance["DBInstanceIdentifier"]),
        status=str(instance.get("DBInstanceStatus") or "").lower(),
        address=endpoint.get("Address") or None,
        port=int(endpoint["Port"]) if endpoint.get("Port") else None,
        allocated_storage_gb=int(instance.get("AllocatedStorage") or 0),
        multi_az=bool(instance.get("MultiAZ")),
        backup_retention_days=int(instance.get("BackupRetentionPeriod") or 0),
        deletion_protection=bool(instance.get("DeletionProtection")),
        secret_arn=secret.get("SecretArn") or None,
        username=str(instance.get("MasterUsername") or ""),
        database_name=instance.get("DBName") or None,
        tags={t["Key"]: t["Value"] for t in instance.get("TagList") or []},
    )


def describe(session: AwsSession, database_id: str) -> DbInstance | None:
    with aws_errors():
        try:
            found = _client(session).describe_db_instances(
                DBInstanceIdentifier=instance_identifier(database_id)
            )["DBInstances"]
        except ClientError as error:
            if error_code(error) == "DBInstanceNotFound":
                return None
            raise
    return _parse(found[0]) if found else None


def ensure_subnet_group(
    session: AwsSession, project_id: str, database_id: str, subnet_ids: tuple[str, ...]
) -> str:
    name = subnet_group_name(database_id)
    with aws_errors(), ignoring("DBSubnetGroupAlreadyExists", "DBSubnetGroupAlreadyExistsFault"):
        _client(session).create_db_subnet_group(
            DBSubnetGroupName=name,
            DBSubnetGroupDescription=f"Capstan database {database_id}",
            SubnetIds=list(subnet_ids),
            Tags=names.tag_list(project_id, database_id),
        )
    return name


def create(
    session: AwsSession,
    project_id: str,
    database_id: str,
    settings: InstanceSettings,
    *,
    security_group_id: str,
    subnet_group: str,
) -> DbInstance:
    """Create the DB instance (or answer the one a previous attempt created)."""
    with aws_errors():
        try:
            created = _client(session).create_db_instance(
                DBInstanceIdentifier=instance_identifier(database_id),
                Engine=ENGINE,
                EngineVersion=settings.engine_version,
                DBInstanceClass=INSTANCE_CLASS,
                AllocatedStorage=settings.storage_gb,
                StorageType=STORAGE_TYPE,
                StorageEncrypted=True,
                DBName=settings.database_name,
                MasterUsername=settings.username,
                ManageMasterUserPassword=True,
                DBSubnetGroupName=subnet_group,
                VpcSecurityGroupIds=[security_group_id],
                PubliclyAccessible=False,
                MultiAZ=settings.multi_az,
                BackupRetentionPeriod=settings.backup_retention_days,
                DeletionProtection=True,
                CopyTagsToSnapshot=True,
                Tags=names.tag_list(project_id, database_id),
            )
        except ClientError as error:
            if error_code(error) not in ("DBInstanceAlreadyExists", "DBInstanceAlreadyExistsFault"):
                raise
            found = describe(session, database_id)
            if found is None:  # deleted between the two calls: try again later
                raise RetryableCloudError(
                    "database_conflict",
                    "The database was deleted while it was made.",
                    detail=str(error),
                ) from error
            return found
    return _parse(created["DBInstance"])


def modify(
    session: AwsSession,
    database_id: str,
    *,
    storage_gb: int | None = None,
    multi_az: bool | None = None,
    backup_retention_days: int | None = None,
    deletion_protection: bool | None = None,
) -> DbInstance | None:
    """Apply the given changes at once; None when the instance cannot be modified now."""
    changes: dict[str, Any] = {}
    if storage_gb is not None:
        changes["AllocatedStorage"] = storage_gb
    if multi_az is not None:
        changes["MultiAZ"] = multi_az
    if backup_retention_days is not None:
        changes["BackupRetentionPeriod"] = backup_retention_days
    if deletion_protection is not None:
        changes["DeletionProtection"] = deletion_protection
    with aws_errors():
        try:
            modified = _client(session).modify_db_instance(
                DBInstanceIdentifier=instance_identifier(database_id),
                ApplyImmediately=True,
                **changes,
            )
        except ClientError as error:
            if error_code(error) in ("InvalidDBInstanceState", "InvalidDBInstanceStateFault"):
                return None
            raise
    return _parse(modified["DBInstance"])


def delete(session: AwsSession, database_id: str, *, final_snapshot: bool) -> bool:
    """Start deleting the instance, taking its final snapshot unless told not to: True when RDS
    took the delete (or the instance is gone), False when the instance cannot be deleted in its
    state now (being created, modified or backed up: the caller asks again later). Any other
    refusal (a snapshot quota, a permission) is raised."""
    options: dict[str, Any] = (
        {"FinalDBSnapshotIdentifier": final_snapshot_identifier(database_id)}
        if final_snapshot
        else {"SkipFinalSnapshot": True}
    )
    with aws_errors():
        try:
            _client(session).delete_db_instance(
                DBInstanceIdentifier=instance_identifier(database_id), **options
            )
        except ClientError as error:
            code = error_code(error)
            if code in ("InvalidDBInstanceState", "InvalidDBInstanceStateFault"):
                return False
            if code not in ("DBInstanceNotFound", "DBInstanceNotFoundFault"):
                raise
    return True


def delete_subnet_group(session: AwsSession, database_id: str) -> None:
    with aws_errors(), ignoring("DBSubnetGroupNotFoundFault", "DBSubnetGroupNotFound"):
        _client(session).delete_db_subnet_group(DBSubnetGroupName=subnet_group_name(database_id))


def final_snapshot_exists(session: AwsSession, database_id: str) -> bool:
    with aws_errors():
        try:
            found = _client(session).describe_db_snapshots(
                DBSnapshotIdentifier=final_snapshot_identifier(database_id)
            )["DBSnapshots"]
        except ClientError as error:
            if error_code(error) in ("DBSnapshotNotFound", "DBSnapshotNotFoundFault"):
                return False
            raise
    return bool(found)


# -- the database's security group ------------------------------------------------------------


def ensure_security_group(
    session: AwsSession, project_id: str, database_id: str, *, vpc_id: str, services_group_id: str
) -> str:
    """The database's group in the project's VPC, admitting 5432 only from the services' group."""
    return resource_groups.ensure_group(
        session,
        project_id,
        database_id,
        name=security_group_name(database_id),
        description="Capstan database: PostgreSQL over TLS from the project services",
        port=PORT,
        vpc_id=vpc_id,
        services_group_id=services_group_id,
    )


def delete_security_group(session: AwsSession, database_id: str) -> bool:
    """Remove the database's group; False while the instance's network interfaces still use it."""
    return resource_groups.delete_group(session, database_id, security_group_name(database_id))
