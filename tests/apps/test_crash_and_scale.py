"""Crash safety and scale-out, with Capstan as real processes over real HTTP.

- Crash: `capstan sandbox` in a process of its own (it survives), `capstan server --dev` killed
  with SIGKILL in the middle of a deployment and started again: the deployment converges and the
  sandbox account holds exactly one of each resource.
- Scale-out (PostgreSQL): an API-only server and two `capstan worker` processes over one
  database; twenty resources converge, no resource is ever worked on by two workers at once (read
  from the `reconcile_passes` record), and a worker killed in the middle of its passes hands its
  leased rows to the other within the lease time.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment
from capstan.cloud.aws import names
from capstan.cloud.aws.inventory import Found, capstan_resources, dns_records
from capstan.config import Settings
from capstan.db import utcnow
from capstan.reconcile.models import QueueItem, ReconcilePass
from tests.apps.helpers import hostname_of
from tests.apps.processes import (
    Process,
    Processes,
    account_sessions,
    api_token_for,
    bearer_client,
    capstan_env,
    connect_cloud_account,
    create_project,
    free_port,
    install_git_host,
    postgres_schema_fixture,
    processes,
    wait_all_running,
    web_server_body,
    worker_body,
)
from tests.conftest import POSTGRES_URL
from tests.harness import PASSWORD, run_db
from tests.polling import wait_until

# Slow and process-killing: `make chaos` runs these (and `.ci/run` does, after `make test`).
pytestmark = pytest.mark.chaos

# Short, so a handover is quick to see (production's is 30 s), but not shorter than a loaded CI
# machine can keep: a heartbeat comes every third of the lease, so a worker starved for more than
# two thirds of it loses leases, and a shorter lease was lost by passes under way in CI.
LEASE_SECONDS = 6.0
# What the survivor may add to the lease before it takes a dead worker's row over: its poll
# interval (0.25 s), the claim itself and the slack of a loaded CI machine, which shares its two
# cores with the sandbox running each image build's buildspec in bash.
HANDOVER_MARGIN_SECONDS = 3.0


def db_settings(database_url: str, schema: str | None = None) -> Settings:
    return Settings(_env_file=None, database_url=database_url, database_schema=schema)


def per_resource(found: list[Found]) -> Counter[tuple[str, str | None]]:
    """How many of each kind of resource, per `capstan:resource` (tagging API answers aside:
    they name the same resources again)."""
    return Counter(
        (item.kind, item.resource) for item in found if not item.kind.startswith("tagging:")
    )


# Crash safety ----------------------------------------------------------------------------------


def test_kill_9_mid_deployment_then_restart_converges_with_one_of_each(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with processes(tmp_path) as procs:
        _sandbox, sandbox_url = procs.sandbox(build_seconds=1.0, task_start_seconds=1.5)
        port = free_port()
        command = ["--dev", "--data-dir", str(data_dir), "--port", str(port)]
        # A short lease, so the restarted server takes the dead one's rows over in seconds.
        env = capstan_env(
            CAPSTAN_SANDBOX_CLOUD_URL=sandbox_url,
            CAPSTAN_WORKER_LEASE_SECONDS=str(LEASE_SECONDS),
        )
        first = procs.server("server", command, env)
        token = first.wait_for_line(r"Dev API token \(shown once\): (capstan_\w+)").group(1)
        base_url = f"http://127.0.0.1:{port}"
        with bearer_client(base_url, token) as api:
            account_id = connect_cloud_account(api)
            install_git_host(api)
            project = create_project(api, "crash")
            created = api.post(
                f"/api/projects/{project['id']}/web_servers", json=web_server_body("web")
            )
            assert created.status_code == 201, created.text
            web = created.json()
            path = f"/api/projects/{project['id']}/web_servers/{web['id']}"
            hostname = hostname_of(web["url"])

            def newest() -> dict[str, Any]:
                deployments: list[dict[str, Any]] = api.get(f"{path}/deployments").json()[
                    "deployments"
                ]
                return deployments[0]

            wait_until(
                lambda: newest()["status"] in ("building", "deploying"),
                timeout=30,
                every=0.05,
                what="the deployment to start building",
            )
            # Kill inside the pass that turns the finished build into a rollout: as soon as its
            # first trace is in the account, the runtime log group (the task definition, target
            # group, rule, service, DNS record and scaling follow in the same pass; the pass
            # commits `deploying` at its end). (Not earlier: in dev mode
            # the sandbox git host lives in the server process and its installation tokens in
            # its memory, so a build that fetches its source while the server is down, or with a
            # token the dead server issued, fails — as a build on GitHub's outage would.)
            with account_sessions(sandbox_url, account_id) as (customer, _operator):
                logs = customer.client("logs")
                runtime = names.runtime_log_group(web["id"])
                wait_until(
                    lambda: logs.describe_log_groups(logGroupNamePrefix=runtime)["logGroups"],
                    timeout=30,
                    every=0.01,
                    what="the rollout to start",
                )
            first.kill()
            left_at_crash = run_db(
                db_settings(f"sqlite:///{data_dir / 'capstan.db'}"),
                lambda s: _newest_status(s, web["id"]),
            )
            print(f"the crash left the deployment {left_at_crash!r}")  # building: mid-pass

            procs.server("server (restarted)", command, env)
            wait_all_running(api, [path], timeout=60)
            deployments = api.get(f"{path}/deployments").json()["deployments"]
            assert [d["status"] for d in deployments] == ["running"], deployments

        with account_sessions(sandbox_url, account_id) as (customer, operator):
            found = capstan_resources(customer, project["id"])
            shared = capstan_resources(customer)
            records = dns_records(operator, "capstan.localhost", under="crash")
            rules = _host_rules(customer, hostname)
        project_id, web_id = project["id"], web["id"]
        assert per_resource(found) == {
            # The project's network (its groups), load balancer, cluster and roles: one of each.
            ("security group", project_id): 2,
            ("load balancer", project_id): 1,
            ("ecs cluster", project_id): 1,
            ("iam role", project_id): 3,
            # The web server's: one of each, two log groups (build, runtime).
            ("ecr repository", web_id): 1,
            ("codebuild project", web_id): 1,
            ("log group", web_id): 2,
            ("task definition (active)", web_id): 1,
            ("ecs service", web_id): 1,
            ("target group", web_id): 1,
            ("listener rule", web_id): 1,
            ("scalable target", web_id): 1,
            ("scaling policy", web_id): 1,
            # The build's tokens (git, Docker Hub), overwritten by each build, never doubled.
            ("ssm parameter", web_id): 2,
        }, procs.output()
        # The network the account's projects share (nobody's project): one of each.
        assert per_resource([item for item in shared if item.project is None]) == {
            ("vpc", None): 1,
            ("subnet", None): 2,
            ("internet gateway", None): 1,
            ("route table", None): 1,
        }
        task_definitions = [item for item in found if item.kind.startswith("task definition")]
        assert [item.tags[names.DEPLOYMENT_TAG] for item in task_definitions] == [
            deployments[0]["id"]
        ]
        assert records == [hostname + "."]
        assert len(rules) == 1, rules


async def _newest_status(session: AsyncSession, service_id: str) -> str | None:
    return await session.scalar(
        select(Deployment.status)
        .where(Deployment.service_id == service_id)
        .order_by(Deployment.created_at.desc())
        .limit(1)
    )


def _host_rules(customer: Any, hostname: str) -> list[str]:
    """Listener rules of any load balancer in the account that route `hostname`."""
    elbv2 = customer.client("elbv2")
    matching = []
    for balancer in elbv2.describe_load_balancers()["LoadBalancers"]:
        for listener in elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])[
            "Listeners"
        ]:
            for rule in elbv2.describe_rules(ListenerArn=listener["ListenerArn"])["Rules"]:
                hosts = [
                    value
                    for condition in rule.get("Conditions", [])
                    if condition.get("Field") == "host-header"
                    for value in condition.get("HostHeaderConfig", {}).get(
                        "Values", condition.get("Values", [])
                    )
                ]
                if hostname in hosts:
                    matching.append(rule["RuleArn"])
    return matching


# Scale-out -------------------------------------------------------------------------------------


class Database:
    """A connection pool to the processes' database, kept open for quick repeated reads."""

    def __init__(self, settings: Settings) -> None:
        from capstan.db import make_engine, make_sessionmaker

        self._loop = asyncio.new_event_loop()
        self._engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        self._sessions = make_sessionmaker(self._engine)

    def run(self, work: Any) -> Any:
        async def main() -> Any:
            async with self._sessions() as session:
                result = await work(session)
                await session.commit()
                return result

        return self._loop.run_until_complete(main())

    def close(self) -> None:
        self._loop.run_until_complete(self._engine.dispose())
        self._loop.close()


@dataclass(frozen=True)
class Pass:
    kind: str
    resource_id: str
    owner: str
    started_at: datetime
    finished_at: datetime
    outcome: str


async def _passes(session: AsyncSession) -> list[Pass]:
    rows = await session.scalars(select(ReconcilePass).order_by(ReconcilePass.started_at))
    return [
        Pass(r.kind, r.resource_id, r.owner, r.started_at, r.finished_at, r.outcome) for r in rows
    ]


async def _leases(session: AsyncSession) -> list[tuple[str, str, str, datetime]]:
    """(kind, resource id, owner, expiry) of every unexpired lease."""
    rows = await session.execute(
        select(
            QueueItem.kind, QueueItem.resource_id, QueueItem.lease_owner, QueueItem.lease_expires_at
        ).where(QueueItem.lease_owner.is_not(None), QueueItem.lease_expires_at > utcnow())
    )
    return [
        (kind, resource_id, owner, expires)
        for kind, resource_id, owner, expires in rows
        if owner is not None and expires is not None
    ]


def overlapping(passes: list[Pass]) -> list[tuple[Pass, Pass]]:
    """Pairs of passes over one resource whose time intervals overlap."""
    by_resource: dict[tuple[str, str], list[Pass]] = {}
    for item in passes:
        by_resource.setdefault((item.kind, item.resource_id), []).append(item)
    found = []
    for items in by_resource.values():
        items.sort(key=lambda p: p.started_at)
        latest_end = items[0]
        for item in items[1:]:
            if item.started_at < latest_end.finished_at:
                found.append((latest_end, item))
            if item.finished_at > latest_end.finished_at:
                latest_end = item
    return found


def _warnings(workers: list[Process]) -> list[str]:
    """Every warning and error the workers logged (a late heartbeat, a takeover), whenever it
    came: the last lines of each process alone may no longer hold the one that explains."""
    return [
        f"{worker.name} (pid {worker.pid}): {line}"
        for worker in workers
        for line in list(worker.lines)
        if " WARNING " in line or " ERROR " in line
    ]


def _span(item: Pass) -> str:
    return f"{item.owner} {item.started_at:%T.%f} to {item.finished_at:%T.%f} {item.outcome}"


def pid_of(owner: str) -> int:
    """Worker names are `<host>:<pid>:<random>`."""
    return int(owner.split(":")[1])


database_schema = postgres_schema_fixture(
    "capstan_scale",
    "scale-out runs several processes over one PostgreSQL (SQLite has one worker process)",
)


def test_two_workers_share_the_queue_and_a_killed_one_hands_over_within_the_lease(
    tmp_path: Path, database_schema: str, github_app_key: Path
) -> None:
    assert POSTGRES_URL
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    database = Database(db_settings(POSTGRES_URL, database_schema))
    with processes(tmp_path) as procs:
        try:
            _sandbox, sandbox_url = procs.sandbox(build_seconds=0.5, task_start_seconds=0.5)
            common = capstan_env(
                CAPSTAN_DATABASE_URL=POSTGRES_URL,
                CAPSTAN_DATABASE_SCHEMA=database_schema,
                CAPSTAN_SECRET_KEY=secrets.token_urlsafe(32),
                CAPSTAN_CLOUD="sandbox",
                CAPSTAN_SANDBOX_CLOUD_URL=sandbox_url,
                CAPSTAN_GIT_HOST="sandbox",
                CAPSTAN_BASE_URL=base_url,
                CAPSTAN_DOMAIN="capstan.test",
                CAPSTAN_GITHUB_APP_ID="4242",
                CAPSTAN_GITHUB_APP_SLUG="capstan-test",
                CAPSTAN_GITHUB_PRIVATE_KEY_FILE=str(github_app_key),
                CAPSTAN_GITHUB_WEBHOOK_SECRET=secrets.token_urlsafe(16),
                CAPSTAN_GITHUB_CLIENT_ID="Iv1.capstan-test",
                CAPSTAN_GITHUB_CLIENT_SECRET=secrets.token_urlsafe(32),
                CAPSTAN_WORKER_LEASE_SECONDS=str(LEASE_SECONDS),
            )
            api_env = {
                **common,
                "CAPSTAN_WORKER_CONCURRENCY": "0",
                "CAPSTAN_DATA_DIR": str(tmp_path / "api"),
            }
            procs.server("api", ["--port", str(port)], api_env)
            procs.start(
                "create-user",
                [
                    "admin",
                    "create-user",
                    "--email",
                    "ops@example.test",
                    "--password",
                    PASSWORD,
                    "--name",
                    "Ops",
                    "--organization",
                    "Scale",
                ],
                api_env,
                ready=r"Created user ops@example.test",
            )
            workers = [
                procs.worker(f"worker {n}", {**common, "CAPSTAN_DATA_DIR": str(tmp_path / f"w{n}")})
                for n in (1, 2)
            ]
            token = api_token_for(base_url, "ops@example.test", PASSWORD)
            with bearer_client(base_url, token) as api:
                _scale_out(api, database, workers, procs)
        finally:
            database.close()


def _scale_out(
    api: httpx.Client, database: Database, workers: list[Process], procs: Processes
) -> None:
    connect_cloud_account(api)
    install_git_host(api)
    project = create_project(api, "scale")
    base = f"/api/projects/{project['id']}"
    bodies = [("web_servers", web_server_body(f"web{n}")) for n in range(10)]
    bodies += [("workers", worker_body(f"jobs{n}")) for n in range(10)]

    def create(kind_and_body: tuple[str, dict[str, Any]]) -> str:
        kind, body = kind_and_body
        created = api.post(f"{base}/{kind}", json=body)
        assert created.status_code == 201, created.text
        return f"{base}/{kind}/{created.json()['id']}"

    with ThreadPoolExecutor(max_workers=20) as pool:
        paths = list(pool.map(create, bodies))
    wait_all_running(api, paths, timeout=90)

    before_kill = database.run(_passes)
    assert {pid_of(p.owner) for p in before_kill} == {w.pid for w in workers}, (
        "both workers should have done work",
        Counter(p.owner for p in before_kill),
    )

    # A batch of work for both, then SIGKILL one of them while it holds leases (its passes in
    # flight). It is frozen (SIGSTOP) while its leases are read, so what it held is exact.
    with ThreadPoolExecutor(max_workers=20) as pool:
        redeploys = list(pool.map(lambda path: api.post(f"{path}/redeploy"), paths))
    assert [r.status_code for r in redeploys] == [202] * len(paths)
    by_pid = {w.pid: w for w in workers}
    victim, held, killed_at = _kill_while_holding_leases(database, by_pid)
    survivor = next(w for w in workers if w is not victim)
    wait_all_running(api, paths, timeout=90)
    newest = [api.get(f"{path}/deployments").json()["deployments"][0] for path in paths]
    assert {(d["trigger"], d["status"]) for d in newest} == {("redeploy", "running")}
    assert survivor.alive(), procs.output()

    passes = database.run(_passes)
    # No resource was ever reconciled by two workers at once (nor twice at once by one).
    overlaps = [f"{a.resource_id}: {_span(a)} / {_span(b)}" for a, b in overlapping(passes)]
    assert overlaps == [], "\n".join([*overlaps, *_warnings(workers)]) + "\n" + procs.output()
    assert [p for p in passes if p.outcome == "lost"] == []
    assert not [p for p in passes if pid_of(p.owner) == victim.pid and p.started_at > killed_at]
    # Every row the dead worker held was taken over by the survivor once its lease expired,
    # and within the lease time (plus the survivor's poll and a margin) of the kill.
    handed_over = []
    for kind, resource_id, _owner, expires in held:
        taken_over = [
            p
            for p in passes
            if (p.kind, p.resource_id) == (kind, resource_id)
            and pid_of(p.owner) == survivor.pid
            and p.started_at > killed_at
        ]
        assert taken_over, (kind, resource_id)
        first = taken_over[0].started_at
        assert first >= expires, (kind, resource_id, first, expires)
        handed_over.append((first - killed_at).total_seconds())
    assert max(handed_over) <= LEASE_SECONDS + HANDOVER_MARGIN_SECONDS, handed_over
    print(
        f"the killed worker held {len(held)} leases; the survivor took them over after "
        + ", ".join(f"{seconds:.2f}" for seconds in handed_over)
        + " s"
    )


def _kill_while_holding_leases(
    database: Database, workers: dict[int, Process]
) -> tuple[Process, list[tuple[str, str, str, datetime]], datetime]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        holders = {pid_of(owner) for _k, _r, owner, _e in database.run(_leases)} & set(workers)
        if holders:
            victim = workers[min(holders)]
            os.kill(victim.pid, signal.SIGSTOP)
            held = [lease for lease in database.run(_leases) if pid_of(lease[2]) == victim.pid]
            if held:
                victim.kill()
                return victim, held, datetime.now(UTC)
            os.kill(victim.pid, signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("no worker held a lease within 30 s of the redeploys")


def test_the_overlap_check_finds_concurrent_passes() -> None:
    """The record check above can fail: two passes of one resource at once are reported."""
    at = datetime(2025, 1, 1, tzinfo=UTC)

    def made(owner: str, start: float, end: float, resource: str = "svc_a") -> Pass:
        return Pass(
            "service",
            resource,
            f"host:{owner}:x",
            at + timedelta(seconds=start),
            at + timedelta(seconds=end),
            "done",
        )

    back_to_back = [made("1", 0, 1), made("2", 1, 2), made("1", 2.5, 3), made("2", 0, 9, "svc_b")]
    assert overlapping(back_to_back) == []
    inside = made("2", 0.5, 0.7)
    assert overlapping([made("1", 0, 1), inside, made("1", 1, 2)]) == [(made("1", 0, 1), inside)]
    assert pid_of("host:4242:abc123") == 4242
