"""The API's request path against FastAPI's floor, measured with wrk in one run.

For each database (SQLite always; PostgreSQL when `--postgres URL` or CAPSTAN_TEST_DATABASE_URL
is given) this starts `capstan server --dev` as its own process (its in-process workers on, as a
user runs it), makes an API token and 100 projects over HTTP, and starts beside it a bare FastAPI
app on the same uvicorn that answers the very same JSON bodies with no database, no
authentication and no middleware: the floor. wrk (Debian's `wrk`; a real load generator, not a
Python loop) then drives, for 64 connections and `--seconds` each:

- one: `GET /api/projects/{id}` with the bearer token (an authenticated single-row read);
- list: `GET /api/projects` (100 rows);
- ordinary: `GET /api/projects/{id}/static_websites` (the project's static websites: none), a
  read through the ordinary route — routing, dependencies, an ORM session. The first two are
  answered by the hot-read lane (`auth/bearer_read.py`) once warm; every route without such a
  lane costs what this one does, which is why it is measured too (no goal of its own).

It prints requests/s, p99 latency and the server's CPU per request (from /proc: all its
threads) of Capstan and of the floor, the ratio of the two throughputs, and the floor's CPU per
request over Capstan's (the same ratio, less swayed by what else the machine runs). The
issue's goal: at least 0.5x the floor and p99 at most 50 ms.

Run from the repository root:  .venv/bin/python bench/api.py  [--seconds 10] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.deploy import cpu_seconds  # noqa: E402
from tests.apps.processes import (  # noqa: E402 (the repository root is on the path now)
    CAPSTAN,
    bearer_client,
    capstan_env,
    free_port,
)
from tests.conftest import _drop_schema  # noqa: E402

T = TypeVar("T")

CONNECTIONS = 64
# One wrk thread: on this 2-core machine that is a core for the load and a core for the server
# (uvicorn serves on one). With two, wrk's threads and the server share the cores and the
# floor's own p99 rises from ~35 ms to 100-200 ms: scheduling, not the server.
THREADS = 1
PROJECTS = 100

# The floor: the same bodies from memory, on the same uvicorn, one process, no middleware.
FLOOR_APP = """
import json, sys
from fastapi import FastAPI
from fastapi.responses import Response
import uvicorn

bodies = json.load(open(sys.argv[1]))
app = FastAPI()

@app.get("/api/projects/{project_id}")
async def one(project_id: str) -> Response:
    return Response(bodies["one"], media_type="application/json")

@app.get("/api/projects")
async def many() -> Response:
    return Response(bodies["list"], media_type="application/json")

@app.get("/api/projects/{project_id}/static_websites")
async def ordinary(project_id: str) -> Response:
    return Response(bodies["ordinary"], media_type="application/json")

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


@dataclass(frozen=True)
class Load:
    requests_per_second: float
    p99_ms: float
    errors: int
    cpu_ms: float  # the server process's CPU time (all threads) per request answered


def wrk(
    url: str, token: str, seconds: int, pid: int, *, script: Path | None = None, **variables: str
) -> Load:
    """wrk's throughput and 99th percentile latency for `url` (non-2xx answers count as errors),
    and the CPU the server `pid` spent on each request. With `script`, wrk's Lua script makes
    the requests (`variables` in its environment)."""
    cpu_before = cpu_seconds(pid)
    finished = subprocess.run(
        [
            "wrk",
            f"-t{THREADS}",
            f"-c{CONNECTIONS}",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            *(["-s", str(script)] if script else []),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **variables},
    )
    cpu = cpu_seconds(pid) - cpu_before
    out = finished.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    assert p99 is not None, out
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    failed = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = int(bad.group(1)) if bad else 0
    if failed:
        errors += sum(int(part) for part in failed.groups())
    answered = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Load(rate, float(p99.group(1)) * scale, errors, cpu * 1000 / max(answered, 1))


@contextmanager
def capstan_server(tmp: Path, port: int, env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """`capstan server --dev` on `port`, its output (the access log: a line per request) going
    to a file: read by a thread of this process, as the tests' helper does, it would take CPU
    from the server on the same cores. Yields the dev API token and the server's pid."""
    log = tmp / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [*CAPSTAN, "server", "--dev", "--data-dir", str(tmp / "data"), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=capstan_env(**env),
            cwd=tmp,
        )
    try:
        token = None
        for _ in range(1200):
            text = log.read_text()
            found = re.search(r"Dev API token \(shown once\): (capstan_\w+)", text)
            token = found.group(1) if found else None
            # uvicorn says "Application startup complete" before it binds its port; this after.
            if token and "Uvicorn running on" in text:
                break
            if server.poll() is not None:
                raise SystemExit(f"capstan server exited:\n{text[-3000:]}")
            time.sleep(0.05)
        else:
            raise SystemExit(f"capstan server did not start:\n{log.read_text()[-3000:]}")
        yield token, server.pid
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def measure(database: str, env: dict[str, str], seconds: int) -> dict[str, tuple[Load, Load]]:
    port = free_port()
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-api-") as tmp,
        capstan_server(Path(tmp), port, env) as (token, pid),
    ):
        base = f"http://127.0.0.1:{port}"
        with bearer_client(base, token) as api:
            ids = []
            for index in range(PROJECTS):
                created = api.post(
                    "/api/projects", json={"name": f"Bench {index}", "hostname_suffix": f"b{index}"}
                )
                assert created.status_code == 201, created.text
                ids.append(created.json()["id"])
            paths = {
                "one": f"/api/projects/{ids[0]}",
                "list": "/api/projects",
                "ordinary": f"/api/projects/{ids[0]}/static_websites",
            }
            bodies = {name: api.get(path).content for name, path in paths.items()}
            assert len(json.loads(bodies["list"])) == PROJECTS, bodies["list"][:200]
            assert json.loads(bodies["ordinary"]) == {"static_websites": []}, bodies["ordinary"]
        bodies_file = Path(tmp) / "bodies.json"
        bodies_file.write_text(json.dumps({k: v.decode() for k, v in bodies.items()}))
        floor_port = free_port()
        floor = subprocess.Popen(
            [sys.executable, "-c", FLOOR_APP, str(bodies_file), str(floor_port)],
            stdout=subprocess.DEVNULL,
        )
        try:
            floor_base = f"http://127.0.0.1:{floor_port}"
            _wait_until_up(floor_base + paths["list"])
            figures = {}
            for name, path in paths.items():
                ours = wrk(base + path, token, seconds, pid)
                theirs = wrk(floor_base + path, token, seconds, floor.pid)
                print(f"  {database} {name}: capstan {_show(ours)} | floor {_show(theirs)}")
                figures[name] = (ours, theirs)
            return figures
        finally:
            floor.terminate()
            floor.wait(timeout=10)


def _wait_until_up(url: str) -> None:
    for _ in range(200):
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"the floor app did not answer at {url}")


def _show(load: Load) -> str:
    errors = f", {load.errors} errors" if load.errors else ""
    return (
        f"{load.requests_per_second:,.0f} req/s, p99 {load.p99_ms:.1f} ms, "
        f"{load.cpu_ms:.3f} ms CPU/request{errors}"
    )


def wrk_parser(description: str) -> argparse.ArgumentParser:
    """The options every wrk bench takes: `--seconds` and `--postgres`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=int, default=10, help="wrk's duration per measurement")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("CAPSTAN_TEST_DATABASE_URL"),
        help="a PostgreSQL URL to measure too (default: CAPSTAN_TEST_DATABASE_URL)",
    )
    if shutil.which("wrk") is None:
        raise SystemExit("the benchmarks through wrk need it: apt-get install -y wrk")
    return parser


def each_database(
    measure: Callable[[str, dict[str, str]], T],
    postgres: str | None,
    extra: dict[str, str],
    *,
    sqlite: bool = True,
) -> dict[str, T]:
    """`measure(database, server settings)` on SQLite, then on PostgreSQL (when a URL is given)
    in a schema of its own, dropped afterwards."""
    runs = {"sqlite": measure("sqlite", dict(extra))} if sqlite else {}
    if postgres:
        schema = f"capstan_bench_{secrets.token_hex(3)}"
        settings = {**extra, "CAPSTAN_DATABASE_URL": postgres, "CAPSTAN_DATABASE_SCHEMA": schema}
        try:
            runs["postgresql"] = measure("postgresql", settings)
        finally:
            _drop_schema(postgres, schema)
    return runs


def main() -> None:
    parser = wrk_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for capstan server (e.g. CAPSTAN_DATABASE_MAX_OVERFLOW=0); repeatable",
    )
    parser.add_argument(
        "--skip-sqlite", action="store_true", help="measure PostgreSQL only (needs --postgres)"
    )
    arguments = parser.parse_args()
    extra = dict(setting.split("=", 1) for setting in arguments.server_env)
    runs = each_database(
        lambda database, settings: measure(database, settings, arguments.seconds),
        arguments.postgres,
        extra,
        sqlite=not arguments.skip_sqlite,
    )
    print()
    print(
        f"{'database':<10} {'request':<8} | {'capstan req/s':>13} {'p99':>9} {'CPU/req':>9} | "
        f"{'floor req/s':>11} {'p99':>9} {'CPU/req':>9} || ratio (goal >= 0.50, p99 <= 50 ms)"
        " | CPU ratio"
    )
    for database, figures in runs.items():
        for name, (ours, theirs) in figures.items():
            print(
                f"{database:<10} {name:<8} | {ours.requests_per_second:>13,.0f} "
                f"{ours.p99_ms:>7.1f}ms {ours.cpu_ms:>7.3f}ms | "
                f"{theirs.requests_per_second:>11,.0f} {theirs.p99_ms:>7.1f}ms "
                f"{theirs.cpu_ms:>7.3f}ms || "
                f"{ours.requests_per_second / theirs.requests_per_second:.3f} | "
                f"{theirs.cpu_ms / ours.cpu_ms:.3f}"
            )
    print("(the goal is the hot reads'; `ordinary` is measured to show every other route's cost)")


if __name__ == "__main__":
    main()
