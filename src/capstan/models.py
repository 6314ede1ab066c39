"""Every table, imported in one place so the migrations and the tests see the whole schema."""

from capstan.auth.models import ApiToken, BrowserSession, Organization, SignInAttempt, User
from capstan.buckets.models import Bucket
from capstan.caches.models import Cache
from capstan.certificates.models import Certificate
from capstan.cloud_account.models import CloudAccount
from capstan.db import Base
from capstan.git_host.models import GitHostDelivery, GitHostInstallation, GitHostSetup
from capstan.model_access.models import ModelAccess
from capstan.projects.models import Project
from capstan.reconcile.models import QueueItem, ReconcilePass
from capstan.services.models import Deployment, Preview, Service, SiteResources

__all__ = [
    "ApiToken",
    "Base",
    "BrowserSession",
    "Bucket",
    "Cache",
    "Certificate",
    "CloudAccount",
    "Deployment",
    "GitHostDelivery",
    "GitHostInstallation",
    "GitHostSetup",
    "ModelAccess",
    "Organization",
    "Preview",
    "Project",
    "QueueItem",
    "ReconcilePass",
    "Service",
    "SignInAttempt",
    "SiteResources",
    "User",
]
