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
- `task_runs`: one-off tasks (`RunTask`) start, play their command (`task_shell`), write its
  output to their own log stream and stop with its exit code; `StopTask` kills them.
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
from typing import Any

from capstan_sandbox.cloud.knobs import Knobs, configure, knobs
from capstan_sandbox.cloud.simulator import (
    cdn,
    codebuild,
    cost,
    ecs,
    elasticache,
    rds,
    runtime,
    s3,
    schedules,
    task_runs,
)

log = logging.getLogger(__name__)


class Simulator:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing: set[str] = set()
        # Held through each tick, so the state is saved between ticks (`persistence`).
        self.ticking = threading.Lock()
        self.cost = cost.Ledger()
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sandbox-build")
        self.builds = codebuild.BuildRunner(self)
        self.ecs = ecs.Scheduler(self)
        self.runtime = runtime.Runtime(self, self.ecs)
        self.one_offs = task_runs.OneOffs(self)
        self.caches = elasticache.CacheSim(self)
        self.databases = rds.DatabaseSim(self)
        self.buckets = s3.BucketSim(self)
        self.edges = cdn.EdgeSim(self)
        self.schedules = schedules.ScheduleSim(self)

    @property
    def knobs(self) -> Knobs:
        return knobs()

    def configure(self, **changes: Any) -> Knobs:
        """Change knobs (unknown names are an error); answers the knobs before the change."""
        return configure(**changes)

    def fail_rollouts(self, match: str) -> None:
        """Tasks of ECS services named `match`, or whose product resource tag (`product`) is
        `match`, never become healthy from now on ("*": every service)."""
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

    def acquire(self, **changes: Any) -> None:
        """One more sandbox server uses the simulator (started by the first one)."""
        codebuild.install()
        ecs.install()
        task_runs.install(self, self.ecs.services_cpu)
        cost.install(self.cost)
        if changes:
            self.configure(**changes)
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
            self._stop.wait(knobs().tick_seconds)

    def tick(self) -> None:
        now = time.monotonic()
        steps = (self.builds.tick, self.ecs.tick, self.runtime.tick, self.one_offs.tick)
        later = (self.caches.tick, self.databases.tick, self.buckets.tick, self.edges.tick)
        with self.ticking:
            for step in (*steps, *later, self.schedules.tick):
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
