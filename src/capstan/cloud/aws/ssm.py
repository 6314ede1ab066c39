"""SSM Parameter Store: a target's environment as SecureString parameters under
`/capstan/<resource_id>/<NAME>`, referenced by ARN from the task definition (or by name from a
site's build).

A parameter holds one to 8 KiB (4 KiB in the standard tier): parameters are written in the
`Intelligent-Tiering` tier, which makes a value over 4 KiB an advanced parameter, and the API
refuses values over 8 KiB. An empty value cannot be a parameter at all, and has nothing to hide:
it is given to the container or build in plain (`StoredEnvironment.plain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def _client(session: AwsSession) -> Any:
    return session.client("ssm")


def _current(ssm: Any, resource_id: str) -> dict[str, dict[str, Any]]:
    """Parameter name -> the parameter (decrypted), for every parameter of the target."""
    found: dict[str, dict[str, Any]] = {}
    paginator = ssm.get_paginator("get_parameters_by_path")
    for page in paginator.paginate(
        Path=names.parameter_path(resource_id).rstrip("/"), Recursive=True, WithDecryption=True
    ):
        for parameter in page["Parameters"]:
            found[parameter["Name"]] = parameter
    return found


# The largest value a parameter holds (advanced tier); the API's limit on a variable's value.
MAX_VALUE_BYTES = 8192


@dataclass(frozen=True)
class StoredEnvironment:
    """Where a target's variables are: name -> SecureString parameter ARN, and name -> value of
    the (empty) values given in plain."""

    parameters: dict[str, str]
    plain: dict[str, str]


def put_environment(
    session: AwsSession, project_id: str, resource_id: str, variables: dict[str, str]
) -> StoredEnvironment:
    """Make the target's parameters exactly the non-empty `variables`.

    Unchanged values are not written again (no new parameter version, no churn).
    """
    ssm = _client(session)
    prefix = names.parameter_path(resource_id)
    secret = {variable: value for variable, value in variables.items() if value}
    with aws_errors():
        current = _current(ssm, resource_id)
        for variable, value in secret.items():
            name = prefix + variable
            existing = current.get(name)
            if existing is not None and existing.get("Value") == value:
                continue
            ssm.put_parameter(
                Name=name,
                Value=value,
                Type="SecureString",
                Tier="Intelligent-Tiering",
                Overwrite=True,
            )
            # Tags cannot go with Overwrite in one call.
            ssm.add_tags_to_resource(
                ResourceType="Parameter",
                ResourceId=name,
                Tags=names.tag_list(project_id, resource_id),
            )
        stale = [name for name in current if name.removeprefix(prefix) not in secret]
        for start in range(0, len(stale), 10):
            ssm.delete_parameters(Names=stale[start : start + 10])
        if any(prefix + variable not in current for variable in secret):
            current = _current(ssm, resource_id)
    return StoredEnvironment(
        parameters={
            variable: str(current[prefix + variable]["ARN"])
            for variable in secret
            if prefix + variable in current
        },
        plain={variable: value for variable, value in variables.items() if not value},
    )


def parameter_names(session: AwsSession, resource_id: str) -> list[str]:
    with aws_errors():
        return sorted(_current(_client(session), resource_id))


def delete_environment(session: AwsSession, resource_id: str) -> None:
    ssm = _client(session)
    with aws_errors():
        stale = sorted(_current(ssm, resource_id))
        for start in range(0, len(stale), 10):
            with ignoring("ParameterNotFound"):
                ssm.delete_parameters(Names=stale[start : start + 10])
