"""The sandbox's simulator: what AWS does on its own after a call, which moto does not.

One background thread per process (moto's state is per process) walks moto's backends a few
times a second and moves things along, in AWS's terms:

- `codebuild`: builds that are IN_PROGRESS finish `build_seconds` after they leave the queue
  (`build_queue`: at most `codebuild_concurrent_builds` of an account run at once, as in AWS).
  Like a real build, the runner first fetches the source from the git host with the build's
  own `GIT_TOKEN`
  (`GET {GIT_API_URL}/repos/{owner}/{repo}/contents/capstan-sandbox.json?ref={SOURCE_COMMIT}`);
  the file says whether the build succeeds (`{"build": "succeed"}`) or fails
  (`{"build": "fail", "error": "..."}`). Success pushes an image (tag = commit) to ECR; both write
  build log lines to CloudWatch Logs.
  A build whose service role CodeBuild cannot assume yet (IAM's propagation,
  `iam_propagation_seconds`) fails as it provisions.
- `ecs`: a new deployment's tasks start after `task_start_seconds` (none while ECS cannot assume
  their roles yet), register in the service's target groups and report healthy; the deployment
  completes and older ones go away. Services asked to fail (`fail_rollouts`) never become
  healthy, and after `circuit_breaker_seconds` the circuit breaker fails the rollout and rolls
  back to the previous deployment, if any.
- `runtime`: running tasks write log lines to their awslogs stream and CloudWatch data points.
- `cost`: the tasks' run time accrues cost per tag; Cost Explorer's GetCostAndUsage answers from it.
- `elasticache`: serverless caches become available (or gone) after `cache_seconds`, write
  CloudWatch data points and accrue the cost of their data stored.
- `rds`: DB instances become available (or failed, on request), are modified or gone after
  `database_seconds`, write CloudWatch data points and accrue the cost of their hours and storage;
  their RDS-managed master passwords are rotated when their schedule says.
- `cdn`: CloudFront distributions are `Deployed` `distribution_seconds` after each change and
  invalidations `Completed` after `invalidation_seconds`; deployed distributions write CloudWatch
  data points and accrue the cost of what they serve.
- `s3`: S3 request metrics (counted by `s3_metrics`) and storage metrics become CloudWatch data
  points; requests and bytes stored accrue cost per tag.

Knobs are process-wide (`configure(...)`), so are the failures asked for (`fail_rollouts`).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Knobs:
    """How long simulated AWS takes (seconds; 0 = as soon as the simulator sees the work)."""

    build_seconds: float = 2.0
    task_start_seconds: float = 2.0
    # How long tasks that never become healthy keep ECS trying before the circuit breaker trips.
    circuit_breaker_seconds: float = 10.0
    log_interval_seconds: float = 5.0
    metrics_interval_seconds: float = 10.0
    # How often the simulator looks at moto's state.
    tick_seconds: float = 0.05
    # How long ElastiCache Serverless takes to create, modify or delete a cache.
    cache_seconds: float = 2.0
    # How long RDS takes to create, modify or delete a DB instance.
    database_seconds: float = 2.0
    # How often RDS rotates the master passwords it manages (`rds_passwords`); 0 = each
    # secret's own schedule, RDS's 7 days unless changed.
    database_password_rotation_seconds: float = 0.0
    # How long a CloudFront distribution's change takes to deploy, and an invalidation to finish.
    distribution_seconds: float = 0.5
    invalidation_seconds: float = 0.5
    # How long IAM takes to propagate a change (it is eventually consistent): a role younger than
    # this cannot be assumed, by a caller or a service, and a policy put on a role grants only
    # after it (`iam_propagation`). 0 = at once.
    iam_propagation_seconds: float = 3.0
    # How long after ECS makes its service-linked role (a new account's first cluster) ECS still
    # cannot assume it: its clusters and services, the call that made it among them, are refused
    # meanwhile (see `service_linked`). 0 = usable at once.
    service_linked_role_seconds: float = 0.0


class Simulator:
    def __init__(self) -> None:
        from capstan.sandbox.cloud.simulator import codebuild, cost, ecs, runtime

        self._lock = threading.Lock()
        self._knobs = Knobs()
        self._users = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing: set[str] = set()
        self.cost = cost.Ledger()
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sandbox-build")
        self.builds = codebuild.BuildRunner(self)
        self.ecs = ecs.Scheduler(self)
        self.runtime = runtime.Runtime(self)
        from capstan.sandbox.cloud.simulator import elasticache

        self.caches = elasticache.CacheSim(self)
        from capstan.sandbox.cloud.simulator import rds

        self.databases = rds.DatabaseSim(self)
        from capstan.sandbox.cloud.simulator import s3

        self.buckets = s3.BucketSim(self)
        from capstan.sandbox.cloud.simulator import cdn

        self.edges = cdn.EdgeSim(self)

    @property
    def knobs(self) -> Knobs:
        return self._knobs

    def configure(self, **changes: Any) -> Knobs:
        """Change knobs (unknown names are an error); answers the knobs before the change."""
        known = {item.name for item in fields(Knobs)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown simulator knobs: {', '.join(sorted(unknown))}")
        with self._lock:
            before = self._knobs
            self._knobs = replace(before, **{k: float(v) for k, v in changes.items()})
        return before

    def fail_rollouts(self, match: str) -> None:
        """Tasks of ECS services named `match`, or tagged `capstan:resource` = `match`, never
        become healthy from now on ("*": every service)."""
        with self._lock:
            self._failing.add(match)

    def heal_rollouts(self, match: str | None = None) -> None:
        with self._lock:
            if match is None:
                self._failing.clear()
            else:
                self._failing.discard(match)

    def is_failing(self, service_name: str, resource: str | None) -> bool:
        with self._lock:
            failing = set(self._failing)
        return "*" in failing or service_name in failing or (resource or "") in failing

    # -- lifecycle ------------------------------------------------------------------------

    def acquire(self, **knobs: Any) -> None:
        """One more sandbox server uses the simulator (started by the first one)."""
        from capstan.sandbox.cloud.simulator import codebuild, cost, ecs

        codebuild.install()
        ecs.install()
        cost.install(self.cost)
        if knobs:
            self.configure(**knobs)
        with self._lock:
            self._users += 1
            if self._thread is not None:
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="sandbox-simulator", daemon=True)
            self._thread.start()

    def release(self) -> None:
        with self._lock:
            self._users = max(self._users - 1, 0)
            if self._users or self._thread is None:
                return
            thread, self._thread = self._thread, None
            self._stop.set()
        thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self._knobs.tick_seconds)

    def tick(self) -> None:
        now = time.monotonic()
        steps = (self.builds.tick, self.ecs.tick, self.runtime.tick, self.caches.tick)
        for step in (*steps, self.databases.tick, self.buckets.tick, self.edges.tick):
            try:
                step(now)
            except Exception:  # the simulator must survive whatever moto's state holds
                log.exception("sandbox simulator step failed")


_simulator: Simulator | None = None
_simulator_lock = threading.Lock()


def simulator() -> Simulator:
    """This process's simulator (made on first use, started by `start_sandbox_cloud`)."""
    global _simulator
    with _simulator_lock:
        if _simulator is None:
            _simulator = Simulator()
        return _simulator


__all__ = ["Knobs", "Simulator", "simulator"]
