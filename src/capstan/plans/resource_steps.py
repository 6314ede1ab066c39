"""Planning the kinds in a project's network, and model access: what a file's caches,
databases, buckets and model list change against the live rows (`diff.make_plan` gathers them),
and a deletion's step, which services' steps use too."""

from __future__ import annotations

from typing import Any

from capstan.buckets.models import Bucket
from capstan.caches.models import Cache
from capstan.databases import service as databases
from capstan.databases.models import Database
from capstan.model_access.models import ModelAccess
from capstan.plans.environment import (
    KnownDatabases,
)
from capstan.plans.pricing import monthly_usd
from capstan.plans.schemas import (
    CapstanFile,
    Change,
    FieldChange,
    LeftAlone,
)
from capstan.plans.steps import (
    DATABASE_FIXED,
    DatabaseFieldImmutable,
    Step,
)
from capstan.projects.models import Project


def deletion(
    kind: Any, name: str, row_id: str, settings: dict[str, Any], region: str, section: str
) -> Step:
    return Step(
        Change(
            action="delete",
            kind=kind,
            name=name,
            id=row_id,
            fields=[],
            monthly_usd_before=monthly_usd(kind, settings, region),
            monthly_usd_after=0.0,
        ),
        f"{section}.{name}",
    )


def cache_steps(
    document: CapstanFile,
    project: Project,
    current: list[Cache],
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[Step]:
    steps: list[Step] = []
    region = project.region
    existing = {cache.name: cache for cache in current if cache.name is not None}
    for name, spec in document.caches.items():
        settings = spec.model_dump()
        cache = existing.get(name)
        if cache is None:
            change = Change(
                action="create",
                kind="cache",
                name=name,
                id=None,
                fields=[
                    FieldChange(field="storage_limit_mb", before=None, after=spec.storage_limit_mb)
                ],
                monthly_usd_before=0.0,
                monthly_usd_after=monthly_usd("cache", settings, region),
            )
            steps.append(Step(change, f"caches.{name}", body=settings))
        elif cache.storage_limit_mb != spec.storage_limit_mb:
            change = Change(
                action="update",
                kind="cache",
                name=name,
                id=cache.id,
                fields=[
                    FieldChange(
                        field="storage_limit_mb",
                        before=cache.storage_limit_mb,
                        after=spec.storage_limit_mb,
                    )
                ],
                monthly_usd_before=monthly_usd("cache", cache_size(cache), region),
                monthly_usd_after=monthly_usd("cache", settings, region),
            )
            steps.append(Step(change, f"caches.{name}", body=settings))
    for cache in current:
        if cache.name is not None and cache.name in document.caches:
            continue
        label = cache.name or cache.id
        if prune:
            steps.append(deletion("cache", label, cache.id, cache_size(cache), region, "caches"))
        else:
            left_alone.append(LeftAlone(kind="cache", name=label, id=cache.id))
    return steps


def cache_size(cache: Cache) -> dict[str, Any]:
    return {"storage_limit_mb": cache.storage_limit_mb}


def database_steps(
    document: CapstanFile,
    project: Project,
    known: KnownDatabases,
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[Step]:
    """Created with the file's fields; changed in what the update body can change (a storage
    shrink is the service's refusal); the fields fixed at creation cannot differ."""
    steps: list[Step] = []
    region = project.region
    wanted: dict[str, Any] = document.databases
    for name, spec in wanted.items():
        path = f"databases.{name}"
        settings = spec.model_dump()
        database = known.by_name.get(name)
        if database is None:
            change = Change(
                action="create",
                kind="database",
                name=name,
                id=None,
                fields=[
                    FieldChange(field=key, before=None, after=value)
                    for key, value in settings.items()
                    if value is not None
                ],
                monthly_usd_before=0.0,
                monthly_usd_after=monthly_usd("database", settings, region),
            )
            steps.append(Step(change, path, body={"name": name, **settings}))
            continue
        for key in DATABASE_FIXED:
            # engine_version left out: whatever the database has (the newest at creation).
            if settings[key] is not None and settings[key] != getattr(database, key):
                raise DatabaseFieldImmutable(
                    f"{path}.{key}: a database's {key} cannot change ({getattr(database, key)} "
                    "now); give the database another name to make a new one.",
                    details=[{"field": f"{path}.{key}", "type": "immutable", "message": key}],
                )
        changed = {
            key: settings[key]
            for key in databases.SETTINGS
            if settings[key] != getattr(database, key)
        }
        if changed:
            change = Change(
                action="update",
                kind="database",
                name=name,
                id=database.id,
                fields=[
                    FieldChange(field=key, before=getattr(database, key), after=value)
                    for key, value in changed.items()
                ],
                monthly_usd_before=monthly_usd("database", database_size(database), region),
                monthly_usd_after=monthly_usd("database", settings, region),
            )
            steps.append(Step(change, path, body=changed))
    for name, database in known.by_name.items():
        if name in document.databases:
            continue
        if prune:
            steps.append(
                deletion(
                    "database", name, database.id, database_size(database), region, "databases"
                )
            )
        else:
            left_alone.append(LeftAlone(kind="database", name=name, id=database.id))
    return steps


def database_size(database: Database) -> dict[str, Any]:
    return {"storage_gb": database.storage_gb, "high_availability": database.high_availability}


def bucket_steps(
    document: CapstanFile,
    project: Project,
    current: list[Bucket],
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[Step]:
    steps: list[Step] = []
    region = project.region
    unmatched = list(current)
    for label in document.buckets:
        match = next((bucket for bucket in unmatched if bucket.label == label), None)
        if match is not None:
            unmatched.remove(match)
            continue
        change = Change(
            action="create",
            kind="bucket",
            name=label,
            id=None,
            fields=[FieldChange(field="name", before=None, after=label)],
            monthly_usd_before=0.0,
            monthly_usd_after=monthly_usd("bucket", {}, region),
        )
        steps.append(Step(change, f"buckets.{label}", body={"name": label}))
    for bucket in unmatched:
        if prune:
            steps.append(deletion("bucket", bucket.label, bucket.id, {}, region, "buckets"))
        else:
            left_alone.append(LeftAlone(kind="bucket", name=bucket.label, id=bucket.id))
    return steps


def model_access_steps(document: CapstanFile, row: ModelAccess | None) -> list[Step]:
    if document.model_access is None:
        return []
    before = list(row.model_ids) if row is not None and row.enabled else []
    after = list(dict.fromkeys(document.model_access))
    if set(before) == set(after):
        return []
    change = Change(
        action="update",
        kind="model_access",
        name="model_access",
        id=None,
        fields=[FieldChange(field="model_access", before=before, after=after)],
        monthly_usd_before=0.0,
        monthly_usd_after=0.0,
    )
    return [Step(change, "model_access", body={"model_ids": after})]
