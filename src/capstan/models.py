"""Every table, imported in one place so the migrations and the tests see the whole schema."""

from capstan.auth.models import ApiToken, BrowserSession, Organization, SignInAttempt, User
from capstan.cloud_account.models import CloudAccount
from capstan.db import Base
from capstan.git_host.models import GitHostInstallation, GitHostSetup
from capstan.projects.models import Project
from capstan.reconcile.models import QueueItem, ReconcilePass
from capstan.services.models import Deployment, Preview, Service

__all__ = [
    "ApiToken",
    "Base",
    "BrowserSession",
    "CloudAccount",
    "Deployment",
    "GitHostInstallation",
    "GitHostSetup",
    "Organization",
    "Preview",
    "Project",
    "QueueItem",
    "ReconcilePass",
    "Service",
    "SignInAttempt",
    "User",
]
