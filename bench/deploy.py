"""Deploying N web servers at once against the sandbox cloud with zero simulated delay.

For each N (1, 10, 100 by default) this starts a fresh `capstan sandbox --build-seconds 0
--task-start-seconds 0` and a fresh `capstan server --dev` (SQLite, the in-process worker) as
separate processes, connects the cloud account and installs the git host app over HTTP, deploys
one worker to warm the project (its network — VPC, load balancer, cluster, roles — is made with
the project's first deployment, once; that first deployment's time and calls are printed apart),
then creates N web servers at once, and measures until all N are `running`:

- time: wall-clock seconds from the first create request until the last deployment is
  `running` (read from the server's SQLite file, so that polling costs the server nothing);
- control-plane CPU: user + system time of the `capstan server` process only (from
  /proc/<pid>/stat), per deployment — the sandbox runs in its own process and is reported apart;
- the sandbox's builds' CPU: its finished subprocesses' (each build's shell and the sandbox's
  `git`, `docker`, `aws` tools, Python programs), apart from the sandbox's own;
- machine busy: the share of all cores' time not idle over the run (from /proc/stat): when it
  is near 100 %, the run waited for the cores, whoever used them;
- AWS calls: counted by the sandbox itself (a WSGI middleware in front of moto answers
  `GET /_capstan/stats`), per deployment.

With `--timeline`, each run also prints its reconcile passes (kind, resource, start and length
in seconds from the first create request, outcome) and when each deployment reached running:
where a deployment's time goes. With `--profile DIR`, the server runs under `bench/profiled.py`
and yappi profiles its CPU (every thread) from the first create request until all N are running;
each N's top functions go to DIR/profile-N.txt (needs `pip install yappi`).

Run from the repository root:  .venv/bin/python bench/deploy.py  [--sizes 1,10,100] [--timeline]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tests.apps.processes  # noqa: E402 (the repository root is on the path now)
from tests.apps.processes import (  # noqa: E402
    create_project,
    processes,
    ready_dev_server,
    web_server_body,
    worker_body,
)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    n: int
    seconds: float
    server_cpu: float
    sandbox_cpu: float
    builds_cpu: float
    machine_busy: float
    aws_calls: int
    by_service: dict[str, int]
    by_operation: dict[str, int]
    warm_up_seconds: float = 0.0
    warm_up_calls: int = 0
    timeline: list[str] = field(default_factory=list)

    @property
    def cpu_per_deployment(self) -> float:
        return self.server_cpu / self.n

    @property
    def calls_per_deployment(self) -> float:
        return self.aws_calls / self.n


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    """User + system CPU time of a process so far (fields 14 and 15 of /proc/<pid>/stat); with
    `children`, of its children that have ended and been waited for instead (16 and 17)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    first = 13 if children else 11
    return (int(fields[first]) + int(fields[first + 1])) / CLOCK_TICKS


def machine_ticks() -> tuple[int, int]:
    """All cores' (busy, total) clock ticks so far (the first line of /proc/stat)."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return sum(values) - idle, sum(values)


def aws_calls(client: httpx.Client) -> dict[str, dict[str, int]]:
    """The sandbox's counts so far, `by_service` and `by_operation`."""
    stats = client.get("/_capstan/stats").json()
    return {"by_service": stats["by_service"], "by_operation": stats["by_operation"]}


def _difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {
        key: after[key] - before.get(key, 0) for key in after if after[key] - before.get(key, 0)
    }


def deployment_states(database: Path) -> dict[str, int]:
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        rows = connection.execute("SELECT status, count(*) FROM deployments GROUP BY status")
        return {status: count for status, count in rows}
    finally:
        connection.close()


def failures(database: Path) -> list[str]:
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        rows = connection.execute("SELECT error FROM deployments WHERE status = 'failed'")
        return [str(error) for (error,) in rows]
    finally:
        connection.close()


def wait_running(database: Path, count: int, deadline: float, output: Callable[[], str]) -> None:
    """Until `count` deployments are running (the warm-up's among them); none may fail."""
    while True:
        states = deployment_states(database)
        if states.get("failed"):
            raise SystemExit(f"deployments failed: {states}: {failures(database)}\n{output()}")
        if states.get("running", 0) == count:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"not all {count} running in time: {states}")
        time.sleep(0.02)


def _offset(stored: str, origin: datetime) -> float:
    moment = datetime.fromisoformat(stored)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - origin).total_seconds()


def timeline(database: Path, origin: datetime) -> list[str]:
    """The run's reconcile passes and deployments from `origin` on, in seconds from it."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        passes = connection.execute(
            "SELECT kind, resource_id, started_at, finished_at, outcome, error "
            "FROM reconcile_passes ORDER BY started_at"
        ).fetchall()
        deployments = connection.execute(
            "SELECT id, created_at, finished_at FROM deployments ORDER BY created_at"
        ).fetchall()
    finally:
        connection.close()
    lines: list[tuple[float, str]] = []
    for kind, resource, started, finished, outcome, error in passes:
        start = _offset(started, origin)
        length = _offset(finished, origin) - start
        note = f" {error[:80]}" if error else ""
        lines.append(
            (start, f"{start:7.3f}s +{length:.3f}s pass {kind} {resource} {outcome}{note}")
        )
    for deployment, created, finished in deployments:
        lines.append(
            (_offset(created, origin), f"{_offset(created, origin):7.3f}s created {deployment}")
        )
        if finished:
            lines.append(
                (
                    _offset(finished, origin),
                    f"{_offset(finished, origin):7.3f}s running {deployment}",
                )
            )
    return [line for start, line in sorted(lines) if start >= 0]  # the warm-up's left out


def run(n: int, timeout: float, *, with_timeline: bool = False, profile: Path | None = None) -> Run:
    extra = {}
    if profile is not None:
        # The server through the profiling wrapper (plain `capstan` for the other processes).
        tests.apps.processes.CAPSTAN = [sys.executable, str(ROOT / "bench" / "profiled.py")]
        extra["BENCH_PROFILE_OUT"] = str(profile.resolve() / f"profile-{n}.txt")
    with tempfile.TemporaryDirectory(prefix="capstan-bench-") as tmp, processes(Path(tmp)) as procs:
        with (
            # The account's Fargate quota as an operator would have AWS raise it for N services
            # of 0.25 vCPU and the warm-up's worker (a new account runs 6 vCPUs at once).
            ready_dev_server(procs, f"fargate_vcpus_per_region={n // 4 + 2}", **extra) as (
                dev,
                api,
            ),
            httpx.Client(base_url=dev.sandbox_url, timeout=30) as stats,
        ):
            sandbox, server, data_dir = dev.sandbox, dev.server, dev.data_dir
            project = create_project(api, "bench")
            path = f"/api/projects/{project['id']}/web_servers"
            warm_calls = aws_calls(stats)
            warm_started = time.monotonic()
            # A worker: it needs the network but takes no rule of the load balancer, which
            # holds 100 (N = 100 web servers fill it).
            created = api.post(f"/api/projects/{project['id']}/workers", json=worker_body("warm"))
            assert created.status_code == 201, created.text
            wait_running(data_dir / "capstan.db", 1, warm_started + timeout, procs.output)
            warm_up_seconds = time.monotonic() - warm_started
            calls_before = aws_calls(stats)
            warm_up_calls = sum(
                _difference(calls_before["by_service"], warm_calls["by_service"]).values()
            )
            if profile is not None:
                os.kill(server.pid, signal.SIGUSR1)
            server_before, sandbox_before = cpu_seconds(server.pid), cpu_seconds(sandbox.pid)
            builds_before = cpu_seconds(sandbox.pid, children=True)
            busy_before, ticks_before = machine_ticks()
            started = time.monotonic()
            origin = datetime.now(UTC)

            def create(index: int) -> None:
                created = api.post(path, json=web_server_body(f"web{index}"))
                assert created.status_code == 201, created.text

            with ThreadPoolExecutor(max_workers=min(n, 16)) as pool:
                list(pool.map(create, range(n)))
            wait_running(data_dir / "capstan.db", n + 1, started + timeout, procs.output)
            seconds = time.monotonic() - started
            server_cpu = cpu_seconds(server.pid) - server_before
            sandbox_cpu = cpu_seconds(sandbox.pid) - sandbox_before
            builds_cpu = cpu_seconds(sandbox.pid, children=True) - builds_before
            busy, ticks = machine_ticks()
            machine_busy = (busy - busy_before) / max(ticks - ticks_before, 1)
            if profile is not None:
                written = profile / f"profile-{n}.txt"
                written.unlink(missing_ok=True)
                os.kill(server.pid, signal.SIGUSR2)
                while not written.exists() and time.monotonic() < started + timeout:
                    time.sleep(0.1)
            calls_after = aws_calls(stats)
            passes = timeline(data_dir / "capstan.db", origin) if with_timeline else []
        by_service = _difference(calls_after["by_service"], calls_before["by_service"])
        by_operation = _difference(calls_after["by_operation"], calls_before["by_operation"])
        return Run(
            n,
            seconds,
            server_cpu,
            sandbox_cpu,
            builds_cpu,
            machine_busy,
            sum(by_service.values()),
            by_service,
            by_operation,
            warm_up_seconds,
            warm_up_calls,
            passes,
        )


def report(runs: list[Run]) -> None:
    base = runs[0]
    print()
    print(
        f"{'N':>4} | {'all running':>11} | {'per deploy':>10} | {'CP CPU/deploy':>13} | "
        f"{'sandbox CPU/deploy':>18} | {'builds CPU/deploy':>17} | {'machine busy':>12} | "
        f"{'AWS calls/deploy':>16} || ratios vs N={base.n}: "
        "time/deploy, CPU/deploy, calls/deploy"
    )
    for item in runs:
        print(
            f"{item.n:>4} | {item.seconds:>10.2f}s | {item.seconds / item.n:>9.3f}s | "
            f"{item.cpu_per_deployment:>12.3f}s | {item.sandbox_cpu / item.n:>17.3f}s | "
            f"{item.builds_cpu / item.n:>16.3f}s | {item.machine_busy:>11.0%} | "
            f"{item.calls_per_deployment:>16.1f} || "
            f"{(item.seconds / item.n) / (base.seconds / base.n):>5.2f}  "
            f"{item.cpu_per_deployment / base.cpu_per_deployment:>5.2f}  "
            f"{item.calls_per_deployment / base.calls_per_deployment:>5.2f}"
        )
    print()
    for item in runs:
        top = sorted(item.by_service.items(), key=lambda pair: -pair[1])
        listed = ", ".join(f"{service} {count / item.n:.1f}" for service, count in top)
        print(f"N={item.n} AWS calls per deployment by service: {listed}")
    for item in runs:
        top = sorted(item.by_operation.items(), key=lambda pair: (-pair[1], pair[0]))
        listed = ", ".join(f"{operation} {count / item.n:.2f}" for operation, count in top)
        print(f"N={item.n} AWS calls per deployment by operation: {listed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,100", help="comma-separated N values")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per N")
    parser.add_argument(
        "--timeline", action="store_true", help="print each run's passes and deployments"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="profile the server's CPU with yappi; each N's top functions to DIR/profile-N.txt",
    )
    arguments = parser.parse_args()
    if arguments.profile is not None:
        arguments.profile.mkdir(parents=True, exist_ok=True)
    runs = []
    for n in (int(size) for size in arguments.sizes.split(",")):
        result = run(
            n, arguments.timeout, with_timeline=arguments.timeline, profile=arguments.profile
        )
        for line in result.timeline:
            print(f"  N={n} {line}")
        print(
            f"N={n}: all running in {result.seconds:.2f}s, control-plane CPU "
            f"{result.server_cpu:.2f}s, sandbox CPU {result.sandbox_cpu:.2f}s (its builds "
            f"{result.builds_cpu:.2f}s more), machine busy {result.machine_busy:.0%}, "
            f"{result.aws_calls} AWS calls (the warm-up deployment, with the project's network: "
            f"{result.warm_up_seconds:.2f}s, {result.warm_up_calls} AWS calls)",
            flush=True,
        )
        runs.append(result)
    report(runs)


if __name__ == "__main__":
    main()
