"""What the routes of web servers, workers and static websites share: the live reader of a
target (settings and cloud), the environment's box, and reading a target's logs and metrics.

Annotations are evaluated at definition time, as in `router` (FastAPI reads them)."""

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends

from capstan.apps import environment as environments
from capstan.apps import observe, readings
from capstan.apps.deploying import target_of
from capstan.apps.models import Preview, Service
from capstan.auth.principal import Caller
from capstan.cloud.driver import Cloud
from capstan.config import Settings
from capstan.crypto import SecretBox
from capstan.db import DbSession
from capstan.deps import AppCloud, AppSettings
from capstan.projects import service as projects


@dataclass(frozen=True)
class TargetReader:
    """What a live read of a target needs: the settings (its hostname) and the cloud."""

    settings: Settings
    cloud: Cloud


async def _reader(settings: AppSettings, cloud: AppCloud) -> TargetReader:
    return TargetReader(settings, cloud)


Reader = Annotated[TargetReader, Depends(_reader)]


def box(settings: Settings) -> SecretBox:
    return environments.environment_box(settings.require_secret_key())


async def logs_of(
    session: DbSession,
    caller: Caller,
    reader: TargetReader,
    service: Service,
    preview: Preview | None,
    since: datetime | None,
    limit: int,
) -> readings.Logs:
    project = await projects.get(session, caller, service.project_id)
    target = target_of(service, preview, project, reader.settings.domain)
    lines = await observe.logs(
        session, caller, reader.cloud, reader.settings, target, since=since, limit=limit
    )
    return readings.Logs(
        lines=[readings.LogLine(timestamp=line.timestamp, message=line.message) for line in lines]
    )


async def metrics_of(
    session: DbSession,
    caller: Caller,
    reader: TargetReader,
    service: Service,
    preview: Preview | None,
) -> Any:
    project = await projects.get(session, caller, service.project_id)
    target = target_of(service, preview, project, reader.settings.domain)
    return await observe.metrics(session, caller, reader.cloud, reader.settings, target)
