"""A service's environment in a plan: the stored variables beside the file's, variable by
variable, without ever showing a current value; and references to databases by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capstan.databases.models import Database
from capstan.plans.schemas import DatabaseRef, FieldChange, FromEnv
from capstan.plans.steps import EnvValue, UnknownDatabase


def shown(value: EnvValue) -> str:
    if isinstance(value, FromEnv):
        return f"(from env {value.from_env})"
    if isinstance(value, DatabaseRef):
        return f"(database {value.database})"
    return value


@dataclass
class KnownDatabases:
    """The project's live databases by name, and the names a reference may use: the file's
    and, without prune, the project's others (with prune, those are deleted)."""

    by_name: dict[str, Database]
    referable: set[str]

    def name_of(self, database_id: str) -> str | None:
        return next((d.name for d in self.by_name.values() if d.id == database_id), None)


def current_environment(
    variables: list[dict[str, Any]], known: KnownDatabases
) -> dict[str, str | DatabaseRef]:
    """A stored environment, a reference as the database's name (its id if it has none)."""
    current: dict[str, str | DatabaseRef] = {}
    for variable in variables:
        source = variable.get("value_from")
        if isinstance(source, dict) and "database" in source:
            database_id = source["database"]
            current[variable["name"]] = DatabaseRef(
                database=known.name_of(database_id) or database_id
            )
        else:
            current[variable["name"]] = variable.get("value", "")
    return current


def environment_changes(
    current: dict[str, str | DatabaseRef], desired: dict[str, EnvValue]
) -> list[FieldChange]:
    """Variable by variable. A current value is never shown (a reference shows its database);
    a secret whose value the client did not send (a plan made without it in the shell) counts
    as unchanged when it is already set."""
    changes = []
    for name, value in desired.items():
        if name not in current:
            changes.append(
                FieldChange(field=f"environment.{name}", before=None, after=shown(value))
            )
            continue
        now = current[name]
        before = shown(now) if isinstance(now, DatabaseRef) else "(set)"
        if isinstance(value, DatabaseRef) or isinstance(now, DatabaseRef):
            changed = value != now
        else:
            known = value.value if isinstance(value, FromEnv) else value
            changed = known is not None and known != now
        if changed:
            changes.append(
                FieldChange(field=f"environment.{name}", before=before, after=shown(value))
            )
    for name, now in current.items():
        if name not in desired:
            before = shown(now) if isinstance(now, DatabaseRef) else "(set)"
            changes.append(FieldChange(field=f"environment.{name}", before=before, after=None))
    return changes


def environment_body(desired: dict[str, EnvValue]) -> list[dict[str, Any]]:
    """The PUT environment body; a secret without its value keeps a place (checked at apply),
    a reference its database's name (resolved to the id when it is written)."""
    return [
        {"name": name, "database": value.database}
        if isinstance(value, DatabaseRef)
        else {"name": name, "value": value.value if isinstance(value, FromEnv) else value}
        for name, value in desired.items()
    ]


def check_references(path: str, desired: dict[str, EnvValue], known: KnownDatabases) -> None:
    """A reference names a database of the file or of the project."""
    unknown = [
        name
        for name, value in desired.items()
        if isinstance(value, DatabaseRef) and value.database not in known.referable
    ]
    if unknown:
        fields = [f"{path}.environment.{name}" for name in unknown]
        raise UnknownDatabase(
            f"{', '.join(fields)}: no database of that name in the file or the project.",
            details=[
                {"field": field, "type": "unknown_database", "message": str(desired[name])}
                for field, name in zip(fields, unknown, strict=True)
            ],
        )
