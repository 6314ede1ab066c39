"""What plan tests share: a capstan.yaml, posting it to plan or apply, counting the rows it made."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment, Service
from capstan.buckets.models import Bucket
from capstan.caches.models import Cache
from tests.apps.helpers import WEB_REPO, WORKER_REPO, Ready
from tests.harness import run_db

SITE_REPO = "capstan-samples/hello-static"


SECRET = "sk_live_" + uuid.uuid4().hex


FILE: dict[str, Any] = {
    "web_servers": {
        "api": {
            "repo": WEB_REPO,
            "branch": "main",
            "cpu": 256,
            "memory": 512,
            "health_path": "/",
            "environment": {
                "LOG_LEVEL": "info",
                "STRIPE_KEY": {"from_env": "STRIPE_KEY", "value": SECRET},
            },
        }
    },
    "workers": {
        "jobs": {
            "repo": WORKER_REPO,
            "branch": "main",
            "start_command": "python worker.py",
            "cpu": 256,
            "memory": 512,
        }
    },
    "static_websites": {
        "docs": {
            "repo": SITE_REPO,
            "branch": "main",
            "build_command": "npm ci && npm run build",
            "publish_dir": "dist",
        }
    },
    "caches": {"sessions": {"storage_limit_mb": 256}},
    "buckets": ["uploads"],
}


def post(shop: Ready, what: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
    response = shop.org.api.post(f"{shop.base}/{what}", json=body, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def rows(shop: Ready) -> dict[str, int]:
    """What the database holds for the project, whatever the API shows."""
    project_id = shop.project["id"]

    async def count(session: AsyncSession) -> dict[str, int]:
        async def of(model: Any) -> int:
            query = select(func.count()).select_from(model).where(model.project_id == project_id)
            return int(await session.scalar(query) or 0)

        deployments = await session.scalar(
            select(func.count())
            .select_from(Deployment)
            .join(Service, Service.id == Deployment.service_id)
            .where(Service.project_id == project_id)
        )
        return {
            "services": await of(Service),
            "caches": await of(Cache),
            "buckets": await of(Bucket),
            "deployments": int(deployments or 0),
        }

    return run_db(shop.org.server.settings, count)
