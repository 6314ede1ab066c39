"""A new account's first deployments meet IAM's propagation at every step, as in AWS: the access
role the stack has just made, then each project role made moments before its first use (the
build roles CodeBuild must assume, the execution and task roles ECS must assume). Under a delay
of a few seconds everything waits for its roles and ends running, with no failed deployment on
the way."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.reconcile.models import ReconcilePass
from tests.apps.helpers import new_shop, simulator_knobs
from tests.cloud_account.flow import connect
from tests.git_host.flow import install
from tests.harness import Org, RunningServer, run_db


def _pass_errors(org: Org, resource_ids: list[str]) -> list[str]:
    async def read(session: AsyncSession) -> list[str]:
        found = await session.scalars(
            select(ReconcilePass.error).where(
                ReconcilePass.resource_id.in_(resource_ids), ReconcilePass.error.is_not(None)
            )
        )
        return [str(error) for error in found]

    return run_db(org.server.settings, read)


def test_a_new_accounts_first_deployments_wait_for_their_new_roles_and_none_fails(
    server: RunningServer,
) -> None:
    org = server.new_org()
    try:
        with simulator_knobs(iam_propagation_seconds=3.0):
            connect(org)  # verified right after the stack made the role
            install(org)
            shop = new_shop(org)
            made: dict[str, dict[str, Any]] = {
                "web_servers": shop.create_web_server(),
                "workers": shop.create_worker(),
            }
            site = org.api.post(
                f"{shop.base}/static_websites",
                json={
                    "name": "docs",
                    "repo": "capstan-samples/hello-static",
                    "branch": "main",
                    "build_command": "npm ci && npm run build",
                    "publish_dir": "dist",
                },
            )
            assert site.status_code == 201, site.text
            made["static_websites"] = site.json()
            for kind, service in made.items():
                path = f"{shop.base}/{kind}/{service['id']}"
                shop.wait_for(path, "running", timeout=120)  # a failed status fails here
                deployments = org.api.get(f"{path}/deployments").json()["deployments"]
                assert [d["status"] for d in deployments] == ["running"], deployments
        # They waited: CodeBuild refused each new build role at first, and the pass was retried.
        errors = _pass_errors(org, [service["id"] for service in made.values()])
        assert any("CodeBuild cannot assume the project's new build role yet" in e for e in errors)
    finally:
        org.close()
