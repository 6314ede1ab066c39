"""`make fuzz`: schemathesis, every check, against a live `capstan server --dev`.

The script starts the dev server on a free port in a fresh data directory — on PostgreSQL, in a
schema of its own, when CAPSTAN_TEST_DATABASE_URL names one (CI sets it), else on SQLite — signs
in as the dev user it creates, connects the sandbox cloud account and installs the sandbox git
host app through the API, creates a project, a web server, a preview of it, a cache and a
bucket, and hands their ids to schemathesis as path parameter values, so the fuzzer reaches past
the 404s.

First a sweep of control characters (`control_sweep`): every operation is sent once for each
string it takes — each path and query parameter (the ids included), each string value and key of
a generated body — with NUL, and with an escape and a C1 control, in that one string. None may
answer 5xx (a NUL reaching PostgreSQL was one), nor 2xx (it would have been stored). Then
schemathesis runs for at most FUZZ_SECONDS (default 300), its strings allowed to hold NUL and
every other character, and fails on any 5xx or schema violation; the case count is printed at
the end. FUZZ_SEED makes the cases reproducible (CI sets one; a developer's `make fuzz` explores
a new seed each run, and schemathesis prints it). Any 5xx in the server's access log fails the
run too.
"""

from __future__ import annotations

import copy
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import hypothesis
import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WEB_REPO = "capstan-samples/hello-web"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    data_dir: Path, port: int, log: Path, database: tuple[str, str] | None
) -> tuple[subprocess.Popen[bytes], str]:
    """The dev server and the API token it prints on its first start; on `database` (a
    PostgreSQL URL and a schema of the run's own) when given."""
    env = {**os.environ, "CAPSTAN_DATA_DIR": str(data_dir)}
    for name in list(env):
        if name.startswith("CAPSTAN_") and name != "CAPSTAN_DATA_DIR":
            del env[name]  # a developer's own settings must not leak into the run
    if database is not None:
        env["CAPSTAN_DATABASE_URL"], env["CAPSTAN_DATABASE_SCHEMA"] = database
    process = subprocess.Popen(  # noqa: S603 (our own executables)
        [str(BIN / "capstan"), "server", "--dev", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"capstan server --dev exited; see {log}:\n{log.read_text()[-3000:]}")
        token = re.search(r"Dev API token \(shown once\): (\S+)", log.read_text())
        if token:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/docs/api", timeout=5).status_code == 200:
                    return process, token.group(1)
            except httpx.HTTPError:
                pass
        time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"capstan server --dev did not come up in 120 s; see {log}")


def expect(response: httpx.Response, *statuses: int) -> Any:
    if response.status_code not in statuses:
        raise SystemExit(
            f"setup: {response.request.method} {response.request.url} answered "
            f"{response.status_code}: {response.text[:500]}"
        )
    return response.json() if response.content else None


def set_up(base_url: str, token: str) -> dict[str, str]:
    """Real resources, made through the API as a user would; their ids by path parameter."""
    api = httpx.Client(base_url=base_url, timeout=60, headers={"Authorization": f"Bearer {token}"})
    connection = expect(api.get("/api/cloud_account"), 200)
    launched = expect(httpx.post(connection["setup_url"], timeout=60), 200)
    expect(
        api.post(
            "/api/cloud_account/verification",
            json={
                "account_id": launched["account_id"],
                "role_name": launched["role_name"],
                "external_id": connection["external_id"],
            },
        ),
        200,
    )
    redirect = expect(api.post("/api/git_host/installation_setup"), 200)["redirect_url"]
    approved = httpx.get(redirect, timeout=60)
    if approved.status_code != 302:
        raise SystemExit(f"setup: the git host install page answered {approved.status_code}")
    # Back in the client that started the flow: it holds the cookie the flow is bound to.
    installed = api.get(approved.headers["location"])
    if installed.status_code != 303:
        raise SystemExit(f"setup: the install callback answered {installed.status_code}")
    project = expect(
        api.post("/api/projects", json={"name": "Fuzz", "hostname_suffix": "fuzz"}), 201
    )
    base = f"/api/projects/{project['id']}"
    server = expect(
        api.post(
            f"{base}/web_servers",
            json={"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512},
        ),
        201,
    )
    preview = expect(
        api.post(f"{base}/web_servers/{server['id']}/previews", json={"branch": "main"}), 201, 202
    )
    cache = expect(api.post(f"{base}/cache", json={"storage_limit_mb": 1024}), 201, 202)
    bucket = expect(api.post(f"{base}/storage", json={"name": "fuzz"}), 201, 202)
    return {
        "project_id": project["id"],
        "service_id": server["id"],
        "preview_id": preview["id"],
        "cache_id": cache["id"],
        "bucket_id": bucket["id"],
    }


# Statuses a schema-valid request may get (schemathesis' positive_data_acceptance check): besides
# the 2xx, the rules JSON Schema cannot state — a memory that does not pair with the cpu,
# duplicate environment names (400), a name taken (409), a cloud account that fails verification
# (422), the sign-in limits (429), a bearer caller asking for a browser session's CSRF token —
# the 401/403/404 of a caller or an id that does not fit, and the 412 of an `If-Match` that is a
# well-formed entity tag but not the environment's current one (a generated tag cannot be). Any
# 5xx still fails the run.
ACCEPTED_FOR_VALID_DATA = ["2xx", "400", "401", "403", "404", "409", "412", "422", "429"]


# Kinds whose DELETE answers `{id, status: deleting}` (the spec's contract for caches and buckets,
# and databases in their style): the row stays readable as `deleting` until the cloud resource is
# gone, and only then answers 404. Schemathesis' use_after_free check (ST301) wants a 404 at once,
# which would contradict the spec, so it is off for requests under these kinds' items only; it
# stays on for everything deleted at once (projects, services, previews, tokens, installations).
DELETED_IN_THE_BACKGROUND = r"^/api/projects/\{project_id\}/(cache|storage|databases)/"

# Every check runs (schemathesis' default). The command line must not name checks: `--checks all`
# is an explicit setting that wins over the file's per-operation `enabled = false` (a CI run failed
# on ST301 that way), so the file sets what `--checks all` would add, and `check_config` proves
# the override holds as the command line will see it before the run starts.
MAX_RESPONSE_SECONDS = 10.0


def check_config(path: Path, openapi_url: str) -> None:
    """Fail unless use_after_free is off for exactly DELETED_IN_THE_BACKGROUND's operations."""
    config = SchemathesisConfig.from_path(str(path))
    # As `st run` applies its options when none names a check.
    config.projects.override.checks.update(included_check_names=None)
    project = config.projects.get_default()
    schema = schemathesis.openapi.from_url(openapi_url, config=config)
    operations = [result.ok() for result in schema.get_all_operations()]
    wanted = {op.label for op in operations if re.match(DELETED_IN_THE_BACKGROUND, op.path)}
    off = set()
    for op in operations:
        checks = project.checks_config_for(operation=op, phase="stateful")
        if not checks.use_after_free.enabled:
            off.add(op.label)
        if not checks.max_response_time.enabled or not checks.not_a_server_error.enabled:
            raise SystemExit(f"fuzz: the configuration turns a check off for {op.label}")
    if not wanted or off != wanted:
        raise SystemExit(f"fuzz: use_after_free is off for {sorted(off)}, wanted {sorted(wanted)}")
    print(
        f"fuzz: every check on; use_after_free off for {len(off)} of {len(operations)} operations",
        flush=True,
    )


def write_config(path: Path, ids: dict[str, str]) -> None:
    lines = ["[parameters]"]
    lines += [f'"path.{name}" = {json.dumps(value)}' for name, value in ids.items()]
    lines += [
        "",
        "[generation]",
        # Strings may hold NUL and any other character (schemathesis' default, stated).
        "allow-x00 = true",
        'codec = "utf-8"',
        "",
        "[checks]",
        # What `--checks all` adds to the defaults (every check on): a response-time limit.
        f"max_response_time = {MAX_RESPONSE_SECONDS}",
        "",
        "[checks.positive_data_acceptance]",
        f"expected-statuses = {json.dumps(ACCEPTED_FOR_VALID_DATA)}",
        "",
        "[[operations]]",
        f"include-path-regex = {json.dumps(DELETED_IN_THE_BACKGROUND)}",
        "checks.use_after_free.enabled = false",
    ]
    path.write_text("\n".join(lines) + "\n")


# What the sweep puts in a string: NUL (PostgreSQL's text cannot hold it; never stored), and an
# escape and a C1 control beside text (refused in names and ids, kept in free text).
NUL = "n\x00l"
CONTROL_VALUES = (NUL, "e\x1b[0m\x85")


def first_example(strategy: Any) -> Any:
    """The first case hypothesis draws from `strategy`, the same on every run."""
    found: list[Any] = []

    @hypothesis.settings(
        max_examples=1,
        database=None,
        derandomize=True,
        phases=[hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(strategy)
    def take(case: Any) -> None:
        found.append(case)

    take()
    return found[0]


def _strings(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], bool]]:
    """Where `value` (a JSON document) holds a string: (its path, whether it is a key)."""
    if isinstance(value, str):
        yield at, False
    elif isinstance(value, dict):
        for key, item in value.items():
            yield (*at, key), True
            yield from _strings(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*at, index))


def _with(value: Any, at: tuple[Any, ...], is_key: bool, text: str) -> Any:
    """`value` with the string (or key) at `at` holding `text`."""
    changed = copy.deepcopy(value)
    if not at:
        return text
    parent = changed
    for part in at[:-1]:
        parent = parent[part]
    if is_key:
        parent[text] = parent.pop(at[-1])
    else:
        parent[at[-1]] = text
    return changed


def control_sweep(openapi_url: str, base_url: str, token: str, ids: dict[str, str]) -> int:
    """Send every operation once per string it takes with control characters in that string
    (the rest as schemathesis generates it, path ids the real ones); print each answer that is
    a 5xx, or a 2xx to a NUL (free text may keep other control characters), and answer how many
    there were."""
    schema = schemathesis.openapi.from_url(openapi_url)
    api = httpx.Client(base_url=base_url, timeout=60, headers={"Authorization": f"Bearer {token}"})
    sent = wrong = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        case = first_example(operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
        path = {name: ids.get(name, str(v)) for name, v in (case.path_parameters or {}).items()}
        query = {name: str(v) for name, v in (case.query or {}).items()}
        body = case.body if isinstance(case.body, dict | list) else None
        variants: list[tuple[str, str, dict[str, str], dict[str, str], Any]] = []
        for text in CONTROL_VALUES:
            for name in path:
                variants.append(
                    (text, f"path.{name}", {**path, name: path[name] + text}, query, body)
                )
            for name in query:
                variants.append((text, f"query.{name}", path, {**query, name: text}, body))
            variants.append((text, "query.(any)", path, {**query, "x": text}, body))
            for at, is_key in _strings(body):
                where = "body." + ".".join(map(str, at)) + (" (key)" if is_key else "")
                variants.append((text, where, path, query, _with(body, at, is_key, text)))
        for text, where, path_values, query_values, json_body in variants:
            url = operation.path
            for name, value in path_values.items():
                url = url.replace("{" + name + "}", quote(value, safe=""))
            response = api.request(
                operation.method.upper(),
                url,
                params=query_values,
                json=json_body,
            )
            sent += 1
            accepted = 200 <= response.status_code < 300
            if response.status_code >= 500 or (accepted and text == NUL):
                wrong += 1
                print(
                    f"control characters: {operation.method.upper()} {operation.path} "
                    f"[{where}] answered {response.status_code}: {response.text[:200]}",
                    flush=True,
                )
    print(f"control characters: {sent} requests, {wrong} answered 5xx or took a NUL", flush=True)
    return wrong


def postgresql() -> tuple[str, str] | None:
    """The run's database: a schema of its own on CAPSTAN_TEST_DATABASE_URL, if set."""
    url = os.environ.get("CAPSTAN_TEST_DATABASE_URL")
    return (url, f"capstan_fuzz_{os.getpid()}_{secrets.token_hex(3)}") if url else None


def drop_schema(database: tuple[str, str]) -> None:
    import asyncio

    from sqlalchemy import text

    from capstan.config import async_database_url
    from capstan.db import make_engine

    async def drop() -> None:
        engine = make_engine(async_database_url(database[0]))
        async with engine.begin() as connection:
            await connection.execute(text(f'DROP SCHEMA IF EXISTS "{database[1]}" CASCADE'))
        await engine.dispose()

    asyncio.run(drop())


# A line of the server's access log that answered 5xx (`capstan.access`: `"GET /x HTTP/1.1" 500`).
_SERVER_ERROR = re.compile(r'HTTP/[0-9.]+" 5[0-9][0-9] ')


def main() -> int:
    seconds = int(os.environ.get("FUZZ_SECONDS", "300"))
    work = Path(tempfile.mkdtemp(prefix="capstan-fuzz-"))
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = work / "server.log"
    database = postgresql()
    print(f"fuzz: on {'PostgreSQL schema ' + database[1] if database else 'SQLite'}", flush=True)
    process, token = start_server(work / "data", port, log, database)
    try:
        ids = set_up(base_url, token)
        swept = control_sweep(f"{base_url}/docs/api", base_url, token, ids)
        print(f"fuzzing {base_url} for at most {seconds} s with {ids}", flush=True)
        config = work / "schemathesis.toml"
        write_config(config, ids)
        check_config(config, f"{base_url}/docs/api")
        report = work / "report"
        run = subprocess.run(  # noqa: S603
            [
                str(BIN / "schemathesis"),
                "--config-file",
                str(config),
                "run",
                f"{base_url}/docs/api",
                "--max-time",
                str(seconds),
                "--header",
                f"Authorization: Bearer {token}",
                "--workers",
                os.environ.get("FUZZ_WORKERS", "2"),
                "--report",
                "junit",
                "--report-dir",
                str(report),
                "--no-color",
                *(["--seed", os.environ["FUZZ_SEED"]] if os.environ.get("FUZZ_SEED") else []),
            ],
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        print(run.stdout)
        cases = re.search(r"Test cases:\s*\n\s*(.+)", run.stdout)
        print(f"fuzz: schemathesis exit {run.returncode}; cases: {cases[1] if cases else '?'}")
        errors = [line for line in log.read_text().splitlines() if _SERVER_ERROR.search(line)]
        if errors:
            print(f"fuzz: the server answered {len(errors)} 5xx; its log: {log}")
            for line in errors[:20]:
                print(f"  {line}")
        return run.returncode or (1 if errors or swept else 0)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        if database is not None:
            drop_schema(database)
        if os.environ.get("FUZZ_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
