"""Model access as a kind: the project's task role may invoke exactly the enabled models."""

from __future__ import annotations

from capstan.model_access.models import ModelAccess
from capstan.model_access.router import router
from capstan.model_access.service import task_grants
from capstan.registry import ResourceKind

KIND = ResourceKind(
    name="model_access",
    routers=(router,),
    models=(ModelAccess,),
    task_grants=task_grants,
)
