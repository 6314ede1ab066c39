"""SSM Parameter Store: a target's environment as SecureString parameters under
`/capstan/<resource_id>/<NAME>`, referenced by ARN from the task definition."""

from __future__ import annotations

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


def put_environment(
    session: AwsSession, project_id: str, resource_id: str, variables: dict[str, str]
) -> dict[str, str]:
    """Make the target's parameters exactly `variables`; answer name -> parameter ARN.

    Unchanged values are not written again (no new parameter version, no churn).
    """
    ssm = _client(session)
    prefix = names.parameter_path(resource_id)
    with aws_errors():
        current = _current(ssm, resource_id)
        for variable, value in variables.items():
            name = prefix + variable
            existing = current.get(name)
            if existing is not None and existing.get("Value") == value:
                continue
            ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
            # Tags cannot go with Overwrite in one call.
            ssm.add_tags_to_resource(
                ResourceType="Parameter",
                ResourceId=name,
                Tags=names.tag_list(project_id, resource_id),
            )
        stale = [name for name in current if name.removeprefix(prefix) not in variables]
        for start in range(0, len(stale), 10):
            ssm.delete_parameters(Names=stale[start : start + 10])
        if any(prefix + variable not in current for variable in variables):
            current = _current(ssm, resource_id)
    return {
        variable: str(current[prefix + variable]["ARN"])
        for variable in variables
        if prefix + variable in current
    }


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
