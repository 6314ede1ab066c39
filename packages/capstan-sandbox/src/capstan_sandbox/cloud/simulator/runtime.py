"""What running tasks produce on their own: log lines in their awslogs streams and CloudWatch
data points (ECS CPU and memory per service; the load balancer's requests per target group).

A task whose variables name an RDS database (a `postgresql://` URL of its endpoint, with
`PGPASSWORD` as libpq reads it) connects to it as it starts and logs the outcome; while its
connections are refused (a password the instance no longer accepts, once RDS has rotated it),
each of its log intervals adds libpq's error, as an application's new connections would fail
(`rds_passwords.connections`, with the variables the task started with).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.core.utils import utcnow
from moto.ecs.models import ecs_backends
from moto.elbv2.models import elbv2_backends

from capstan_sandbox.cloud import rds_passwords
from capstan_sandbox.cloud.simulator import logs as sim_logs
from capstan_sandbox.cloud.simulator.backends import each

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.ecs import Scheduler, ServiceSim, Task
    from capstan_sandbox.cloud.simulator.parts import Simulator


class Runtime:
    def __init__(self, simulator: Simulator, scheduler: Scheduler) -> None:
        self._simulator = simulator
        self._scheduler = scheduler
        self._random = random.Random(7)  # noqa: S311 - made-up load, not secrets

    def tick(self, now: float) -> None:
        knobs = self._simulator.knobs
        for account_id, region, backend in each(ecs_backends):
            for service in list(backend.services.values()):
                if service.status != "ACTIVE":
                    continue
                sim = self._scheduler.services.get((account_id, region, service.arn))
                if sim is None or not sim.tasks:
                    continue
                for task in list(sim.tasks):
                    self._log(account_id, region, backend, service, task, now, knobs)
                if now - sim.last_metrics >= knobs.metrics_interval_seconds:
                    sim.last_metrics = now
                    self._metrics(account_id, region, service, sim)

    def _log(
        self,
        account_id: str,
        region: str,
        backend: Any,
        service: Any,
        task: Task,
        now: float,
        knobs: Any,
    ) -> None:
        if task.logged_start and now - task.last_log < knobs.log_interval_seconds:
            return
        destination = _awslogs(backend, task.task_definition)
        if destination is None:
            return
        group, prefix, container, web, command = destination
        if not task.healthy:
            lines = ["Error: the application did not answer its health check"]
        elif not task.logged_start:
            lines = ["listening on :8080"] if web else [f"worker started: {command or 'run'}"]
        elif web:
            lines = [f"GET / 200 {self._random.randint(2, 40)}ms"]
        else:
            lines = [f"processed job {self._random.randint(1000, 9999)}"]
        if task.healthy:
            lines += _database_lines(account_id, region, task)
        stream = f"{prefix}/{container}/{task.id}"
        if sim_logs.write(account_id, region, group, stream, lines):
            task.logged_start = True
            task.last_log = now

    def _metrics(self, account_id: str, region: str, service: Any, sim: ServiceSim) -> None:
        healthy = [task for task in sim.tasks if task.healthy]
        if not healthy:
            return
        stamp = utcnow()  # moto compares naive UTC datetimes
        cloudwatch = cloudwatch_backends[account_id][region]
        dimensions = [
            {"Name": "ClusterName", "Value": service.cluster_name},
            {"Name": "ServiceName", "Value": service.name},
        ]
        cloudwatch.put_metric_data(
            "AWS/ECS",
            [
                {
                    "MetricName": "CPUUtilization",
                    "Dimensions": dimensions,
                    "Value": round(self._random.uniform(3, 25), 2),
                    "Unit": "Percent",
                    "Timestamp": stamp,
                },
                {
                    "MetricName": "MemoryUtilization",
                    "Dimensions": dimensions,
                    "Value": round(self._random.uniform(15, 40), 2),
                    "Unit": "Percent",
                    "Timestamp": stamp,
                },
            ],
        )
        elbv2 = elbv2_backends[account_id][region]
        for balancer in service.load_balancers or []:
            group = elbv2.target_groups.get(balancer.get("targetGroupArn") or "")
            if group is None or not group.load_balancer_arns:
                continue
            alb = [
                {"Name": "TargetGroup", "Value": group.arn.split(":", 5)[5]},
                {
                    "Name": "LoadBalancer",
                    "Value": group.load_balancer_arns[0]
                    .split(":", 5)[5]
                    .removeprefix("loadbalancer/"),
                },
            ]
            requests = self._random.randint(5, 60) * len(healthy)
            cloudwatch.put_metric_data(
                "AWS/ApplicationELB",
                [
                    {
                        "MetricName": "RequestCount",
                        "Dimensions": alb,
                        "Value": float(requests),
                        "Unit": "Count",
                        "Timestamp": stamp,
                    },
                    {
                        "MetricName": "HTTPCode_Target_5XX_Count",
                        "Dimensions": alb,
                        "Value": float(requests // 50),
                        "Unit": "Count",
                        "Timestamp": stamp,
                    },
                ],
            )


def _database_lines(account_id: str, region: str, task: Task) -> list[str]:
    """What the task logs of its databases: each connection as it starts, then each refused
    one again at every interval."""
    lines = []
    for connection in rds_passwords.connections(account_id, region, task.environment):
        if connection.error is not None:
            lines.append(connection.error)
        elif not task.logged_start:
            lines.append(f"connected to {connection.url}")
    return lines


def _awslogs(backend: Any, task_definition: str) -> tuple[str, str, str, bool, str | None] | None:
    """(group, stream prefix, container, has a port, command) of the task's first container."""
    family, _, revision = task_definition.split("/")[-1].partition(":")
    definition = backend.task_definitions.get(family, {}).get(int(revision or 0))
    if definition is None or not definition.container_definitions:
        return None
    container = definition.container_definitions[0]
    configuration = container.get("logConfiguration") or {}
    if configuration.get("logDriver") != "awslogs":
        return None
    options = configuration.get("options") or {}
    group = options.get("awslogs-group")
    if not group:
        return None
    entry = list(container.get("entryPoint") or [])
    words = list(container.get("command") or [])
    command = " ".join(words if entry[-1:] == ["-c"] else entry + words) or None
    return (
        str(group),
        str(options.get("awslogs-stream-prefix") or "ecs"),
        str(container.get("name") or "app"),
        bool(container.get("portMappings")),
        command,
    )
