"""capstan.yaml: the document that describes a project, and the answers of plan and apply.

The document's field names and rules are the API's own: each service's settings are the fields
of its kind's create body (without `name`, which is the key), with the same types, limits and
defaults, so a file is valid exactly when the API would take its parts. It adds `environment` (a
map of variable names to a value, to `{from_env: NAME}` or to `{database: NAME}`), caches by
`name`, databases by name, buckets by label and the allowed models. `capstan_file_schema()` is
its JSON Schema, for editors, published as docs/capstan.schema.json (`python -m
capstan.plans.schemas > docs/capstan.schema.json`; a test keeps the file current).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    StringConstraints,
    create_model,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

from capstan.apps.schemas import (
    ENV_NAME,
    MAX_VARIABLES,
    ServiceName,
    StaticWebsiteCreate,
    WebServerCreate,
    WorkerCreate,
    _CpuCheck,
    _value_fits,
    check_task_definition_share,
)
from capstan.buckets.schemas import Label
from capstan.caches.schemas import CacheName, StorageLimit
from capstan.cron_jobs.schemas import Schedule, check_schedule
from capstan.databases.schemas import DatabaseCreate
from capstan.databases.schemas import Name as DatabaseName
from capstan.model_access.schemas import ModelIds
from capstan.schemas import FREE_TEXT, Request, Response

EnvName = Annotated[str, Field(pattern=ENV_NAME)]


class FromEnv(Request):
    """A value read from the shell at apply time: the file names the variable, never the value.
    The CLI fills `value` from its environment before it sends the document; a document sent
    to apply without it is refused."""

    from_env: EnvName
    # Filled by the client at apply time, never written in a file: the published schema leaves
    # it out, so an editor flags a value written in a file.
    value: SkipJsonSchema[Annotated[str, FREE_TEXT] | None] = None

    @field_validator("value")
    @classmethod
    def _fits(cls, value: str | None) -> str | None:
        return None if value is None else _value_fits(value)


class DatabaseRef(Request):
    """The connection URL of a database, named as in the file's `databases` (or one the
    project has): apply stores it as the API's `value_from` reference, by the database's id."""

    database: DatabaseName


EnvValue = Annotated[str, Field(max_length=8192), FREE_TEXT] | FromEnv | DatabaseRef


def _fits_its_task_definition(variables: dict[str, EnvValue]) -> dict[str, EnvValue]:
    """The API's limits on names and references, so a file breaking them fails its plan."""
    references = sum(1 for value in variables.values() if isinstance(value, DatabaseRef))
    check_task_definition_share(list(variables), references)
    return variables


Environment = Annotated[
    dict[EnvName, EnvValue],
    Field(
        max_length=MAX_VARIABLES,
        description="The service's whole environment (what is not named here is removed); left "
        "out, the file does not manage the environment. A value is a string or "
        "`{from_env: NAME}` (a secret, read from the shell by the CLI at apply time) or "
        "`{database: NAME}` (that database's connection URL; its password comes as PGPASSWORD).",
    ),
    AfterValidator(_fits_its_task_definition),
]


def _spec(
    create: type[BaseModel], base: type[BaseModel], *, environment: bool = True
) -> type[BaseModel]:
    """An entry of the file: its kind's create body without `name` (the entry's key), plus, for
    a service, `environment`."""
    fields: dict[str, Any] = {
        name: (field.annotation, field)
        for name, field in create.model_fields.items()
        if name != "name"
    }
    if environment:
        fields["environment"] = (Environment | None, None)
    return create_model(create.__name__.removesuffix("Create") + "Spec", __base__=base, **fields)


WebServerSpec = create_model(
    "WebServerSpec",
    __base__=_spec(WebServerCreate, _CpuCheck),
    domains=(
        list[Annotated[str, Field(min_length=1, max_length=253)]] | None,
        Field(
            default=None,
            max_length=100,
            description="The web server's custom domains (what is not named here is removed); "
            "left out, the file does not manage its domains.",
            examples=[["www.example.com"]],
        ),
    ),
)
WorkerSpec = _spec(WorkerCreate, _CpuCheck)
StaticWebsiteSpec = _spec(StaticWebsiteCreate, Request)
DatabaseSpec = _spec(DatabaseCreate, Request, environment=False)


class CacheSpec(Request):
    storage_limit_mb: StorageLimit


class CronJobSpec(Request):
    schedule: Schedule
    command: Annotated[str, StringConstraints(min_length=1, max_length=4096), FREE_TEXT] = Field(
        description="Run under `sh -c` in the service's live release."
    )
    service: ServiceName = Field(description="The web server or worker it runs in, by name.")
    cpu: int | SkipJsonSchema[None] = Field(default=None, description="Default: the service's.")
    memory: int | SkipJsonSchema[None] = Field(default=None, description="Default: the service's.")
    enabled: bool = True

    _check_schedule = field_validator("schedule")(check_schedule)


# A document's bounds (published in its schema and in docs/api.md), above what one project can
# run in an account at AWS's default quotas: web servers and previews share the project's load
# balancer, whose rules AWS caps at 100; RDS allows 40 DB instances per region
# (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html,
# https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/CHAP_Limits.html). They keep what one
# plan reads, checks and asks the git host for small; a body is at most 4 MB besides.
MAX_SERVICES_PER_SECTION = 100
MAX_CACHES = 40
MAX_DATABASES = 40
MAX_BUCKETS = 100
MAX_CRON_JOBS = 100


class CapstanFile(Request):
    """A project's desired state. Sections left out are empty (with `prune`, what the project
    has there is deleted), except `model_access`, which left out is not managed."""

    web_servers: dict[ServiceName, WebServerSpec] = Field(
        default_factory=dict,
        description="Web servers by name.",
        max_length=MAX_SERVICES_PER_SECTION,
    )
    workers: dict[ServiceName, WorkerSpec] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Workers by name.", max_length=MAX_SERVICES_PER_SECTION
    )
    static_websites: dict[ServiceName, StaticWebsiteSpec] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="Static websites by name.",
        max_length=MAX_SERVICES_PER_SECTION,
    )
    caches: dict[CacheName, CacheSpec] = Field(
        default_factory=dict, description="Caches by their `name` label.", max_length=MAX_CACHES
    )
    databases: dict[DatabaseName, DatabaseSpec] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="PostgreSQL databases by name.", max_length=MAX_DATABASES
    )
    buckets: list[Label] = Field(
        default_factory=list, description="Storage buckets by label.", max_length=MAX_BUCKETS
    )
    cron_jobs: dict[ServiceName, CronJobSpec] = Field(
        default_factory=dict,
        description="Cron jobs by name: a command run on a schedule in a service's release.",
        max_length=MAX_CRON_JOBS,
    )
    model_access: ModelIds | None = Field(
        default=None,
        description="The foundation models the project's services may invoke ([] allows "
        "none); left out, model access is not managed by the file.",
    )

    @field_validator("buckets")
    @classmethod
    def _unique_labels(cls, labels: list[str]) -> list[str]:
        seen: set[str] = set()
        for label in labels:
            if label in seen:
                raise ValueError(f"{label!r} appears more than once")
            seen.add(label)
        return labels


def capstan_file_schema() -> dict[str, Any]:
    schema = CapstanFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "capstan.yaml"
    return schema


# -- answers --------------------------------------------------------------------------------

Kind = Literal[
    "web_server",
    "worker",
    "static_website",
    "cache",
    "database",
    "bucket",
    "model_access",
    "cron_job",
]


class FieldChange(Response):
    field: str = Field(description="The field, as in the file (`cpu`, `environment.LOG_LEVEL`).")
    before: Any = Field(
        description="The current value (an environment variable's shows `(set)`, never a value; "
        "one that references a database shows `(database NAME)`)."
    )
    after: Any = Field(
        description="The value after apply; a secret shows `(from env NAME)`, never its value; a "
        "database reference `(database NAME)`."
    )


class Change(Response):
    action: Literal["create", "update", "delete"]
    kind: Kind
    name: str = Field(description="The name in the file (an unnamed cache: its id).")
    id: str | None = Field(description="The resource's id; null for one to be created.")
    fields: list[FieldChange] = Field(description="What changes (for an update).")
    monthly_usd_before: float
    monthly_usd_after: float


class LeftAlone(Response):
    kind: Kind
    name: str
    id: str


class RunRate(Response):
    before: float
    after: float
    delta: float


class SharedCost(Response):
    item: Literal["load_balancer", "load_balancer_ipv4", "task_ipv4"] = Field(
        description="The project's load balancer (only while it has a web server), the "
        "load balancer's public IPv4 addresses, or the public IPv4 address of each web "
        "server's and worker's task."
    )
    description: str
    quantity_before: int
    quantity_after: int
    monthly_usd_before: float
    monthly_usd_after: float


class SharedCostLine(Response):
    item: Literal["load_balancer", "load_balancer_ipv4", "task_ipv4"]
    description: str
    quantity: int
    monthly_usd: float


class SharedCosts(Response):
    lines: list[SharedCostLine] = Field(
        description="What the project's web servers and workers share, or AWS bills beside each "
        "one: the load balancer (only while the project has a web server) and its public IPv4 "
        "addresses, and each task's public IPv4 address (previews' included). Not in any "
        "service's run-rate."
    )
    monthly_usd: float = Field(description="The lines' sum, a month.")
    currency: Literal["USD"] = "USD"


class Plan(Response):
    changes: list[Change]
    left_alone: list[LeftAlone] = Field(
        description="In the project but not in the file: kept (deleted only with `prune`)."
    )
    prune: bool
    no_changes: bool = Field(description="True when the project already matches the file.")
    shared: list[SharedCost] = Field(
        default_factory=list,
        description="The project's own lines, now and after the changes: what its services "
        "share and what AWS bills beside each one (its load balancer, which the first web "
        "server brings and the last takes away; public IPv4 addresses). In the run-rate.",
    )
    monthly_run_rate_usd: RunRate = Field(
        description="The project's monthly run-rate now and after the changes — its resources' "
        "and its shared lines' — from the price table of the cost endpoints (sizes only: "
        "traffic and stored data are not included)."
    )
    currency: Literal["USD"] = "USD"


class StartedDeployment(Response):
    kind: Literal["web_server", "worker", "static_website"]
    name: str
    service_id: str
    deployment_id: str


class Applied(Plan):
    applied: bool = Field(description="False when there was nothing to change.")
    message: str
    deployments: list[StartedDeployment] = Field(
        description="The deployments apply started, to follow."
    )


if __name__ == "__main__":
    import json

    print(json.dumps(capstan_file_schema(), indent=2, sort_keys=True))
