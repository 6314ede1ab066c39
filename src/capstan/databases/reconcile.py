"""The reconciler of databases (queue kind `database`): the kit's skeleton
(`capstan.kit.reconcile`) and the database's driver calls.

`DatabaseDriver.ensure` creates the security group, the subnet group and the DB instance, or
applies a change when the instance is available and differs; the pass records the endpoint and
moves the status once the cloud's instance is available as asked (`created`, `modified`), or
`failed` when the cloud gave it up. Removing deletes the instance (with its final snapshot
unless asked not to; its deletion protection is lifted in that step only, and put back when the
delete is refused), waits until it is gone, then deletes its groups; a refusal (RDS's snapshot
quota, a permission) shows in the database's `error` while it stays `deleting`.
"""

from __future__ import annotations

from capstan.cloud.databases import NETWORK_NOT_READY, DatabaseDriver, DatabaseSpec, DatabaseState
from capstan.databases import service
from capstan.databases.models import Database
from capstan.kit.models import CREATING, MODIFYING
from capstan.kit.reconcile import KitReconciler
from capstan.projects.models import Project


class DatabaseReconciler(KitReconciler[Database, DatabaseDriver, DatabaseSpec, DatabaseState]):
    kit = service.KIT
    waits_for_network = NETWORK_NOT_READY
    settles = {CREATING: "created", MODIFYING: "modified"}

    def spec(self, row: Database, project: Project) -> DatabaseSpec:
        return DatabaseSpec(
            database_id=row.id,
            project_id=row.project_id,
            engine_version=row.engine_version,
            database_name=row.database_name,
            username=row.username,
            storage_gb=row.storage_gb,
            high_availability=row.high_availability,
            backup_retention_days=row.backup_retention_days,
            network_generation=project.network_generations[-1],
        )

    def ensure(self, driver: DatabaseDriver, spec: DatabaseSpec) -> DatabaseState:
        return driver.ensure(spec)

    def remove(self, driver: DatabaseDriver, row: Database) -> bool:
        final_snapshot = not row.skip_final_snapshot
        return driver.delete(row.id, row.project_id, final_snapshot=final_snapshot)
