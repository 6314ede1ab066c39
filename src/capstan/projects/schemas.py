from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, SerializerFunctionWrapHandler, computed_field, model_serializer
from pydantic.json_schema import SkipJsonSchema

from capstan.schemas import Label100, Request, Response
from capstan.validation import pattern

HOSTNAME_SUFFIX_PATTERN = pattern(
    r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$",
    "lowercase letters, digits and hyphens, starting and ending with a letter or digit",
)

ProjectName = Label100
HostnameSuffix = Annotated[
    str,
    Field(
        pattern=HOSTNAME_SUFFIX_PATTERN,
        description="Lowercase letters, digits and inner hyphens; at most 63 characters; unique "
        "across all organizations.",
        examples=["acme-prod"],
    ),
]
Region = Annotated[str, Field(description="AWS region, e.g. us-east-1.", examples=["eu-west-1"])]


class GitSettingsUpdate(Request):
    delete_previews_on_branch_delete: bool | None = Field(
        default=None,
        description="When true, deleting a branch at the git host, or closing (merged or not) a "
        "pull request from it, removes every preview of that branch in the project.",
    )


class GitSettings(Response):
    delete_previews_on_branch_delete: bool = Field(
        description="Deleted branches and closed pull requests remove their previews."
    )


class ProjectCreate(Request):
    name: ProjectName
    hostname_suffix: HostnameSuffix
    region: Region | None = None
    git_settings: GitSettingsUpdate | None = None


PreviewTtlHours = Annotated[
    int,
    Field(
        ge=1,
        le=8760,
        description="A preview with no push for this many hours is removed, as by a DELETE; "
        "null: previews do not expire (the default).",
    ),
]
MaxPreviews = Annotated[
    int,
    Field(
        ge=0,
        le=1000,
        description="Previews the project may have at once (all its services together); one "
        "more is 409 `preview_limit_reached`. Default 20.",
    ),
]


class ProjectUpdate(Request):
    name: ProjectName | None = None
    hostname_suffix: HostnameSuffix | None = None
    git_settings: GitSettingsUpdate | None = None
    preview_ttl_hours: PreviewTtlHours | None = None
    max_previews: MaxPreviews | SkipJsonSchema[None] = None


class ProjectListItem(Response):
    id: str
    name: str
    hostname_suffix: str
    region: str
    certificate_status: str | None = Field(
        default=None, description="Present once HTTPS provisioning has started."
    )
    certificate_arn: str | None = None
    deleting_since: datetime | None = Field(
        default=None,
        description="Present while the project is being deleted: its resources and its network "
        "are being removed from the cloud, then the project goes.",
    )
    created_at: datetime
    updated_at: datetime

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Literal["active", "deleting"]:
        return "active" if self.deleting_since is None else "deleting"


class ProjectOut(ProjectListItem):
    git_settings: GitSettings
    preview_ttl_hours: int | None = Field(
        description="Hours without a push after which a preview is removed; null: never."
    )
    max_previews: int = Field(description="Previews the project may have at once.")

    @model_serializer(mode="wrap")
    def _with_preview_ttl(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        """`preview_ttl_hours` is shown even when null (off), where the routes leave out other
        null fields (certificate_status before HTTPS is provisioned)."""
        data = handler(self)
        if isinstance(data, dict):
            data.setdefault("preview_ttl_hours", self.preview_ttl_hours)
        return data
