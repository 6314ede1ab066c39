"""Web servers, workers and static websites ("services"), their previews and their deployments.

The three kinds share one table: they differ only in a few columns (a web server has a health
path and a URL, a worker a start command, a static website a publish directory and no compute)
and share every operation. A preview is a per-branch copy of a service: it follows the parent's
settings and has its own branch, environment and compute (a site preview: its own bucket,
distribution and hostname).

Desired state and its progress: `generation` is bumped by every change that needs a deployment;
`observed_generation` is set when the cloud has converged to it. `deleted_at` is the finalizer
mark: the row is gone from the API at once, and removed by the reconciler once its cloud
resources are.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow
from capstan.states import StateMachine

# A target's generation when it is made; each change of its desired state adds one.
FIRST_GENERATION = 1


class Service(Base):
    __tablename__ = "services"
    __table_args__ = (
        # Names are unique per project and kind among the live ones (a deleted service may still
        # be removing its cloud resources).
        Index(
            "uq_services_live_name",
            "project_id",
            "kind",
            "name",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = id_column("svc")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))  # "web_server" | "worker" | "static_website"
    name: Mapped[str] = mapped_column(String(63))
    repo: Mapped[str] = mapped_column(String(200))
    branch: Mapped[str] = mapped_column(String(255))
    build_command: Mapped[str | None] = mapped_column(Text)
    health_path: Mapped[str | None] = mapped_column(String(1024))
    start_command: Mapped[str | None] = mapped_column(Text)
    publish_dir: Mapped[str | None] = mapped_column(String(1024))  # static websites
    # Web servers and workers: run once per deployment, before its rollout (`runs`).
    release_command: Mapped[str | None] = mapped_column(Text)
    # None for static websites (no compute).
    cpu: Mapped[int | None] = mapped_column(Integer)
    memory: Mapped[int | None] = mapped_column(Integer)
    auto_deploy: Mapped[bool] = mapped_column(Boolean, default=False)
    # The git host installation through which the repository was reachable at creation.
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    environment: Mapped[bytes | None] = mapped_column(LargeBinary)  # sealed JSON
    # Where the cloud keeps `environment`: the id of the deployment that introduced it (SSM
    # parameters under `/capstan/<id>/<version>/`); None: the unversioned path of old rows.
    environment_version: Mapped[str | None] = mapped_column(String(40))
    generation: Mapped[int] = mapped_column(Integer, default=FIRST_GENERATION)
    observed_generation: Mapped[int] = mapped_column(Integer, default=0)
    # The hostname the cloud currently routes to this service (moves after a suffix rename).
    applied_hostname: Mapped[str | None] = mapped_column(String(253))
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Preview(Base):
    __tablename__ = "previews"
    __table_args__ = (
        Index(
            "uq_previews_live_branch",
            "service_id",
            "branch",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = id_column("pvw")
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id"), index=True)
    branch: Mapped[str] = mapped_column(String(255))
    # DNS label of the preview's hostname: unique per service, derived at creation.
    slug: Mapped[str] = mapped_column(String(63))
    # The last push to its branch (None: none since it was made); with the project's
    # `preview_ttl_hours`, when it expires.
    pushed_at: Mapped[datetime | None]
    environment: Mapped[bytes | None] = mapped_column(LargeBinary)  # sealed JSON
    # Where the cloud keeps `environment`: the id of the deployment that introduced it (SSM
    # parameters under `/capstan/<id>/<version>/`); None: the unversioned path of old rows.
    environment_version: Mapped[str | None] = mapped_column(String(40))
    generation: Mapped[int] = mapped_column(Integer, default=FIRST_GENERATION)
    observed_generation: Mapped[int] = mapped_column(Integer, default=0)
    applied_hostname: Mapped[str | None] = mapped_column(String(253))
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Deployment(Base):
    """One attempt to bring a service (or one of its previews) to a generation."""

    __tablename__ = "deployments"
    __table_args__ = (Index("ix_deployments_target", "service_id", "preview_id", "created_at"),)

    id: Mapped[str] = id_column("dep")
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id"))
    preview_id: Mapped[str | None] = mapped_column(ForeignKey("previews.id"))
    generation: Mapped[int] = mapped_column(Integer)
    # create|patch|redeploy|environment|push|rollback
    trigger: Mapped[str] = mapped_column(String(20))
    # pending → building → deploying → running → replaced; failed; superseded
    # (`DEPLOYMENT_STATES`)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    commit_sha: Mapped[str | None] = mapped_column(String(64))
    # The commit's message as the git host gave it (None: not known, as for older rows).
    commit_message: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    build_id: Mapped[str | None] = mapped_column(String(512))
    image_uri: Mapped[str | None] = mapped_column(String(512))
    task_definition_arn: Mapped[str | None] = mapped_column(String(512))
    # Static websites: the build-time environment this deployment's build was given (sealed
    # JSON, owner = the deployment id), and the CDN invalidation it made after the build.
    build_environment: Mapped[bytes | None] = mapped_column(LargeBinary)
    invalidation_id: Mapped[str | None] = mapped_column(String(128))
    # The release: what this deployment runs, kept so that it can be deployed again exactly.
    # `settings` (JSON): cpu, memory, health path, start or build command, publish dir, branch;
    # `environment` (sealed JSON, owner = the deployment id) and the version of it in the cloud;
    # `image_uri` (by digest, once built); a static site's output prefix in its bucket.
    settings: Mapped[str | None] = mapped_column(Text)
    environment: Mapped[bytes | None] = mapped_column(LargeBinary)
    environment_version: Mapped[str | None] = mapped_column(String(40))
    site_prefix: Mapped[str | None] = mapped_column(String(64))
    # A rollback: the deployment whose release this one deploys again.
    rollback_of: Mapped[str | None] = mapped_column(String(40))
    # The run of the service's release command this deployment made before its rollout.
    release_run_id: Mapped[str | None] = mapped_column(String(40))
    deadline_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    finished_at: Mapped[datetime | None]

    # The status moves only through `DEPLOYMENT_STATES` (a conditional UPDATE, which keeps the
    # object's committed status in step). The status is also the row's version, so a pass's other
    # writes (a build id, an invalidation) land only while the status is still the one the pass
    # read: a deployment superseded meanwhile (by a push, a PATCH, a redeploy) stays superseded
    # and untouched; the pass loses (its move answers False, or StaleDataError) and starts over.
    __mapper_args__ = {"version_id_col": status, "version_id_generator": False}


PENDING, BUILDING, DEPLOYING, RUNNING = "pending", "building", "deploying", "running"
FAILED, SUPERSEDED, REPLACED = "failed", "superseded", "replaced"
UNDER_WAY = (PENDING, BUILDING, DEPLOYING)
# The moves a deployment may make. A running one fails only when repairing its drift failed for
# good; a newer deployment supersedes those under way; the live one (at most one `running` per
# target) is `replaced` when a newer one goes live.
DEPLOYMENT_STATES = StateMachine(
    Deployment,
    [
        (None, "create", PENDING),
        (PENDING, "build_started", BUILDING),
        # A rollback deploys a release that exists: no build.
        (PENDING, "reused", DEPLOYING),
        (BUILDING, "built", DEPLOYING),
        (DEPLOYING, "rolled_out", RUNNING),
        ((*UNDER_WAY, RUNNING), "failed", FAILED),
        (UNDER_WAY, "superseded", SUPERSEDED),
        (RUNNING, "replaced", REPLACED),
    ],
)


class SiteResources(Base):
    """The CDN resources of one static website or site preview (`target_id`), stored as they are
    made so that later passes (and teardown) find them without searching the account.

    The bucket and the origin access control have deterministic names; the certificate and the
    distribution are found through these handles. `certificate_hostname` is the hostname the
    current certificate covers: when the project's hostname suffix changes, a new certificate is
    requested and the old one joins `retired_certificate_arns` (JSON list) until it can be
    deleted (ACM refuses while the distribution still uses it).
    """

    __tablename__ = "site_resources"

    target_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id"), index=True)
    bucket_name: Mapped[str | None] = mapped_column(String(63))
    origin_access_control_id: Mapped[str | None] = mapped_column(String(128))
    certificate_arn: Mapped[str | None] = mapped_column(String(2048))
    certificate_hostname: Mapped[str | None] = mapped_column(String(253))
    retired_certificate_arns: Mapped[str | None] = mapped_column(Text)
    distribution_id: Mapped[str | None] = mapped_column(String(128))
    distribution_domain: Mapped[str | None] = mapped_column(String(253))
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
