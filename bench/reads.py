"""Metrics and cost reads against the sandbox, each beside a plain database read, in one run.

This starts a zero-delay `capstan sandbox` and a `capstan server --dev` (SQLite) as separate
processes, connects the cloud account and installs the git host app over HTTP, then makes a web
server (waiting until it is `running`), a cache and a bucket. wrk (Debian's `wrk`, one
connection: reads as one person's page would make them, one after another) then drives each URL
for `--seconds`:

- the floor: `GET` of the web server itself (a database read behind authentication);
- `GET .../metrics` and `GET .../cost` of the web server, the cache and the bucket: reads of
  CloudWatch and Cost Explorer in the customer's (sandbox) account.

It prints p50 and p99 latency of each, and each read's p50 as a multiple of the floor's. The
issue's goal: metrics and cost reads at most 300 ms at p50.

Run from the repository root:  .venv/bin/python bench/reads.py  [--seconds 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.apps.processes import (  # noqa: E402 (the repository root is on the path now)
    create_project,
    processes,
    ready_dev_server,
    wait_all_running,
    web_server_body,
)

GOAL_MS = 300.0
WRK_ONE_CONNECTION = ("wrk", "-t1", "-c1", "--latency")


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url: str, token: str, seconds: int) -> Latency:
    """wrk's median and 99th percentile for `url` over one connection; non-2xx answers count as
    errors."""
    out = subprocess.run(
        [*WRK_ONE_CONNECTION, f"-d{seconds}s", "-H", f"Authorization: Bearer {token}", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)\b", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    total = re.search(r"(\d+) requests in", out)
    assert p50 and p99 and total, out
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return Latency(
        _ms(*p50.groups()), _ms(*p99.groups()), int(total.group(1)), int(bad.group(1)) if bad else 0
    )


def measure(seconds: int) -> dict[str, Latency]:
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-reads-") as tmp,
        processes(Path(tmp)) as procs,
    ):
        with ready_dev_server(procs) as (dev, api):
            base, token = dev.base_url, dev.token
            project = create_project(api, "reads")
            root = f"/api/projects/{project['id']}"
            made = api.post(f"{root}/web_servers", json=web_server_body("web"))
            assert made.status_code == 201, made.text
            web = f"{root}/web_servers/{made.json()['id']}"
            cache = api.post(f"{root}/cache", json={"storage_limit_mb": 256})
            assert cache.status_code == 201, cache.text
            bucket = api.post(f"{root}/storage", json={"name": "uploads"})
            assert bucket.status_code == 201, bucket.text
            caches = f"{root}/cache/{cache.json()['id']}"
            buckets = f"{root}/storage/{bucket.json()['id']}"
            wait_all_running(api, [web], timeout=120)
            _wait_settled(api, {caches: "available", buckets: "active"})
        paths = {
            "floor: GET web server": web,
            "web server metrics": f"{web}/metrics",
            "web server cost": f"{web}/cost",
            "cache metrics": f"{caches}/metrics",
            "cache cost": f"{caches}/cost",
            "bucket metrics": f"{buckets}/metrics",
            "bucket cost": f"{buckets}/cost",
        }
        return {name: wrk(base + path, token, seconds) for name, path in paths.items()}


def _wait_settled(api: httpx.Client, wanted: dict[str, str]) -> None:
    deadline = time.monotonic() + 120
    for path, status in wanted.items():
        while api.get(path).json().get("status") != status:
            if time.monotonic() > deadline:
                raise SystemExit(f"{path} did not become {status}")
            time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="wrk's duration per URL")
    arguments = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("bench/reads.py needs wrk: apt-get install -y wrk")
    figures = measure(arguments.seconds)
    floor = figures["floor: GET web server"].p50_ms
    print()
    print(
        f"{'read':<22} | {'p50':>9} | {'p99':>9} | {'requests':>8} | {'errors':>6} || "
        f"p50 / floor's p50 (goal: reads p50 <= {GOAL_MS:.0f} ms)"
    )
    for name, load in figures.items():
        verdict = (
            ""
            if name.startswith("floor")
            else ("  ok" if load.p50_ms <= GOAL_MS else "  over the goal")
        )
        print(
            f"{name:<22} | {load.p50_ms:>7.1f}ms | {load.p99_ms:>7.1f}ms | {load.requests:>8} | "
            f"{load.errors:>6} || {load.p50_ms / floor:>7.1f}x{verdict}"
        )


if __name__ == "__main__":
    main()
