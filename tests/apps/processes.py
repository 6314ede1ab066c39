"""Capstan as separate processes, run as an operator runs them: `capstan sandbox`, `capstan
server`, `capstan worker` subprocesses with their own environments, driven over real HTTP.

Every process's output is drained by a thread (so a full pipe never stalls it) and kept for the
failure message; every wait has a deadline; `stop()`/`kill()` always reap the process.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan.dev.operator import operator_account_id
from tests.conftest import POSTGRES_URL, _drop_schema
from tests.git_host.flow import approve, callback
from tests.harness import free_socket, http_client
from tests.sandbox_git_host.helpers import query_of

CAPSTAN = [sys.executable, "-m", "capstan"]
REGION = "us-east-1"


def free_port() -> int:
    sock = free_socket()
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def capstan_env(**settings: str) -> dict[str, str]:
    """This environment without any CAPSTAN_* variable, plus `settings`; image builds pull base
    images signed in to Docker Hub, as production should (anonymous pulls are limited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSTAN_")}
    env["CAPSTAN_DOCKERHUB_USERNAME"] = "capstan-tests"
    env["CAPSTAN_DOCKERHUB_TOKEN"] = "dckr_pat_capstan_tests"
    env.update(settings)
    return env


class Process:
    """One `capstan ...` subprocess; its combined output lines collect in `lines`."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.lines: list[str] = []
        self._popen = subprocess.Popen(
            [*CAPSTAN, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=cwd,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._popen.pid

    def alive(self) -> bool:
        return self._popen.poll() is None

    def _read(self) -> None:
        assert self._popen.stdout is not None
        for line in self._popen.stdout:
            self.lines.append(line.rstrip())

    def output(self, last: int = 60) -> str:
        return f"--- {self.name} (pid {self.pid}) ---\n" + "\n".join(self.lines[-last:])

    def wait_for_line(self, pattern: str, *, timeout: float = 60) -> re.Match[str]:
        """The first output line matching `pattern` (a regex), waiting for it."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            lines = list(self.lines)
            for line in lines[seen:]:
                found = compiled.search(line)
                if found:
                    return found
            seen = len(lines)
            if not self.alive() and seen == len(self.lines):
                raise AssertionError(f"{self.name} exited before {pattern!r}\n{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {pattern!r} in {timeout}s\n{self.output()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """kill -9, and reap it."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 20 s), and reap it."""
        if self.alive():
            self._popen.terminate()
            try:
                self._popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._popen.kill()
        self._reap()

    def _reap(self) -> None:
        self._popen.wait(timeout=30)
        self._reader.join(timeout=10)
        assert self._popen.stdout is not None
        self._popen.stdout.close()


class Processes:
    """The subprocesses of one test, all stopped at the end (`with processes() as procs`)."""

    def __init__(self, stack: ExitStack, root: Path) -> None:
        self._stack = stack
        self.root = root
        self.all: list[Process] = []

    def start(
        self, name: str, args: list[str], env: dict[str, str], *, ready: str, timeout: float = 60
    ) -> Process:
        process = Process(name, args, env, self.root)
        self.all.append(process)
        self._stack.callback(process.stop)
        process.wait_for_line(ready, timeout=timeout)
        return process

    def sandbox(
        self, *, build_seconds: float, task_start_seconds: float, quotas: str = ""
    ) -> tuple[Process, str]:
        """`capstan sandbox` on a free port: the process and the cloud's URL (`quotas`: AWS
        quotas other than a new account's, as `CAPSTAN_SANDBOX_QUOTAS` takes them)."""
        port = free_port()
        process = self.start(
            "sandbox",
            [
                "sandbox",
                "--port",
                str(port),
                "--build-seconds",
                str(build_seconds),
                "--task-start-seconds",
                str(task_start_seconds),
                # As the tests' own sandbox: short, but every new role is used under it.
                "--iam-propagation-seconds",
                "0.5",
            ],
            capstan_env(**({"CAPSTAN_SANDBOX_QUOTAS": quotas} if quotas else {})),
            ready=r"sandbox cloud at http://",
        )
        return process, f"http://127.0.0.1:{port}"

    def server(self, name: str, args: list[str], env: dict[str, str]) -> Process:
        # uvicorn says "Application startup complete" before it binds its port; this line after.
        return self.start(name, ["server", *args], env, ready="Uvicorn running on")

    def dev_server_on_sandbox(self, quotas: str = "", **env: str) -> DevServer:
        """A zero-delay sandbox (with `quotas`) and `capstan server --dev` on it (its data under
        `root`), as the benchmarks run them; `env`: more of the server's settings."""
        sandbox, sandbox_url = self.sandbox(build_seconds=0, task_start_seconds=0, quotas=quotas)
        port = free_port()
        data_dir = self.root / "data"
        server = self.server(
            "server",
            ["--dev", "--data-dir", str(data_dir), "--port", str(port)],
            capstan_env(CAPSTAN_SANDBOX_CLOUD_URL=sandbox_url, **env),
        )
        token = server.wait_for_line(r"Dev API token \(shown once\): (capstan_\w+)").group(1)
        return DevServer(sandbox, sandbox_url, server, f"http://127.0.0.1:{port}", token, data_dir)

    def worker(self, name: str, env: dict[str, str]) -> Process:
        # The worker loop starts right after this line (migrations have run before it).
        return self.start(name, ["worker"], env, ready="Capstan workers are running")

    def output(self) -> str:
        return "\n".join(process.output() for process in self.all)


@dataclass(frozen=True)
class DevServer:
    """`Processes.dev_server_on_sandbox`: the two processes, the server's URL and its dev API
    token (shown once, on its output), and its data directory."""

    sandbox: Process
    sandbox_url: str
    server: Process
    base_url: str
    token: str
    data_dir: Path


@contextmanager
def processes(root: Path) -> Iterator[Processes]:
    with ExitStack() as stack:
        yield Processes(stack, root)


# Over HTTP, as a user does it ------------------------------------------------------------------


def bearer_client(base_url: str, token: str) -> httpx.Client:
    return http_client(base_url=base_url, timeout=30, headers={"Authorization": f"Bearer {token}"})


def api_token_for(base_url: str, email: str, password: str) -> str:
    """Sign in as a browser does (session + CSRF) and make an API token."""
    with http_client(base_url=base_url, timeout=30) as browser:
        signed_in = browser.post("/api/session", json={"email": email, "password": password})
        assert signed_in.status_code == 201, signed_in.text
        csrf = browser.get("/api/csrf").json()["token"]
        made = browser.post(
            "/api/api_tokens", json={"name": "tests"}, headers={"X-CSRF-Token": csrf}
        )
        assert made.status_code == 201, made.text
        token: str = made.json()["token"]
        return token


def connect_cloud_account(api: httpx.Client) -> str:
    """GET the connection, launch the stack at setup_url, verify: the sandbox account id."""
    connection = api.get("/api/cloud_account").json()
    with http_client(timeout=60) as console:  # "the AWS console": no Capstan credentials
        launched = console.post(connection["setup_url"])
    assert launched.status_code == 200, launched.text
    verified = api.post(
        "/api/cloud_account/verification",
        json={
            "account_id": launched.json()["account_id"],
            "role_name": launched.json()["role_name"],
            "external_id": connection["external_id"],
        },
    )
    assert verified.status_code == 200, verified.text
    account_id: str = verified.json()["account_id"]
    return account_id


def install_git_host(api: httpx.Client) -> int:
    """The git host app's install flow (as tests/git_host/flow.py walks it): back at Capstan in
    the client that started it, which holds the cookie the flow is bound to."""
    setup = api.post("/api/git_host/installation_setup")
    assert setup.status_code == 200, setup.text
    response = callback(approve(setup.json()["redirect_url"]), browser=api)
    assert response.status_code == 303, response.text
    outcome = query_of(response.headers["location"])
    assert outcome.get("git_host") == "installed", outcome
    return int(outcome["installation_id"])


@contextmanager
def ready_dev_server(
    procs: Processes, quotas: str = "", **env: str
) -> Iterator[tuple[DevServer, httpx.Client]]:
    """`Processes.dev_server_on_sandbox` (`quotas` for the sandbox, `env`: more of the server's
    settings) and a client with its dev token, the cloud account connected and the git host app
    installed: where each benchmark starts."""
    dev = procs.dev_server_on_sandbox(quotas, **env)
    with bearer_client(dev.base_url, dev.token) as api:
        connect_cloud_account(api)
        install_git_host(api)
        yield dev, api


def create_project(api: httpx.Client, hostname_suffix: str) -> dict[str, Any]:
    created = api.post("/api/projects", json={"name": "Shop", "hostname_suffix": hostname_suffix})
    assert created.status_code == 201, created.text
    return dict(created.json())


def web_server_body(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "repo": "capstan-samples/hello-web",
        "branch": "main",
        "cpu": 256,
        "memory": 512,
    }


def worker_body(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "repo": "capstan-samples/hello-worker",
        "branch": "main",
        "start_command": "python worker.py",
        "cpu": 256,
        "memory": 512,
    }


def statuses(api: httpx.Client, paths: list[str]) -> dict[str, str]:
    return {path: api.get(path).json().get("status") for path in paths}


def wait_all_running(api: httpx.Client, paths: list[str], *, timeout: float) -> None:
    """Poll every resource until all are `running`; fail at once if one is `failed`."""
    deadline = time.monotonic() + timeout
    while True:
        now = statuses(api, paths)
        failed = [path for path, status in now.items() if status == "failed"]
        if failed:
            raise AssertionError(f"failed: {failed}: {api.get(failed[0] + '/deployments').text}")
        if all(status == "running" for status in now.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not all running after {timeout}s: {now}")
        time.sleep(0.25)


# The sandbox account, as its administrator sees it ----------------------------------------------


@contextmanager
def account_sessions(sandbox_url: str, account_id: str) -> Iterator[tuple[AwsSession, AwsSession]]:
    """Administrator sessions in the customer's sandbox account and in the operator's account
    (which holds the DNS zone of the service domain)."""
    endpoint = Endpoint(region=REGION, url=sandbox_url)
    with (
        organization_access(endpoint, account_id) as customer,
        organization_access(endpoint, operator_account_id(endpoint)) as operator,
    ):
        yield customer, operator


def postgres_schema_fixture(prefix: str, why: str) -> Any:
    """A fixture: a fresh PostgreSQL schema name for processes that share one database (dropped
    after the test); skipped, saying `why`, when PostgreSQL is not configured."""

    @pytest.fixture
    def database_schema() -> Iterator[str]:
        if not POSTGRES_URL:
            pytest.skip(f"{why}: set CAPSTAN_TEST_DATABASE_URL")
        schema = f"{prefix}_{os.getpid()}_{secrets.token_hex(3)}"
        yield schema
        _drop_schema(POSTGRES_URL, schema)

    return database_schema
