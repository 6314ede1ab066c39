"""Every table, gathered in one place so the migrations and the tests see the whole schema: the
core's own (organizations, users, sessions, tokens, projects, the cloud account, the work queue)
and each kind's, from the list of kinds."""

from capstan.auth.models import ApiToken, BrowserSession, Organization, SignInCounter, User
from capstan.cloud_account.models import CloudAccount
from capstan.db import Base
from capstan.idempotency.models import IdempotencyKey
from capstan.kinds import KINDS
from capstan.projects.models import Project
from capstan.reconcile.models import QueueItem, ReconcilePass

CORE_MODELS: tuple[type[Base], ...] = (
    Organization,
    User,
    BrowserSession,
    ApiToken,
    SignInCounter,
    Project,
    CloudAccount,
    QueueItem,
    ReconcilePass,
    IdempotencyKey,
)
KIND_MODELS: tuple[type[Base], ...] = tuple(model for kind in KINDS for model in kind.models)

__all__ = ["CORE_MODELS", "KIND_MODELS", "Base"]
