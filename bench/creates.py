"""The control plane's CPU for one `POST …/web_servers`, the request that starts a deployment.

This starts a sandbox cloud and `capstan server --dev` (SQLite) with its in-process workers off
(`CAPSTAN_WORKER_CONCURRENCY=0`: nothing deploys, so the server's CPU is the requests' own),
connects the cloud account and installs the git host app over HTTP, makes 20 web servers to warm
it, then sends `--creates` more from 16 threads at once and measures the server process's user +
system CPU over them (/proc/<pid>/stat), per create. A create reads the repository through the
git host, which the dev server itself serves: the sandbox GitHub's side of that read is counted
too (in AWS, GitHub is elsewhere).

`bench/deploy.py` counts the same requests inside its control-plane CPU a deployment, beside the
passes; this measures them alone, so a change to the create path shows apart from the passes'
noise.

Run from the repository root:  .venv/bin/python bench/creates.py  [--creates 400]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.deploy import cpu_seconds  # noqa: E402
from tests.apps.processes import (  # noqa: E402
    create_project,
    processes,
    ready_dev_server,
    web_server_body,
)

WARM_UP = 20
THREADS = 16


def measure(creates: int) -> tuple[float, float]:
    """Seconds for `creates` creates, and the server's CPU seconds over them."""
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-") as tmp,
        processes(Path(tmp)) as procs,
        ready_dev_server(procs, CAPSTAN_WORKER_CONCURRENCY="0") as (dev, api),
    ):
        project = create_project(api, "bench")
        path = f"/api/projects/{project['id']}/web_servers"

        def create(name: str) -> None:
            answer = api.post(path, json=web_server_body(name))
            assert answer.status_code == 201, answer.text

        for index in range(WARM_UP):
            create(f"warm{index}")
        before, started = cpu_seconds(dev.server.pid), time.monotonic()
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            list(pool.map(create, (f"web{index}" for index in range(creates))))
        return time.monotonic() - started, cpu_seconds(dev.server.pid) - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=400)
    creates = parser.parse_args().creates
    seconds, cpu = measure(creates)
    print(
        f"{creates} creates from {THREADS} threads: {seconds:.2f} s, {creates / seconds:.0f}/s; "
        f"server CPU {cpu:.2f} s, {cpu / creates * 1000:.1f} ms a create"
    )


if __name__ == "__main__":
    main()
