"""SSM Parameter Store: a target's environment as SecureString parameters under
`/capstan/<resource_id>/<version>/<NAME>`, referenced by name from the task definition and from a
site's build.

A task definition's `valueFrom` may name a parameter of the task's own Region (and account) by
its name instead of its ARN (AWS: "If the SSM Parameter Store parameter exists in the same Region
as the task you're launching, then you can use either the full ARN or name of the parameter"), and
the parameters are always written by the session that registers the task definition. A name is
its ARN without `arn:<partition>:ssm:<region>:<account>:parameter` (44 to 56 bytes): up to 11,200
bytes of a task definition's 64 KiB at 200 variables (`cloud/task_definition_size.py`). ECS
resolves the name to the same parameter, so the execution role's grant (`ssm:GetParameters` on
`…:parameter/capstan/*`) reads it as before.

Each version of an environment has a path of its own and is never rewritten with other values,
so an older task definition (a release rolled back to, or the one ECS's circuit breaker returns
to) always finds the values it was made with; `prune_versions` removes the versions no release
needs. (Version `None` is the unversioned path `/capstan/<resource_id>/<NAME>` of targets
deployed before versions existed.)

A parameter holds one to 8 KiB (4 KiB in the standard tier): parameters are written in the
`Intelligent-Tiering` tier, which makes a value over 4 KiB an advanced parameter, and the API
refuses values over 8 KiB. An empty value cannot be a parameter at all, and has nothing to hide:
it is given to the container or build in plain (`StoredEnvironment.plain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def _client(session: AwsSession) -> Any:
    return session.client("ssm")


def version_path(resource_id: str, version: str | None) -> str:
    """The path (ending in `/`) of one version of a target's environment."""
    root = names.parameter_path(resource_id)
    return root if version is None else f"{root}{version}/"


def _current(
    ssm: Any, path: str, *, recursive: bool = False, decrypt: bool = True
) -> dict[str, dict[str, Any]]:
    """Parameter name -> the parameter, for every parameter under `path` (or, not `recursive`,
    directly in it)."""
    found: dict[str, dict[str, Any]] = {}
    paginator = ssm.get_paginator("get_parameters_by_path")
    for page in paginator.paginate(
        Path=path.rstrip("/"), Recursive=recursive, WithDecryption=decrypt
    ):
        for parameter in page["Parameters"]:
            found[parameter["Name"]] = parameter
    return found


# The largest value a parameter holds (advanced tier); the API's limit on a variable's value.
MAX_VALUE_BYTES = 8192


@dataclass(frozen=True)
class StoredEnvironment:
    """Where a target's variables are: name -> the task definition's `valueFrom` (the
    SecureString parameter's name, `/capstan/…`; `Deployer.put_environment` adds the ARN of a
    database's secret), and name -> value of the (empty) values given in plain."""

    parameters: dict[str, str]
    plain: dict[str, str]


def put_environment(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    variables: dict[str, str],
    version: str | None = None,
) -> StoredEnvironment:
    """Make the parameters of `version` of the target's environment exactly the non-empty
    `variables`. A version's values never change (its name is new with each environment), so
    nothing of it is read first: each parameter is created with its tags (one a crash left
    behind is overwritten) — no call at all for an environment without secrets. Otherwise (the
    unversioned path, which each environment overwrites) what is there is read, and unchanged
    values are not written again."""
    ssm = _client(session)
    prefix = version_path(resource_id, version)
    secret = {variable: value for variable, value in variables.items() if value}
    plain: dict[str, str] = {variable: value for variable, value in variables.items() if not value}
    tags = names.tag_list(project_id, resource_id)
    with aws_errors():
        if version is not None:
            for variable, value in secret.items():
                _put(ssm, prefix + variable, value, tags, new=True, Tier="Intelligent-Tiering")
        else:
            current = _current(ssm, prefix)
            for variable, value in secret.items():
                name = prefix + variable
                existing = current.get(name)
                if existing is not None and existing.get("Value") == value:
                    continue
                _put(ssm, name, value, tags, new=existing is None, Tier="Intelligent-Tiering")
            stale = [name for name in current if name.removeprefix(prefix) not in secret]
            for start in range(0, len(stale), 10):
                ssm.delete_parameters(Names=stale[start : start + 10])
    return StoredEnvironment(
        parameters={variable: prefix + variable for variable in secret}, plain=plain
    )


def parameter_names(session: AwsSession, resource_id: str) -> list[str]:
    with aws_errors():
        root = names.parameter_path(resource_id)
        return sorted(_current(_client(session), root, recursive=True, decrypt=False))


def prune_versions(session: AwsSession, resource_id: str, keep: set[str | None]) -> list[str]:
    """Delete the parameters of every version of the target's environment not in `keep`; the
    names deleted."""
    ssm = _client(session)
    root = names.parameter_path(resource_id)
    with aws_errors():
        stale = []
        for name in sorted(_current(ssm, root, recursive=True, decrypt=False)):
            rest = name.removeprefix(root)
            version = rest.split("/", 1)[0] if "/" in rest else None
            if version not in keep:
                stale.append(name)
        for start in range(0, len(stale), 10):
            with ignoring("ParameterNotFound"):
                ssm.delete_parameters(Names=stale[start : start + 10])
    return stale


def delete_environment(session: AwsSession, resource_id: str) -> None:
    ssm = _client(session)
    with aws_errors():
        root = names.parameter_path(resource_id)
        stale = sorted(_current(ssm, root, recursive=True, decrypt=False))
        for start in range(0, len(stale), 10):
            with ignoring("ParameterNotFound"):
                ssm.delete_parameters(Names=stale[start : start + 10])


# The tokens a build may be given (`put_build_token`'s names).
BUILD_TOKENS = ("git", "dockerhub")


def put_build_token(
    session: AwsSession, project_id: str, resource_id: str, name: str, token: str
) -> str:
    """Store a token of the target's next build (`git`: the repository's installation token;
    `dockerhub`: the operator's registry token) as a SecureString, overwritten by each build, and
    answer the parameter's name, which the build names instead of the value: the token is in no
    build record."""
    assert name in BUILD_TOKENS
    ssm = _client(session)
    parameter = names.build_token_parameter(project_id, resource_id, name)
    with aws_errors():
        _put(ssm, parameter, token, names.tag_list(project_id, resource_id), new=True)
    return parameter


def _put(
    ssm: Any, name: str, value: str, tags: list[dict[str, str]], *, new: bool, **extra: Any
) -> None:
    """A SecureString parameter with this value, tagged. Tags cannot go with `Overwrite`, so a
    parameter thought `new` is created with its tags in one call; one that exists after all
    (`ParameterAlreadyExists`), or is known to, is overwritten: it got its tags when it was made
    (here, or by an older Capstan, which tagged each parameter right after writing it)."""
    if new:
        try:
            ssm.put_parameter(Name=name, Value=value, Type="SecureString", Tags=tags, **extra)
            return
        except ClientError as error:
            if error_code(error) != "ParameterAlreadyExists":
                raise
    ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True, **extra)


def delete_build_tokens(session: AwsSession, project_id: str, resource_id: str) -> None:
    parameters = [names.build_token_parameter(project_id, resource_id, n) for n in BUILD_TOKENS]
    with aws_errors():  # DeleteParameters answers a missing name as invalid, without failing
        _client(session).delete_parameters(Names=parameters)
