from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from capstan.schemas import Request, Response, trimmed

HOSTNAME_SUFFIX_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"

ProjectName = Annotated[str, *trimmed(1, 100)]
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


class ProjectUpdate(Request):
    name: ProjectName | None = None
    hostname_suffix: HostnameSuffix | None = None
    git_settings: GitSettingsUpdate | None = None


class ProjectListItem(Response):
    id: str
    name: str
    hostname_suffix: str
    region: str
    certificate_status: str | None = Field(
        default=None, description="Present once HTTPS provisioning has started."
    )
    certificate_arn: str | None = None
    created_at: datetime
    updated_at: datetime


class ProjectOut(ProjectListItem):
    git_settings: GitSettings
