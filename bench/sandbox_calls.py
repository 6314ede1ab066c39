"""What one AWS call costs against the sandbox cloud, on each side: the client's CPU (boto3,
one thread, one client, as a reconciler's call) and the sandbox's CPU, per call.

Starts `capstan sandbox` as its own process on a free port, warms a boto3 ECS client up, then
makes `--calls` `ecs:ListClusters` calls one after another and prints, per call: wall time, the
client thread's CPU (`time.thread_time`) and the sandbox process's CPU (from /proc/<pid>/stat).

Run from the repository root:  .venv/bin/python bench/sandbox_calls.py  [--calls 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.deploy import cpu_seconds  # noqa: E402 (the repository root is on the path now)
from tests.apps.processes import processes  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory(prefix="capstan-bench-") as tmp, processes(Path(tmp)) as procs:
        sandbox, url = procs.sandbox(build_seconds=0, task_start_seconds=0)
        ecs = boto3.client(
            "ecs",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        for _ in range(50):
            ecs.list_clusters()
        wall, client, server = time.perf_counter(), time.thread_time(), cpu_seconds(sandbox.pid)
        for _ in range(calls):
            ecs.list_clusters()
        wall = time.perf_counter() - wall
        client = time.thread_time() - client
        server = cpu_seconds(sandbox.pid) - server
        print(
            f"ecs:ListClusters x{calls}: {1000 * wall / calls:.3f} ms a call, client CPU "
            f"{1000 * client / calls:.3f} ms, sandbox CPU {1000 * server / calls:.3f} ms"
        )


if __name__ == "__main__":
    main()
