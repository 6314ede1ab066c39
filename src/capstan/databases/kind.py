"""Databases as a kind: they live in the project's subnets, so they need its network."""

from __future__ import annotations

from capstan.databases.reconcile import DatabaseReconciler
from capstan.databases.router import router
from capstan.kit.kind import networked_kind

KIND = networked_kind(
    "databases",
    DatabaseReconciler,
    router,
    leftovers=("db instance", "db subnet group", "db snapshot", "security group"),
)
