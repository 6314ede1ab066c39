"""The API's request path against FastAPI's floor: a mix of the routes people call, in one run.

For each database (SQLite always; PostgreSQL when `--postgres URL` or CAPSTAN_TEST_DATABASE_URL
is given) this starts a zero-delay `capstan sandbox` and `capstan server --dev` on it (its
in-process workers on, as a user runs it), connects the cloud account, installs the git host app
and makes, over HTTP: 50 projects, and in one of them a web server (running), its environment, a
preview, a cache and a database. Beside it runs a bare FastAPI app on the same uvicorn answering
the very same bodies from memory, with no database, authentication or middleware: the floor.

wrk (Debian's `wrk`, one thread: a core for the load, a core for the server) then drives, for
`--seconds` each, every route of the mix with a bearer token at 64 connections, against Capstan
and against the floor in turn: the routes the dashboard and the CLI call that Capstan answers from
its own database (the mix). It prints each route's requests/s, p99 and server CPU per request, its
ratio to the floor, and the mix's ratio (the geometric mean). Beside them, at 16 connections and
with no floor (their cost is the cloud's): the reads that ask the cloud (a web server's logs,
metrics and cost); and at 64 connections, PATCHes of the projects' names (a write a request).

The goal (issue 49): every route of the mix >= 0.25x the floor and the mix >= 0.35x, p99 <= 100
ms; the cloud reads' p99 <= 1 s; PATCH p99 <= 250 ms, every answer a 200. On a busy machine the
ratios hold better than the p99s do (the floor and Capstan are measured alike, one after the
other).

Run from the repository root:  .venv/bin/python bench/api.py  [--seconds 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import math
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
from typing import Any, TypeVar

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.deploy import cpu_seconds  # noqa: E402
from tests.apps.processes import (  # noqa: E402 (the repository root is on the path now)
    CAPSTAN,
    capstan_env,
    create_project,
    free_port,
    processes,
    ready_dev_server,
    statuses,
    wait_all_running,
    web_server_body,
)
from tests.conftest import _drop_schema  # noqa: E402

T = TypeVar("T")

CONNECTIONS = 64
CLOUD_CONNECTIONS = 16
# One wrk thread: on this 2-core machine that is a core for the load and a core for the server
# (uvicorn serves on one); with two, wrk and the server fight for the cores.
THREADS = 1
PROJECTS = 50
GOAL_ROUTE, GOAL_MIX, GOAL_P99_MS = 0.25, 0.35, 100.0
GOAL_CLOUD_P99_MS, GOAL_WRITE_P99_MS = 1000.0, 250.0
PATCH_SCRIPT = ROOT / "bench" / "patch.lua"

# The floor: each path of the mix answered with its body from memory, one process, no middleware.
FLOOR_APP = """
import json, sys
from fastapi import FastAPI
from fastapi.responses import Response
import uvicorn

bodies = json.load(open(sys.argv[1]))
app = FastAPI()

def answer(body):
    async def route() -> Response:
        return Response(body, media_type="application/json")
    return route

for path, body in bodies.items():
    app.get(path)(answer(body))

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


@dataclass(frozen=True)
class Load:
    requests_per_second: float
    p99_ms: float
    errors: int
    cpu_ms: float  # the server process's CPU time (all threads) per request answered


def wrk(
    url: str,
    token: str,
    seconds: int,
    pid: int,
    *,
    connections: int = CONNECTIONS,
    script: Path | None = None,
    **variables: str,
) -> Load:
    """wrk's throughput and 99th percentile latency for `url` (non-2xx answers count as errors),
    and the CPU the server `pid` spent on each request. With `script`, wrk's Lua script makes
    the requests (`variables` in its environment)."""
    cpu_before = cpu_seconds(pid)
    finished = subprocess.run(
        [
            "wrk",
            f"-t{THREADS}",
            f"-c{connections}",
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
    """`capstan server --dev` (its sandbox in process) on `port`, its output (the access log: a
    line per request) going to a file: read by a thread of this process, as the tests' helper
    does, it would take CPU from the server on the same cores. Yields the dev API token and the
    server's pid."""
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


@dataclass(frozen=True)
class Run:
    mix: dict[str, tuple[Load, Load]]  # route: (Capstan, floor)
    cloud: dict[str, Load]
    patch: Load


def _made(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def _set_up(api: httpx.Client) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The resources the mix reads: (the mix's paths, the cloud reads' paths, project ids)."""
    ids = [create_project(api, f"p{index}")["id"] for index in range(PROJECTS)]
    root = f"/api/projects/{ids[0]}"
    made = _made(api.post(f"{root}/web_servers", json=web_server_body("web")))
    web = f"{root}/web_servers/{made['id']}"
    wait_all_running(api, [web], timeout=120)
    variables = [{"name": f"VAR_{index}", "value": f"value {index}"} for index in range(5)]
    put = api.put(f"{web}/environment", json={"environment": variables})
    assert put.status_code == 202, put.text
    preview = _made(api.post(f"{web}/previews", json={"branch": "main"}))["id"]
    cache = _made(api.post(f"{root}/cache", json={"storage_limit_mb": 256}))["id"]
    database = _made(api.post(f"{root}/databases", json={"name": "main"}))["id"]
    # Measured once settled: the workers reconciling them would add their CPU to the requests'.
    _wait_settled(
        api, [f"{web}/previews/{preview}", f"{root}/cache/{cache}", f"{root}/databases/{database}"]
    )
    mix = {
        "projects (50)": "/api/projects",
        "project": root,
        "web servers": f"{root}/web_servers",
        "web server": web,
        "deployments": f"{web}/deployments",
        "environment": f"{web}/environment",
        "previews": f"{web}/previews",
        "caches": f"{root}/cache",
        "databases": f"{root}/databases",
        "api tokens": "/api/api_tokens",
        "current user": "/api/session",
    }
    cloud = {name: f"{web}/{name}" for name in ("logs", "metrics", "cost")}
    return mix, cloud, ids


def _wait_settled(api: httpx.Client, paths: list[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while (now := statuses(api, paths)) and set(now.values()) - {"running", "available"}:
        if time.monotonic() > deadline or "failed" in now.values():
            raise SystemExit(f"the resources of the mix did not settle: {now}")
        time.sleep(0.25)


def measure(database: str, env: dict[str, str], seconds: int) -> Run:
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-api-") as tmp,
        processes(Path(tmp)) as procs,
        ready_dev_server(procs, **env) as (dev, api),
    ):
        mix, cloud, ids = _set_up(api)
        bodies = {}
        for name, path in mix.items():
            answer = api.get(path)
            assert answer.status_code == 200, (name, answer.text)
            bodies[path] = answer.text
        assert len(json.loads(bodies["/api/projects"])) == PROJECTS
        bodies_file = Path(tmp) / "bodies.json"
        bodies_file.write_text(json.dumps(bodies))
        ids_file = Path(tmp) / "ids"
        ids_file.write_text("\n".join(ids))
        floor_port = free_port()
        floor = subprocess.Popen(
            [sys.executable, "-c", FLOOR_APP, str(bodies_file), str(floor_port)],
            stdout=subprocess.DEVNULL,
        )
        try:
            floor_base = f"http://127.0.0.1:{floor_port}"
            _wait_until_up(floor_base + "/api/projects")
            pid, base, token = dev.server.pid, dev.base_url, dev.token
            figures = {}
            for name, path in mix.items():
                ours = wrk(base + path, token, seconds, pid)
                theirs = wrk(floor_base + path, token, seconds, floor.pid)
                print(f"  {database} {name}: capstan {_show(ours)} | floor {_show(theirs)}")
                figures[name] = (ours, theirs)
            cloud_figures = {}
            for name, path in cloud.items():
                load = wrk(base + path, token, seconds, pid, connections=CLOUD_CONNECTIONS)
                print(f"  {database} {name} (the cloud's): {_show(load)}")
                cloud_figures[name] = load
            patch = wrk(base, token, seconds, pid, script=PATCH_SCRIPT, IDS_FILE=str(ids_file))
            print(f"  {database} PATCH project: {_show(patch)}")
            return Run(figures, cloud_figures, patch)
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
    parser.add_argument("--seconds", type=int, default=3, help="wrk's duration per measurement")
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


def _answered(load: Load) -> bool:
    # wrk reports no latency at all when every request timed out: that is no answer, not a p99 of 0.
    return bool(load.requests_per_second > 0)


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def report(database: str, run: Run) -> None:
    print(
        f"\n{database}: {'route':<14} | {'req/s':>7} {'p99':>9} {'CPU/req':>9} | "
        f"{'floor req/s':>11} {'p99':>9} || {'ratio':>5} {'CPU ratio':>9}"
    )
    ratios = []
    for name, (ours, theirs) in run.mix.items():
        ratio = ours.requests_per_second / theirs.requests_per_second
        ratios.append(ratio)
        ok = ratio >= GOAL_ROUTE and ours.p99_ms <= GOAL_P99_MS and not ours.errors
        print(
            f"{'':<{len(database) + 2}}{name:<14} | {ours.requests_per_second:>7,.0f} "
            f"{ours.p99_ms:>7.1f}ms {ours.cpu_ms:>7.3f}ms | {theirs.requests_per_second:>11,.0f} "
            f"{theirs.p99_ms:>7.1f}ms || {ratio:>5.3f} {theirs.cpu_ms / ours.cpu_ms:>9.3f} "
            f"{_verdict(ok)}{f' ({ours.errors} errors)' if ours.errors else ''}"
        )
    mix = math.exp(sum(math.log(ratio) for ratio in ratios) / len(ratios))
    indent = " " * (len(database) + 2)
    print(f"{indent}{'the mix':<14} | geometric mean {mix:.3f} {_verdict(mix >= GOAL_MIX)}")
    for name, load in run.cloud.items():
        print(
            f"{'':<{len(database) + 2}}{name + ' (cloud)':<14} | {load.requests_per_second:>7,.0f} "
            f"{load.p99_ms:>7.1f}ms at {CLOUD_CONNECTIONS} connections "
            f"{_verdict(_answered(load) and load.p99_ms <= GOAL_CLOUD_P99_MS and not load.errors)}"
        )
    patch = run.patch
    print(
        f"{'':<{len(database) + 2}}{'PATCH project':<14} | {patch.requests_per_second:>7,.0f} "
        f"{patch.p99_ms:>7.1f}ms, {patch.errors} not 2xx "
        f"{_verdict(_answered(patch) and patch.p99_ms <= GOAL_WRITE_P99_MS and not patch.errors)}"
    )


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
    print(
        f"\nGoals: each route >= {GOAL_ROUTE}x the floor, the mix >= {GOAL_MIX}x, p99 <= "
        f"{GOAL_P99_MS:.0f} ms; cloud reads p99 <= {GOAL_CLOUD_P99_MS:.0f} ms; PATCH p99 <= "
        f"{GOAL_WRITE_P99_MS:.0f} ms, every answer 200."
    )
    for database, run in runs.items():
        report(database, run)


if __name__ == "__main__":
    main()
