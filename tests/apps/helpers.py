"""An organization ready to deploy: a connected sandbox cloud account, the git host app
installed, and a project — all through the HTTP API, as a user would do it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.cloud.aws.session import Endpoint
from capstan.db import make_engine, make_sessionmaker
from capstan.dev.accounts import organization_access
from capstan.git_host.payloads import Repository
from capstan.reconcile.models import QueueItem, ReconcilePass
from tests.cloud_account.flow import connect
from tests.git_host.flow import install
from tests.harness import Org, RunningServer, run_db

WEB_REPO = "capstan-samples/hello-web"
WORKER_REPO = "capstan-samples/hello-worker"


def served_at(org: Org, hostname: str) -> str:
    """A service's URL in the sandbox: its hostname where the test server listens."""
    return f"http://{hostname}:{urlsplit(org.server.base_url).port}"


def hostname_of(url: str) -> str:
    return str(urlsplit(url).hostname)


@dataclass
class Ready:
    org: Org
    project: dict[str, Any]

    @property
    def base(self) -> str:
        return f"/api/projects/{self.project['id']}"

    def create_web_server(self, **fields: Any) -> dict[str, Any]:
        body = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
        body.update(fields)
        response = self.org.api.post(f"{self.base}/web_servers", json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def create_worker(self, **fields: Any) -> dict[str, Any]:
        body = {
            "name": "jobs",
            "repo": WORKER_REPO,
            "branch": "main",
            "start_command": "python worker.py",
            "cpu": 256,
            "memory": 512,
        }
        body.update(fields)
        response = self.org.api.post(f"{self.base}/workers", json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def delete_project(self, *, timeout: float = 90) -> None:
        """DELETE the project until it is accepted (409 while its resources are still being
        removed), then wait until it is gone: 404 only once nothing of it is left in the
        cloud, its network included."""
        deadline = time.monotonic() + timeout
        while (answer := self.org.api.delete(self.base)).status_code not in (202, 204):
            assert answer.status_code == 409, answer.text
            assert time.monotonic() < deadline, f"the project stayed undeletable: {answer.text}"
            time.sleep(0.2)
        while (found := self.org.api.get(self.base)).status_code != 404:
            assert found.json()["status"] == "deleting", found.text
            assert time.monotonic() < deadline, f"the project stayed: {found.text}"
            time.sleep(0.2)

    def wait_for(self, path: str, *statuses: str, timeout: float = 60) -> dict[str, Any]:
        """Poll `path` until its status is one of `statuses`."""
        deadline = time.monotonic() + timeout
        while True:
            body = dict(self.org.api.get(path).json())
            if body.get("status") in statuses:
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} stayed {body.get('status')}: {body}")
            if body.get("status") == "failed" and "failed" not in statuses:
                raise AssertionError(f"{path} failed: {body}")
            time.sleep(0.2)


def ready(org: Org, *, region: str | None = None) -> Ready:
    connect(org)
    install(org)
    body = {"name": "Shop", "hostname_suffix": org.server.unique("shop")}
    if region is not None:
        body["region"] = region
    project = org.api.post("/api/projects", json=body)
    assert project.status_code == 201, project.text
    return Ready(org=org, project=project.json())


def new_shop(org: Org, *, name: str = "Shop", stem: str = "shop") -> Ready:
    """Another project of an organization already made `ready`."""
    body = {"name": name, "hostname_suffix": org.server.unique(stem)}
    project = org.api.post("/api/projects", json=body)
    assert project.status_code == 201, project.text
    return Ready(org=org, project=project.json())


@contextmanager
def connected_org(server: RunningServer) -> Iterator[Org]:
    """A new organization, connected and with the git app installed, for a module's tests to
    share (each making its own project): connecting takes seconds."""
    member = server.new_org()
    ready(member)
    try:
        yield member
    finally:
        member.close()


def counted(org: Org, work: Callable[[AsyncSession], Awaitable[Any]]) -> tuple[Any, list[str]]:
    """`work`'s answer and the statements it ran, on an engine of its own (the server's workers
    run statements of their own meanwhile)."""
    statements: list[str] = []

    async def main() -> Any:
        settings = org.server.settings
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        event.listen(
            engine.sync_engine,
            "before_cursor_execute",
            lambda _conn, _cursor, sql, *_: statements.append(sql),
        )
        try:
            async with make_sessionmaker(engine)() as session:
                return await work(session)
        finally:
            await engine.dispose()

    return asyncio.run(main()), statements


@contextmanager
def simulator_knobs(**knobs: Any) -> Iterator[None]:
    """The sandbox simulator's `knobs` changed for the block, and put back after it."""
    from capstan_sandbox.cloud.simulator import simulator

    before = simulator().configure(**knobs)
    try:
        yield
    finally:
        simulator().configure(**{name: getattr(before, name) for name in knobs})


def queue_state(org: Org) -> str:
    """The server's reconcile queue and its last passes, as a timed-out wait reports them: which
    row waits, until when, after how many errors or looks, and why."""

    async def read(session: AsyncSession) -> str:
        rows = (await session.scalars(select(QueueItem))).all()
        passes = (
            await session.scalars(
                select(ReconcilePass).order_by(ReconcilePass.started_at.desc()).limit(12)
            )
        ).all()
        lines = ["queue:"] + [
            f"  {row.kind} {row.resource_id} due {row.due_at:%H:%M:%S.%f} attempts {row.attempts}"
            f" polls {row.polls} leased {row.lease_owner is not None}: {row.last_error or ''}"[:400]
            for row in rows
        ]
        lines += ["last passes:"] + [
            f"  {done.kind} {done.resource_id} {done.started_at:%H:%M:%S.%f}"
            f"-{done.finished_at:%H:%M:%S.%f} {done.outcome}: {done.error or ''}"[:400]
            for done in passes
        ]
        return "\n".join(lines)

    return run_db(org.server.settings, read)


Narrow = Callable[[dict[str, Any]], dict[str, Any] | None]


def narrow_statement(server: RunningServer, account_id: str, sid: str, narrow: Narrow) -> None:
    """The customer's access role with statement `sid` narrowed (None: removed), as if their
    stack came from a template without that grant: their administrator makes a new version of
    the managed policy that holds it."""
    url = server.settings.sandbox_cloud_url
    assert url
    with organization_access(Endpoint(region="us-east-1", url=url), account_id) as admin:
        iam = admin.client("iam")
        for attached in iam.list_attached_role_policies(RoleName="CapstanAccess")[
            "AttachedPolicies"
        ]:
            arn = attached["PolicyArn"]
            version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
            document: Any = iam.get_policy_version(PolicyArn=arn, VersionId=version)[
                "PolicyVersion"
            ]["Document"]
            if isinstance(document, str):
                document = json.loads(document)
            statements = document["Statement"]
            if not any(s.get("Sid") == sid for s in statements):
                continue
            kept = []
            for found in statements:
                if found.get("Sid") == sid:
                    found = narrow(dict(found))
                if found is not None:
                    kept.append(found)
            iam.create_policy_version(
                PolicyArn=arn,
                PolicyDocument=json.dumps({**document, "Statement": kept}),
                SetAsDefault=True,
            )
            return
        raise AssertionError(f"no policy of the access role holds {sid}")


class OneRepository:
    """The git host's answer for the one repository these creates name (the git host client's
    own read is tested in tests/git_host; here only the database's writes are counted)."""

    async def repository(self, installation_id: int, full_name: str) -> Repository:
        return Repository(1, full_name, False, "main")

    async def branch_head(self, installation_id: int, repo: str, branch: str) -> str:
        return "0" * 40
