"""The kinds of resource Capstan runs: the one list that `create_app`, `capstan worker`, the
migrations' metadata, projects and the network read. Adding a kind is one package (with its
`kind.py`) and one line here."""

from __future__ import annotations

from capstan.apps.kind import KIND as APPS
from capstan.buckets.kind import KIND as BUCKETS
from capstan.caches.kind import KIND as CACHES
from capstan.certificates.kind import KIND as CERTIFICATES
from capstan.cron_jobs.kind import KIND as CRON_JOBS
from capstan.databases.kind import KIND as DATABASES
from capstan.domains.kind import KIND as DOMAINS
from capstan.git_host.kind import KIND as GIT_HOST
from capstan.hostnames.kind import KIND as HOSTNAMES
from capstan.model_access.kind import KIND as MODEL_ACCESS
from capstan.network.kind import KIND as NETWORK
from capstan.projects.kind import KIND as PROJECTS
from capstan.registry import ResourceKind
from capstan.runs.kind import KIND as RUNS

KINDS: tuple[ResourceKind, ...] = (
    HOSTNAMES,
    NETWORK,
    APPS,
    RUNS,
    DOMAINS,
    CRON_JOBS,
    CACHES,
    DATABASES,
    BUCKETS,
    MODEL_ACCESS,
    CERTIFICATES,
    GIT_HOST,
    PROJECTS,
)
