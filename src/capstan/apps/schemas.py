"""Request and response shapes of web servers, workers, static websites, their previews and
deployments."""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from capstan.apps import scaling as compute
from capstan.apps import source_fields as source
from capstan.cloud.deploy import MAX_VALUE_BYTES
from capstan.cloud.fargate import CPU_VALUES
from capstan.cloud.task_definition_size import start_command_bytes
from capstan.runs.schemas import RunOut
from capstan.schemas import FREE_TEXT, Request, Response
from capstan.validation import pattern

DNS_LABEL = pattern(
    r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$",
    "lowercase letters, digits and hyphens, starting and ending with a letter or digit",
)
# Git forbids spaces, "~^:?*[\" and control characters in ref names (the rest in `_branch_rules`).
BRANCH = pattern(
    r"^[^\x00-\x20~^:?*\[\\\x7f]{1,255}$",
    "a git branch name: 1 to 255 characters, without spaces, control characters or any of "
    "~ ^ : ? * [ \\",
)
ENV_NAME = pattern(
    r"^[A-Za-z_][A-Za-z0-9_]{0,254}$",
    "letters, digits and underscores, not starting with a digit (at most 255)",
)

ServiceName = Annotated[
    str,
    Field(
        pattern=DNS_LABEL,
        max_length=40,
        description="A DNS label (lowercase letters, digits, inner hyphens; at most 40 "
        "characters); the service's hostname is <name>.<hostname_suffix>.<domain>.",
    ),
]
Repo = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$",
            "a repository's full name, owner/name (letters, digits, _ . and -)",
        ),
        examples=["acme/shop"],
    ),
]


def _branch_rules(branch: str) -> str:
    """The parts of git's ref-name rules a character class cannot say."""
    if (
        branch.startswith(("/", "-"))
        or branch.endswith(("/", ".", ".lock"))
        or any(bad in branch for bad in ("..", "//", "@{"))
    ):
        raise ValueError("not a valid git branch name")
    return branch


Branch = Annotated[str, Field(pattern=BRANCH, examples=["main"]), AfterValidator(_branch_rules)]


def _relative_directory(path: str) -> str:
    """A directory inside the checked-out repository: relative, no `..` segments."""
    if path.startswith("/") or ".." in path.split("/"):
        raise ValueError("must be a directory inside the repository (relative, without '..')")
    return path


PublishDir = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^[\x20-\x7e]{1,1024}$", "1 to 1024 printable ASCII characters (spaces allowed)"
        ),
        examples=["dist"],
        description="The directory the build command leaves the site in, relative to the "
        "repository root; its files are uploaded to the site's bucket.",
    ),
    AfterValidator(_relative_directory),
]
# Free text: a shell command may hold tabs and newlines (never NUL: `capstan.schemas`).
Command = Annotated[str, StringConstraints(min_length=1, max_length=4096), FREE_TEXT]
ReleaseCommand = Annotated[
    Command, Field(description="Run once under `sh -c` in each new release, before its rollout.")
]
# What a start command may take of its task definition (`cloud/task_definition_size.py`): every
# command of printable ASCII, tabs and newlines within 4096 characters fits (8,232 at most).
START_COMMAND_BYTES = 9 * 1024


def _start_command_fits(command: str) -> str:
    size = start_command_bytes(command)
    if size > START_COMMAND_BYTES:
        raise ValueError(
            f"the start command takes {size} bytes of the task definition, which holds at most "
            f"{START_COMMAND_BYTES} of it: quotes, backslashes, control characters and "
            "characters beyond ASCII take more than one"
        )
    return command


StartCommand = Annotated[
    Command,
    Field(
        description="At most 4096 characters, and 9 KiB as the task definition writes it (in "
        "JSON: a quote or backslash takes 2 bytes, a character beyond ASCII 6 or 12)."
    ),
    AfterValidator(_start_command_fits),
]
HealthPath = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^/[\x21-\x7e]{0,1023}$",
            "a path starting with / (printable ASCII without spaces, at most 1024 characters)",
        ),
        examples=["/healthz"],
    ),
]
Cpu = Annotated[
    int,
    Field(
        description=f"One of {', '.join(map(str, CPU_VALUES))}.",
        json_schema_extra={"enum": list(CPU_VALUES)},
    ),
]
# An RFC 3339 date-time from 1970 to 2999 (CloudWatch counts milliseconds since 1970; later
# than 2999 is a typo); a number is not a date-time, whatever pydantic's lax mode would make of it.
_SINCE = re.compile(
    r"^(19[7-9][0-9]|2[0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    r"([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _date_time_text(value: object) -> object:
    if not isinstance(value, str) or not _SINCE.match(value):
        raise ValueError(
            "must be an RFC 3339 date-time from 1970 to 2999, e.g. 2026-01-31T12:00:00Z"
        )
    return value


def _not_before_1970(value: datetime) -> datetime:
    # "1970-01-01T00:00:00+01:00" is still 1969 in UTC: nothing was logged before 1970 anyway.
    return max(value, _EPOCH)


Since = Annotated[
    datetime,
    BeforeValidator(_date_time_text),
    AfterValidator(_not_before_1970),
    Field(
        description="Only lines after this RFC 3339 date-time (1970 to 2999, with a zone).",
        json_schema_extra={"pattern": _SINCE.pattern},
    ),
]
Memory = Annotated[int, Field(description="MiB; must pair with cpu under Fargate's rules.")]


class _CpuCheck(Request):
    @field_validator("cpu", check_fields=False)
    @classmethod
    def _cpu_allowed(cls, cpu: int | None) -> int | None:
        if cpu is not None and cpu not in CPU_VALUES:
            raise ValueError(f"cpu must be one of {', '.join(map(str, CPU_VALUES))}")
        return cpu


class WebServerCreate(_CpuCheck, compute.WebServerCompute, source.ContainerSourceCreate):
    name: ServiceName
    repo: Repo
    branch: Branch
    build_command: Command | None = None
    release_command: ReleaseCommand | None = None
    health_path: HealthPath = "/"
    cpu: Cpu
    memory: Memory
    auto_deploy: bool = False


class _Omittable(Request):
    """A PATCH body whose fields may be left out but, except where the spec lets a field be
    empty, not set to null: a null answers 400 like any other wrong type, and the published
    schema does not offer null either."""

    @field_validator("*")
    @classmethod
    def _given_means_set(cls, value: object, info: ValidationInfo) -> object:
        if value is None and info.field_name not in cls._nullable:
            raise ValueError("may be left out, not null")
        return value

    _nullable: ClassVar[frozenset[str]] = frozenset()


class WebServerUpdate(
    _CpuCheck, compute.WebServerComputeUpdate, source.ContainerSourceUpdate, _Omittable
):
    # null: the container definition builds itself; no release command
    _nullable = frozenset({"build_command", "release_command"})

    branch: Branch | SkipJsonSchema[None] = None
    build_command: Command | None = None
    release_command: ReleaseCommand | None = None
    health_path: HealthPath | SkipJsonSchema[None] = None
    cpu: Cpu | SkipJsonSchema[None] = None
    memory: Memory | SkipJsonSchema[None] = None
    auto_deploy: bool | SkipJsonSchema[None] = None


class WorkerCreate(_CpuCheck, compute.WorkerCompute, source.ContainerSourceCreate):
    name: ServiceName
    repo: Repo
    branch: Branch
    start_command: StartCommand
    release_command: ReleaseCommand | None = None
    cpu: Cpu
    memory: Memory
    auto_deploy: bool = False


class WorkerUpdate(
    _CpuCheck, compute.WorkerComputeUpdate, source.ContainerSourceUpdate, _Omittable
):
    _nullable = frozenset({"release_command"})

    branch: Branch | SkipJsonSchema[None] = None
    start_command: StartCommand | SkipJsonSchema[None] = None
    release_command: ReleaseCommand | None = None
    cpu: Cpu | SkipJsonSchema[None] = None
    memory: Memory | SkipJsonSchema[None] = None
    auto_deploy: bool | SkipJsonSchema[None] = None


class StaticWebsiteCreate(source.SiteSourceCreate):
    name: ServiceName
    repo: Repo
    branch: Branch
    build_command: Command
    publish_dir: PublishDir
    auto_deploy: bool = False


class StaticWebsiteUpdate(source.SiteSourceUpdate, _Omittable):
    branch: Branch | SkipJsonSchema[None] = None
    build_command: Command | SkipJsonSchema[None] = None
    publish_dir: PublishDir | SkipJsonSchema[None] = None
    auto_deploy: bool | SkipJsonSchema[None] = None


Status = Literal["deploying", "running", "failed"]
# Beside every status that may be `failed`: null, or why.
Failure = Annotated[
    str | None,
    Field(description="Why it is failed (its newest deployment's reason); null unless it is."),
]


class WebServerOut(compute.WebServerComputeOut, source.ContainerSourceOut):
    id: str
    name: str
    status: Status
    error: Failure = None
    url: str
    repo: str
    branch: str
    build_command: str | None
    release_command: str | None = None
    health_path: str
    cpu: int
    memory: int
    auto_deploy: bool
    created_at: datetime
    updated_at: datetime


class WorkerOut(compute.WorkerComputeOut, source.ContainerSourceOut):
    id: str
    name: str
    status: Status
    error: Failure = None
    repo: str
    branch: str
    start_command: str
    release_command: str | None = None
    cpu: int
    memory: int
    auto_deploy: bool
    created_at: datetime
    updated_at: datetime


class StaticWebsiteOut(source.SiteSourceOut):
    id: str
    name: str
    status: Status
    error: Failure = None
    url: str
    repo: str
    branch: str
    build_command: str
    publish_dir: str
    auto_deploy: bool
    created_at: datetime
    updated_at: datetime


# An ECS task definition holds at most 65,536 bytes (`cloud/task_definition_size.py`), and names
# each secret variable twice: as itself, and in its parameter's name (`/capstan/<id>/<version>/
# NAME`). With the rest of a worker's definition at its longest (the longest region's names, the
# image by digest), 200 variables with 16 KiB of names take 53,217 bytes; a start command adds up
# to 9,216 (START_COMMAND_BYTES), the first variable that references a database 341 (its
# connection URL, up to 245 bytes, and PGPASSWORD's secret) and each further one 169: 63,281 at
# these limits, 2,255 to spare for what ECS may count beyond the request (the definition's tags,
# 214 bytes; what ECS adds to a definition it keeps); tests/cloud/test_task_definition_size.py
# builds the largest.
MAX_VARIABLES = 200
MAX_NAMES_BYTES = 16 * 1024
MAX_DATABASE_VARIABLES = 4


def check_task_definition_share(names: Collection[str], references: int) -> None:
    """Refuse (ValueError) an environment of these variable names, `references` of them to a
    database, that would take more of its task definition than the limits above allow."""
    if sum(len(name) for name in names) > MAX_NAMES_BYTES:
        raise ValueError(f"the names hold at most {MAX_NAMES_BYTES} characters together")
    if references > MAX_DATABASE_VARIABLES:
        raise ValueError(
            f"at most {MAX_DATABASE_VARIABLES} variables reference a database (each is its whole "
            "connection URL in the task definition)"
        )


def _value_fits(value: str) -> str:
    if len(value.encode()) > MAX_VALUE_BYTES:
        raise ValueError(f"a value holds at most {MAX_VALUE_BYTES} bytes (8 KiB)")
    return value


class ValueFrom(Request):
    database: str = Field(
        description="The id of a database of the project: the variable is its connection URL "
        "(without the password; the task gets `PGPASSWORD` from the database's secret)."
    )


class EnvironmentVariable(Request):
    name: Annotated[str, Field(pattern=ENV_NAME)]
    value: Annotated[str, AfterValidator(_value_fits), FREE_TEXT] | None = None
    value_from: ValueFrom | None = Field(
        default=None, description="Instead of `value`: where the cloud resolves the value from."
    )

    @model_validator(mode="after")
    def _one_source(self) -> EnvironmentVariable:
        if (self.value is None) == (self.value_from is None):
            raise ValueError("give either value or value_from")
        return self

    @model_serializer(mode="wrap")
    def _without_the_other_source(self, handler: SerializerFunctionWrapHandler) -> Any:
        shape = handler(self)
        return {key: item for key, item in shape.items() if item is not None}


class Environment(Request):
    environment: Annotated[list[EnvironmentVariable], Field(max_length=MAX_VARIABLES)]

    @field_validator("environment")
    @classmethod
    def _unique_names(cls, variables: list[EnvironmentVariable]) -> list[EnvironmentVariable]:
        seen: set[str] = set()
        for variable in variables:
            if variable.name in seen:
                raise ValueError(f"{variable.name} appears more than once")
            seen.add(variable.name)
        check_task_definition_share(seen, sum(1 for v in variables if v.value_from))
        return variables


class Deploying(Response):
    status: Literal["deploying"] = "deploying"


class ReleaseSettings(Response):
    """What a release keeps of its service's settings (the fields of its kind)."""

    branch: str
    cpu: int | None = None
    memory: int | None = None
    health_path: str | None = None
    build_command: str | None = None
    start_command: str | None = None
    publish_dir: str | None = None
    architecture: str | None = None


DeploymentStatus = Literal[
    "pending", "building", "deploying", "running", "replaced", "superseded", "failed"
]


class DeploymentOut(Response):
    """A deployment: one release of a service. At most one per service (or preview) is
    `running`, the live one; one that was live and was replaced reads `replaced`, one replaced
    before it went live `superseded`; `failed` keeps its `error`."""

    id: str
    status: DeploymentStatus
    trigger: Literal["create", "patch", "redeploy", "environment", "push", "rollback"]
    commit_sha: str | None
    commit_message: str | None = Field(
        default=None,
        description="The deployed commit's message, as the git host gave it; null until the "
        "commit is known.",
    )
    created_at: datetime
    finished_at: datetime | None
    error: str | None
    image: str | None = Field(
        default=None, description="Web servers and workers: the image, by digest, once built."
    )
    rollback_of: str | None = Field(
        default=None, description="A rollback: the deployment whose release it deploys again."
    )
    settings: ReleaseSettings | None = Field(
        default=None, description="The settings this release runs with."
    )
    release_run: RunOut | None = Field(
        default=None, description="The run of its release command before its rollout, if any."
    )


class RollingBack(Response):
    status: Literal["deploying"] = "deploying"
    deployment: DeploymentOut


class DeploymentList(Response):
    deployments: list[DeploymentOut]


class PreviewCreate(Request):
    branch: Branch


class PreviewOut(Response):
    id: str
    branch: str
    url: str | None = None
    status: Status
    error: Failure = None
    expires_at: datetime | None = Field(
        default=None,
        description="When the preview is removed unless its branch is pushed to first (the "
        "project's `preview_ttl_hours` after the last push, or its creation); absent when "
        "previews do not expire.",
    )

    @model_serializer(mode="wrap")
    def _with_error(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        """`error` is shown even when null, where the routes leave out other null fields (a
        worker preview's url)."""
        data = handler(self)
        if isinstance(data, dict):
            data.setdefault("error", self.error)
        return data


class PreviewList(Response):
    previews: list[PreviewOut]
